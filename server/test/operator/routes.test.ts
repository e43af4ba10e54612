// The route writer against a stand-in of the API server's Ingress endpoints (pure logic: what it
// sends, and what it does with the answers). Its writes meet the real API server in
// test/integration/operator-resilience.test.ts.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../src/kube/informer.js';
import { Routes, type RoutesDeps } from '../../src/operator/routes/routes.js';
import { observedInformer } from '../model/observed-informer.js';

const HOST = 'ide.example.org';

function ingress(paths: string[], resourceVersion: number): k8s.V1Ingress {
  return {
    metadata: { name: 'sessions', namespace: 'ns', resourceVersion: String(resourceVersion) },
    spec: {
      rules: [
        {
          host: HOST,
          http: {
            paths: paths.map((path) => ({
              path,
              pathType: 'Prefix',
              backend: { service: { name: path.slice(1, -1) } },
            })),
          },
        },
      ],
    },
  };
}

const pathsOf = (i: k8s.V1Ingress) => i.spec!.rules!.flatMap((r) => r.http!.paths.map((p) => p.path));

/** The API server's Ingress and the calls made to it; a write on another resourceVersion is refused (409). */
function apiServer(initial: string[] | undefined, version = 1) {
  let stored: k8s.V1Ingress | undefined = initial && ingress(initial, version);
  const calls: string[] = [];
  const replaced: k8s.V1Ingress[] = [];
  let hold: Promise<void> = Promise.resolve();
  const conflict = () => new k8s.ApiException(409, 'Conflict', { reason: 'Conflict' }, {});
  const notFound = () => new k8s.ApiException(404, 'NotFound', { reason: 'NotFound' }, {});
  const net = {
    async readNamespacedIngress() {
      calls.push('read');
      if (!stored) throw notFound();
      return structuredClone(stored);
    },
    async replaceNamespacedIngress({ body }: { body: k8s.V1Ingress }) {
      calls.push('replace');
      replaced.push(structuredClone(body));
      await hold;
      if (!stored) throw notFound();
      if (body.metadata?.resourceVersion !== stored.metadata?.resourceVersion) throw conflict();
      stored = ingress(pathsOf(body) as string[], ++version);
      return structuredClone(stored);
    },
    async createNamespacedIngress({ body }: { body: k8s.V1Ingress }) {
      calls.push('create');
      if (stored) throw conflict();
      stored = ingress(pathsOf(body) as string[], ++version);
      return structuredClone(stored);
    },
    async deleteNamespacedIngress({ body }: { body: { preconditions: { resourceVersion?: string } } }) {
      calls.push('delete');
      if (!stored) throw notFound();
      if (body.preconditions.resourceVersion !== stored.metadata?.resourceVersion) throw conflict();
      stored = undefined;
      return {};
    },
  };
  return {
    net: net as unknown as RoutesDeps['net'],
    calls,
    replaced,
    stored: () => stored,
    holdWrites(until: Promise<void>) {
      hold = until;
    },
  };
}

function cacheShowing(paths: string[] | undefined): Informer<k8s.V1Ingress> {
  return observedInformer(paths ? [ingress(paths, 1)] : []);
}

const removal = (path: string) => ({ host: HOST, path, serviceName: '' });
const route = (path: string) => ({ host: HOST, path, serviceName: path.slice(1, -1) });

describe('operator: the routes of a shared Ingress', () => {
  it('writes the changes asked for while a write is on its way together, in the next one, on the cached Ingress', async () => {
    const api = apiServer(['/a/', '/b/', '/c/', '/d/']);
    const ingresses = cacheShowing(['/a/', '/b/', '/c/', '/d/']);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses });
    let release!: () => void;
    api.holdWrites(new Promise<void>((resolve) => (release = resolve)));
    const first = routes.set('sessions', removal('/a/'), false);
    const later = [routes.set('sessions', removal('/b/'), false), routes.set('sessions', removal('/c/'), false)];
    release();
    await Promise.all([first, ...later]);
    assert.deepEqual(api.calls, ['replace', 'replace']);
    assert.deepEqual(
      api.replaced.map((body) => [body.metadata?.resourceVersion, pathsOf(body)]),
      [
        ['1', ['/b/', '/c/', '/d/']],
        ['2', ['/d/']],
      ],
      'each write on the version the answer before it put in the cache',
    );
    assert.ok(
      api.replaced.every((body) => JSON.stringify(body.metadata?.managedFields) === '[{}]'),
      'each write clears the field record',
    );
    assert.deepEqual(pathsOf(api.stored()!), ['/d/']);
    assert.deepEqual(pathsOf(ingresses.get('sessions')!), ['/d/'], 'the last answer is in the cache');
  });

  it('writes the batch again on the Ingress it reads when the cache is behind (409)', async () => {
    const api = apiServer(['/a/', '/b/', '/b/', '/c/'], 2);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses: cacheShowing(['/a/', '/b/', '/c/']) });
    await routes.set('sessions', removal('/b/'), false);
    assert.deepEqual(api.calls, ['replace', 'read', 'replace']);
    assert.deepEqual(pathsOf(api.stored()!), ['/a/', '/c/']);
  });

  it('reads an Ingress the cache does not show; creates it with the whole batch when there is none', async () => {
    const api = apiServer(undefined);
    const ingresses = cacheShowing(undefined);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses });
    await Promise.all([routes.set('sessions', route('/a/'), true), routes.set('sessions', route('/b/'), true)]);
    assert.deepEqual(api.calls, ['read', 'create', 'replace']);
    assert.deepEqual(pathsOf(api.stored()!), ['/a/', '/b/']);
    // A removal of a path the Ingress does not have, with none cached: read, nothing to write.
    const none = apiServer(undefined);
    await new Routes({ net: none.net, namespace: 'ns', ingresses: cacheShowing(undefined) }).set(
      'sessions',
      removal('/a/'),
      false,
    );
    assert.deepEqual(none.calls, ['read']);
  });

  it('deletes the Ingress, on its resourceVersion, when its last path goes', async () => {
    const api = apiServer(['/a/']);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses: cacheShowing(['/a/']) });
    await routes.set('sessions', removal('/a/'), false);
    assert.deepEqual(api.calls, ['delete']);
    assert.equal(api.stored(), undefined);
  });
});

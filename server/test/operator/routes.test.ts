// The route writer against a stand-in of the API server's Ingress endpoints (pure logic: what it
// sends, and what it does with the answers). The JSON patches themselves meet the real API server in
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

/** The API server's Ingress, the calls made to it, and a patch that applies the removals it tests. */
function apiServer(initial: string[]) {
  let version = 1;
  let stored = ingress(initial, version);
  const calls: string[] = [];
  const patches: object[][] = [];
  let hold: Promise<void> = Promise.resolve();
  const net = {
    async patchNamespacedIngress({ body }: { body: { op: string; path: string; value?: unknown }[] }) {
      calls.push('patch');
      patches.push(body);
      await hold;
      // Each tested path's first copy goes, as the API server would apply these operations.
      let paths = pathsOf(stored) as string[];
      for (const op of body.filter((o) => o.op === 'test' && o.path.endsWith('/path'))) {
        const at = paths.indexOf(op.value as string);
        paths = paths.filter((_, i) => i !== at);
      }
      stored = ingress(paths, ++version);
      return structuredClone(stored);
    },
    async readNamespacedIngress() {
      calls.push('read');
      return structuredClone(stored);
    },
    async replaceNamespacedIngress({ body }: { body: k8s.V1Ingress }) {
      calls.push('replace');
      stored = ingress(pathsOf(body) as string[], ++version);
      return structuredClone(stored);
    },
    async createNamespacedIngress(): Promise<never> {
      throw new Error('not expected');
    },
    async deleteNamespacedIngress(): Promise<never> {
      throw new Error('not expected');
    },
  };
  return {
    net: net as unknown as RoutesDeps['net'],
    calls,
    patches,
    stored: () => stored,
    holdPatches(until: Promise<void>) {
      hold = until;
    },
  };
}

function cacheShowing(paths: string[]): Informer<k8s.V1Ingress> {
  return observedInformer([ingress(paths, 1)]);
}

const removal = (path: string) => ({ host: HOST, path, serviceName: '' });

describe('operator: the routes of a shared Ingress', () => {
  it('removes paths asked for while a patch is on its way together, in the next patch', async () => {
    const api = apiServer(['/a/', '/b/', '/c/', '/d/']);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses: cacheShowing(['/a/', '/b/', '/c/', '/d/']) });
    let release!: () => void;
    api.holdPatches(new Promise<void>((resolve) => (release = resolve)));
    const first = routes.set('sessions', removal('/a/'), false);
    const later = [routes.set('sessions', removal('/b/'), false), routes.set('sessions', removal('/c/'), false)];
    release();
    await Promise.all([first, ...later]);
    assert.deepEqual(api.calls, ['patch', 'patch']);
    assert.deepEqual(
      api.patches[1]!.filter((o) => (o as { op: string }).op === 'remove'),
      [
        { op: 'remove', path: '/spec/rules/0/http/paths/1' },
        { op: 'remove', path: '/spec/rules/0/http/paths/0' },
      ],
    );
    assert.deepEqual(pathsOf(api.stored()), ['/d/']);
  });

  it('takes the long way when the answer still shows the path (a copy the cache did not show)', async () => {
    const api = apiServer(['/a/', '/b/', '/b/', '/c/']);
    const routes = new Routes({ net: api.net, namespace: 'ns', ingresses: cacheShowing(['/a/', '/b/', '/c/']) });
    await routes.set('sessions', removal('/b/'), false);
    assert.deepEqual(api.calls, ['patch', 'read', 'replace']);
    assert.deepEqual(pathsOf(api.stored()), ['/a/', '/c/']);
  });
});

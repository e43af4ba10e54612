// A starting session's URL waits for the ingress to serve its route (operator routeCheckUrl): the
// check against a real HTTP server standing in for the ingress, and the readiness step's answer to it.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import type { AppDefinition } from '../../src/model/app-definition.js';
import { findCondition } from '../../src/model/conditions.js';
import { SessionCondition, SessionReadyReason, type Session } from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { routePath } from '../../src/operator/manifests.js';
import { ingressServes } from '../../src/operator/routes/served.js';
import { Delay, RetryLater } from '../../src/operator/runtime/outcome.js';
import { Pass } from '../../src/operator/session/status.js';
import type { Guarded, SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { readiness } from '../../src/operator/session/steps/readiness.js';

const session = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'Session',
  metadata: { name: 's-1', namespace: 'ns', uid: 'uid-1', generation: 1, creationTimestamp: new Date().toISOString() },
  spec: { user: 'ada@example.org', appDefinition: 'js', sessionSecret: 's'.repeat(32) },
} as unknown as Session;
const ready: k8s.V1Deployment = {
  metadata: { generation: 1 },
  status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1 },
};

describe('the route served by the ingress before the URL is handed out', () => {
  let ingress: Server;
  let url: string;
  const served = new Set<string>();
  const hosts: string[] = [];

  before(async () => {
    // Like an ingress: its own 404 for a path it has no route for, the session's redirect otherwise.
    ingress = createServer((req, res) => {
      hosts.push(req.headers.host ?? '');
      if (req.url === '/gateway/') res.writeHead(502).end();
      else if (req.url === '/silent/')
        return; // never answers
      else if (served.has(req.url ?? '')) res.writeHead(302, { Location: '?folder=/home/ide/workspace' }).end();
      else res.writeHead(404).end('404 page not found');
    });
    await new Promise<void>((resolve) => ingress.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(ingress.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => ingress.close(() => resolve())));

  it('asks the ingress with the session host: its 404 and gateway errors are not served, the session’s answer is', async () => {
    served.add('/s-1/key/');
    assert.equal(await ingressServes(url, 'ide.example.org', '/s-1/key/', 1000), true);
    assert.equal(await ingressServes(url, 'ide.example.org', '/s-2/key/', 1000), false);
    assert.equal(await ingressServes(url, 'ide.example.org', '/gateway/', 1000), false);
    assert.equal(await ingressServes(url, 'ide.example.org', '/silent/', 200), false, 'no answer in time');
    assert.deepEqual(hosts.slice(-4), Array(4).fill('ide.example.org'));
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    assert.equal(await ingressServes(`http://127.0.0.1:${port}`, 'ide.example.org', '/s-1/key/', 1000), false);
  });

  it('the readiness step hands out the URL only once the route is served, asking again shortly', async () => {
    let answer = false;
    let asked = 0;
    const deps = {
      config: parseOperatorConfig({ namespace: 'ns', sessionHost: 'ide.example.org' }),
      routes: {
        served: async (host: string, path: string) => {
          asked++;
          return answer && host === 'ide.example.org' && path === routePath(session);
        },
      },
      pods: { list: () => [] },
    } as unknown as SessionStepDeps;
    const guarded = { appDefinition: { spec: { timeout: 30 } } as unknown as AppDefinition } as Guarded;
    const workload = { eager: true, backend: 'js-pool-1', deployment: ready };

    const waiting = new Pass(session);
    const started = Date.now();
    await assert.rejects(readiness({ deps, session, pass: waiting, ...guarded, workload }), (error: unknown) => {
      assert.ok(error instanceof RetryLater);
      assert.equal(error.afterMs, Delay.routeServed);
      return true;
    });
    // The pass asked for the whole grace, every few milliseconds, before it gave up.
    assert.ok(
      Date.now() - started >= Delay.routeGrace - Delay.routeCheckEvery,
      `gave up after ${Date.now() - started} ms`,
    );
    assert.ok(asked > 3, `asked ${asked} times`);
    assert.equal(waiting.status.url, undefined);
    const condition = findCondition(waiting.status.conditions, SessionCondition.ready);
    assert.equal(condition?.reason, SessionReadyReason.routeNotServed);

    // The next pass, its grace spent (the status says so), asks once and lets the worker go.
    const waited = { ...session, status: { conditions: waiting.status.conditions } } as Session;
    asked = 0;
    const again = Date.now();
    await assert.rejects(
      readiness({ deps, session: waited, pass: new Pass(waited), ...guarded, workload }),
      RetryLater,
    );
    assert.equal(asked, 1);
    assert.ok(Date.now() - again < Delay.routeGrace, 'no second grace');

    answer = true;
    const serving = new Pass(session);
    await readiness({ deps, session, pass: serving, ...guarded, workload });
    assert.equal(serving.status.url, `http://ide.example.org${routePath(session)}`);
    assert.equal(findCondition(serving.status.conditions, SessionCondition.ready)?.status, 'True');
  });

  it('a route the ingress takes up within the grace: the URL in the same pass, no "not served" status before it', async () => {
    const takenUpAt = Date.now() + 60;
    const deps = {
      config: parseOperatorConfig({ namespace: 'ns', sessionHost: 'ide.example.org' }),
      routes: { served: async () => Date.now() >= takenUpAt },
      pods: { list: () => [] },
    } as unknown as SessionStepDeps;
    const guarded = { appDefinition: { spec: { timeout: 30 } } as unknown as AppDefinition } as Guarded;
    const pass = new Pass(session);
    await readiness({
      deps,
      session,
      pass,
      ...guarded,
      workload: { eager: true, backend: 'js-pool-1', deployment: ready },
    });
    assert.equal(pass.status.url, `http://ide.example.org${routePath(session)}`);
    assert.equal(findCondition(pass.status.conditions, SessionCondition.ready)?.reason, SessionReadyReason.podReady);
  });
});

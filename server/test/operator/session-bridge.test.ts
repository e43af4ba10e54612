// Where the operator finds a session's data bridge: a warm instance's pods and token, or a lazy
// session's own pod and the token in its own Secret; and how a lazy pod is given that token.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import type { AppDefinition } from '../../src/model/app-definition.js';
import type { Session } from '../../src/model/session.js';
import { lazyEnv, SESSION_BRIDGE_TOKEN_KEY, sessionEnvSecret, sessionPodApp } from '../../src/operator/manifests.js';
import { bridgeLocation, podRequest, SessionBridge } from '../../src/operator/session/session-bridge.js';
import { podsCache } from './cache-fakes.js';

const TOKEN = 'bridge-token-0123456789abcdefghijklmnopq';

function appDefinition(options: Record<string, string>): AppDefinition {
  return {
    apiVersion: 'ide-cloud.io/v1',
    kind: 'AppDefinition',
    metadata: { name: 'java' },
    spec: { name: 'java', image: 'java:1', port: 3000, ingressname: 'sessions', options },
  } as unknown as AppDefinition;
}

function session(status: Session['status']): Session {
  return {
    apiVersion: 'ide-cloud.io/v1',
    kind: 'Session',
    metadata: { name: 'lou-1', namespace: 'ns', uid: '5f0c4d9e-0000-4000-8000-000000000001' },
    spec: { user: 'lou@example.com', appDefinition: 'java', envVars: { GIT_USER: 'Lou' } },
    status,
  } as unknown as Session;
}

describe('operator: the bridge of a session', () => {
  const bridged = appDefinition({ dataBridgeEnabled: 'true', dataBridgePort: '16400' });
  const plain = appDefinition({});
  const bridges = new SessionBridge(
    {} as never,
    podsCache(() => []),
    'ns',
    { requestMs: 1000, saveMs: 1000 },
  );

  it('eager and lazy sessions of a data-bridge app definition have one; none without the bridge or a start', () => {
    assert.equal(bridges.hasBridge(session({ startStrategy: 'eager', instanceId: '2' }), bridged), true);
    assert.equal(bridges.hasBridge(session({ startStrategy: 'lazy' }), bridged), true);
    assert.equal(bridges.hasBridge(session({ startStrategy: 'lazy-fallback' }), bridged), true);
    assert.equal(bridges.hasBridge(session({ startStrategy: 'lazy' }), plain), false);
    assert.equal(bridges.hasBridge(session({ startStrategy: 'eager' }), bridged), false, 'no instance yet');
    assert.equal(bridges.hasBridge(session({}), bridged), false);
  });

  it("a warm session's bridge is its instance's, a lazy one's on its own pod with its own Secret's token", () => {
    const warm = bridgeLocation(session({ startStrategy: 'eager', instanceId: '2' }), bridged);
    assert.equal(warm.podSelector, 'ide-cloud.io/pool-instance=java-pool-2');
    assert.deepEqual(warm.token, { name: 'java-pool-2-bridge', key: 'token' });
    const lazy = session({ startStrategy: 'lazy' });
    const own = bridgeLocation(lazy, bridged);
    assert.equal(own.podSelector, `app=${sessionPodApp(lazy)}`);
    assert.deepEqual(own.token, { name: 'lou-1-env', key: SESSION_BRIDGE_TOKEN_KEY });
  });

  it('a lazy pod of a data-bridge app definition runs the bridge with the token by reference only', () => {
    const lazy = session({ startStrategy: 'lazy' });
    const env = Object.fromEntries(lazyEnv(lazy, bridged).map((e) => [e.name, e]));
    assert.equal(env.DATA_BRIDGE_ENABLED?.value, 'true');
    assert.equal(env.DATA_BRIDGE_PORT?.value, '16400');
    assert.deepEqual(env.DATA_BRIDGE_TOKEN, {
      name: 'DATA_BRIDGE_TOKEN',
      valueFrom: { secretKeyRef: { name: 'lou-1-env', key: SESSION_BRIDGE_TOKEN_KEY } },
    });
    assert.equal(env.SESSION_ENV_STRATEGY, undefined, 'values come from the environment, nothing is injected');
    const secret = sessionEnvSecret(lazy, 'ns', TOKEN);
    assert.equal(Buffer.from(secret.data![SESSION_BRIDGE_TOKEN_KEY]!, 'base64').toString('utf8'), TOKEN);
    assert.ok(!JSON.stringify(lazyEnv(lazy, bridged)).includes(TOKEN));

    const without = lazyEnv(lazy, plain).map((e) => e.name);
    assert.ok(!without.some((name) => name.startsWith('DATA_BRIDGE_')), without.join(' '));
    assert.equal(sessionEnvSecret(lazy, 'ns').data![SESSION_BRIDGE_TOKEN_KEY], undefined);
  });

  it("a token is read once per session: a warm instance's next session reads its renewed token; a refused one is read again", async () => {
    const server = http.createServer((req, res) => {
      const ok = req.headers.authorization === `Bearer ${current}`;
      res.writeHead(ok ? 200 : 403, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { secondsSinceActivity: 1 } : { error: 'no' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    let current = 'token-a';
    let reads = 0;
    try {
      const app = appDefinition({
        dataBridgeEnabled: 'true',
        dataBridgePort: String((server.address() as AddressInfo).port),
      });
      const pod: k8s.V1Pod = {
        metadata: { name: 'java-pool-2-x', namespace: 'ns', labels: { 'ide-cloud.io/pool-instance': 'java-pool-2' } },
        status: { podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
      };
      const core = {
        readNamespacedSecret: () => {
          reads++;
          return Promise.resolve({ data: { token: Buffer.from(current).toString('base64') } });
        },
      };
      const cached = new SessionBridge(
        core as never,
        podsCache(() => [pod]),
        'ns',
        { requestMs: 5000, saveMs: 5000 },
      );
      const first = session({ startStrategy: 'eager', instanceId: '2' });
      const ask = async (s: Session) => cached.secondsSinceActivity((await cached.locate(s, app))!);
      assert.equal(await ask(first), 1);
      assert.equal(await ask(first), 1);
      assert.equal(reads, 1, 'read once for the session');

      // The instance back in the pool with a new token, claimed by the next session.
      current = 'token-b';
      const next = session({ startStrategy: 'eager', instanceId: '2' });
      next.metadata.uid = '5f0c4d9e-0000-4000-8000-000000000002';
      assert.equal(await ask(next), 1);
      assert.equal(reads, 2, "the next session's token is read");

      // A token the bridge refuses is dropped and read again on the next call.
      current = 'token-c';
      await assert.rejects(ask(next), { name: 'BridgeCallError', message: '/activity answered HTTP 403' });
      assert.equal(await ask(next), 1);
      assert.equal(reads, 3);

      cached.retain(new Set([next.metadata.uid!]));
      assert.equal(await ask(first), 1, 'a session gone from the list is forgotten, read again if it comes back');
      assert.equal(reads, 4);
    } finally {
      server.close();
    }
  });
});

describe("operator: one request to a pod's port (podRequest)", () => {
  let server: http.Server;
  let base: string;
  const connections = new Set<unknown>();
  before(async () => {
    server = http.createServer((req, res) => {
      connections.add(req.socket);
      if (req.url === '/hang') return;
      if (req.url === '/declared') res.writeHead(200, { 'content-length': '9000' }).end('x'.repeat(9000));
      else if (req.url === '/endless') res.writeHead(200).write('x'.repeat(9000));
      else req.resume().on('end', () => res.writeHead(201).end('{"ok":true}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const ask = (path: string, init: { method?: string; body?: string } = {}, ms = 2000) =>
    podRequest(`${base}${path}`, { ...init, signal: AbortSignal.timeout(ms) });

  it('answers the status and the text; the next call to the pod goes on the same connection', async () => {
    connections.clear();
    assert.deepEqual(await ask('/health'), { status: 201, ok: true, text: '{"ok":true}' });
    assert.deepEqual(await ask('/data', { method: 'POST', body: '{"environment":{}}' }), {
      status: 201,
      ok: true,
      text: '{"ok":true}',
    });
    assert.equal(connections.size, 1);
  });

  it('gives up an answer longer than the cap, declared or streamed', async () => {
    await assert.rejects(ask('/declared'), { name: 'BridgeCallError', message: 'answered more than 8192 bytes' });
    await assert.rejects(ask('/endless'), { name: 'BridgeCallError', message: 'answered more than 8192 bytes' });
  });

  it('fails at its deadline with the timeout as the cause, and with the error code of a refused connection', async () => {
    await assert.rejects(ask('/hang', {}, 200), (e: Error & { cause?: Error }) => e.cause?.name === 'TimeoutError');
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(podRequest(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) }), {
      code: 'ECONNREFUSED',
    });
  });
});

// A student owns what listens on the data bridge's port of their pod: they can stop the bridge and
// serve their own responder there. The operator reads every answer from a session's pod (the stop
// notice, the IDE's activity, the save, the injection's /health and /data) only up to a few KB, as
// it streams, and takes a longer one as a failed call; an endless answer neither fills its memory nor
// holds the sweep. Here a responder on the pod's address sends a body without end, and the real
// sweep (ActivityMonitor with the real SessionBridge) and the real injection call it.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { BRIDGE_ANSWER_MAX_BYTES } from '../../server/src/model/data-bridge.js';
import type { AppDefinition } from '../../server/src/model/app-definition.js';
import type { Session } from '../../server/src/model/session.js';
import { parseOperatorConfig } from '../../server/src/operator/config.js';
import { SESSION_BRIDGE_TOKEN_KEY, sessionPodApp } from '../../server/src/operator/manifests.js';
import { createLogger } from '../../server/src/operator/runtime/logger.js';
import { ActivityMonitor } from '../../server/src/operator/session/activity.js';
import { DataInjector } from '../../server/src/operator/session/injection.js';
import { SessionBridge } from '../../server/src/operator/session/session-bridge.js';
import { eventually } from '../support/kube.js';
import { podsCache } from '../../server/test/operator/cache-fakes.js';

/** What the responder would send at most: far more than any answer, far less than a test can wait for. */
const ENDLESS_BYTES = 512 * 1024 * 1024;
const TOKEN = 'instance-token-answer-cap-5c1e';

interface Sent {
  path: string;
  bytes: number;
  cutOff: boolean;
}

describe('security: an endless answer from a session pod', () => {
  let server: http.Server;
  let port: number;
  const sent: Sent[] = [];

  before(async () => {
    // Writes as fast as the reader takes it, for as long as it reads.
    server = http.createServer((req, res) => {
      const record: Sent = { path: req.url ?? '', bytes: 0, cutOff: false };
      sent.push(record);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (record.bytes < ENDLESS_BYTES) {
          record.bytes += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => (record.cutOff = !res.writableFinished));
      res.write('{"secondsSinceActivity":');
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  const app = (): AppDefinition =>
    ({
      metadata: { name: 'java' },
      spec: {
        name: 'java',
        image: 'java:1',
        port: 3000,
        ingressname: 'sessions',
        options: { dataBridgeEnabled: 'true', dataBridgePort: String(port) },
        timeout: 10,
        stopWarningSeconds: 60,
      },
    }) as unknown as AppDefinition;
  const session = {
    metadata: {
      name: 'mallory-1',
      namespace: 'ns',
      uid: 'uid-mallory-1',
      creationTimestamp: new Date(Date.now() - 60 * 60_000).toISOString(),
    },
    spec: { user: 'mallory@example.com', appDefinition: 'java' },
    status: { startStrategy: 'lazy', url: 'https://ide/mallory-1/' },
  } as unknown as Session;
  const pod: k8s.V1Pod = {
    metadata: { name: 'mallory-pod', namespace: 'ns', labels: { app: sessionPodApp(session) } },
    status: { podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
  };
  const core = {
    readNamespacedSecret: () =>
      Promise.resolve({
        data: {
          [SESSION_BRIDGE_TOKEN_KEY]: Buffer.from(TOKEN).toString('base64'),
          token: Buffer.from(TOKEN).toString('base64'),
        },
      }),
    listNamespacedPod: () => Promise.resolve({ items: [pod] }),
    readNamespacedConfigMap: () => Promise.reject(new Error('not used')),
  };

  /** The bridges of the pod, with deadlines far beyond what the test waits. */
  const podBridges = () =>
    new SessionBridge(
      core as never,
      podsCache(() => [pod]),
      'ns',
      { requestMs: 120_000, saveMs: 120_000 },
    );

  it('the sweep reads the activity and the notice answers only up to the cap, and records the failed warning', async () => {
    const events: [string, string, string][] = [];
    const patches: unknown[] = [];
    const bridges = podBridges();
    const monitor = new ActivityMonitor({
      config: {
        monitorEnabled: true,
        activityTrackerEnabled: true,
        maxSessionLifetimeMinutes: 0,
        activityIntervalMs: 1000,
      },
      appDefinitions: { list: () => [app()] },
      sessions: { list: () => [session], get: () => session },
      sessionsApi: {
        mergePatch: (_name: string, body: unknown) => Promise.resolve(void patches.push(body)),
        patchStatus: () => Promise.resolve({}),
        delete: () => Promise.resolve(true),
      } as never,
      bridges,
      events: { record: (_o, type, reason, message) => void events.push([type, reason, message]) },
      log: createLogger('silent'),
    });
    sent.length = 0;
    await monitor.sweep(true);

    assert.deepEqual(
      events,
      [
        [
          'Warning',
          'StopWarning',
          `the IDE could not be warned (/notice answered more than ${BRIDGE_ANSWER_MAX_BYTES} bytes); Idle stop in 60 s`,
        ],
      ],
      'the warning is recorded as not delivered',
    );
    assert.equal(patches.length, 1, 'the window runs from the attempt');
    await eventually(() => assert.equal(sent.filter((s) => s.cutOff).length, 2, 'both answers are cut off'));
    assert.deepEqual(
      sent.map((s) => s.path),
      ['/activity', '/notice'],
    );
    for (const s of sent) assert.ok(s.bytes < ENDLESS_BYTES, `${s.path}: the whole endless answer was read`);
    for (const [, , message] of events) assert.ok(!message.includes(TOKEN), 'the token reached an Event');
  });

  it('the save of the work reads its answer only up to the cap', async () => {
    const bridges = podBridges();
    sent.length = 0;
    const target = await bridges.locate(session, app());
    assert.ok(target);
    await assert.rejects(bridges.save(target), {
      name: 'BridgeCallError',
      message: `/save answered more than ${BRIDGE_ANSWER_MAX_BYTES} bytes`,
    });
    await eventually(() => assert.equal(sent[0]?.cutOff, true, 'the answer is cut off'));
  });

  it('the injection reads /health only up to the cap and fails the injection with the reason', async () => {
    const config = parseOperatorConfig({
      namespace: 'ns',
      bridgeHealthAttempts: 1,
      bridgeRequestTimeoutMs: 120_000,
    } as never);
    const injector = new DataInjector(core as never, config, () => undefined, createLogger('silent'));
    sent.length = 0;
    injector.ensure(session, { podSelector: 'app=x', port, tokenSecret: 'x-bridge' });
    const state = await eventually(() => {
      const s = injector.state('uid-mallory-1');
      assert.equal(s?.phase, 'Failed');
      return s!;
    });
    injector.stop();
    assert.equal(state.lastError, `answered more than ${BRIDGE_ANSWER_MAX_BYTES} bytes`);
    await eventually(() => assert.equal(sent[0]?.cutOff, true, 'the answer is cut off'));
  });
});

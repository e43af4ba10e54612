// The idle and lifetime sweep as a whole, on a fake clock with fake API calls and a stand-in bridge
// on loopback: what it asks of the API and the bridges per sweep, which sessions it may stop, which
// warning counts for which stop, and that a sweep of an operator that stopped leading acts no further.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { ANNOTATIONS } from '../../src/model/api-group.js';
import type { AppDefinition } from '../../src/model/app-definition.js';
import type { SaveWorkResult, StopNotice } from '../../src/model/data-bridge.js';
import type { Session } from '../../src/model/session.js';
import { SESSION_BRIDGE_TOKEN_KEY, sessionPodApp } from '../../src/operator/manifests.js';
import { ActivityMonitor, type ActivityMonitorDeps } from '../../src/operator/session/activity.js';
import {
  BridgeCallError,
  SessionBridge,
  type BridgeTarget,
  type SessionBridgeApi,
} from '../../src/operator/session/session-bridge.js';
import { createLogger } from '../../src/operator/runtime/logger.js';
import { podsCache } from './cache-fakes.js';

const MINUTE = 60_000;
const T0 = Date.parse('2026-11-23T12:00:00Z');

function appDefinition(spec: Record<string, unknown>, port = 16400): AppDefinition {
  return {
    metadata: { name: 'java' },
    spec: {
      name: 'java',
      image: 'java:1',
      port: 3000,
      ingressname: 'sessions',
      options: { dataBridgeEnabled: 'true', dataBridgePort: String(port) },
      ...spec,
    },
  } as unknown as AppDefinition;
}

function session(name: string, status: Session['status'], annotations: Record<string, string> = {}): Session {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      creationTimestamp: new Date(T0).toISOString(),
      annotations,
    },
    spec: { user: `${name}@example.com`, appDefinition: 'java' },
    status: { startStrategy: 'lazy', ...status },
  } as unknown as Session;
}

/** What the sweep wrote and recorded. */
class Recorder {
  patches: { name: string; body: unknown }[] = [];
  statuses: { name: string; status: unknown }[] = [];
  deleted: string[] = [];
  events: { reason: string; type: string; message: string }[] = [];
  sessionsApi: ActivityMonitorDeps['sessionsApi'] = {
    mergePatch: (name: string, body: unknown) => {
      this.patches.push({ name, body });
      return Promise.resolve({} as never);
    },
    patchStatus: (name: string, status: unknown) => {
      this.statuses.push({ name, status });
      return Promise.resolve({} as never);
    },
    delete: (name: string) => {
      this.deleted.push(name);
      return Promise.resolve(true);
    },
  } as never;
  eventSink: ActivityMonitorDeps['events'] = {
    record: (_object, type, reason, message) => void this.events.push({ type, reason, message }),
  };
}

function monitor(
  bridges: SessionBridgeApi,
  sessions: Session[],
  app: AppDefinition,
  clock: { now: number },
  recorder: Recorder,
): ActivityMonitor {
  return new ActivityMonitor(
    {
      config: {
        monitorEnabled: true,
        activityTrackerEnabled: true,
        maxSessionLifetimeMinutes: 0,
        activityIntervalMs: 1000,
      },
      appDefinitions: { list: () => [app] },
      sessions: { list: () => sessions, get: (name: string) => sessions.find((s) => s.metadata.name === name) },
      sessionsApi: recorder.sessionsApi,
      bridges,
      events: recorder.eventSink,
      log: createLogger('silent'),
    },
    () => new Date(clock.now),
  );
}

/** A bridge stand-in in memory: every session's bridge answers, with the activity and save given. */
class FakeBridges implements SessionBridgeApi {
  notices: { url: string; notice: StopNotice }[] = [];
  secondsSince = new Map<string, number | null>();
  saving?: (signal?: AbortSignal) => Promise<SaveWorkResult>;
  locateError?: Error;
  hasBridge(): boolean {
    return true;
  }
  locate(s: Session): Promise<BridgeTarget | undefined> {
    if (this.locateError) return Promise.reject(this.locateError);
    return Promise.resolve({ url: s.metadata.name, token: 't' });
  }
  notice(target: BridgeTarget, notice: StopNotice): Promise<void> {
    this.notices.push({ url: target.url, notice });
    return Promise.resolve();
  }
  secondsSinceActivity(target: BridgeTarget): Promise<number | null> {
    return Promise.resolve(this.secondsSince.get(target.url) ?? null);
  }
  save(_target: BridgeTarget, signal?: AbortSignal): Promise<SaveWorkResult> {
    return this.saving ? this.saving(signal) : Promise.resolve({ outcome: 'nothing-to-save' });
  }
  retain(): void {}
}

describe('operator: the idle and lifetime sweep', () => {
  it('bridged sessions that stay active cost no API read or bridge call per sweep once known', async () => {
    let activityCalls = 0;
    const server = http.createServer((req, res) => {
      if (req.url === '/activity') activityCalls++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ secondsSinceActivity: 0 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const N = 12;
      const app = appDefinition({ timeout: 10, stopWarningSeconds: 60 }, port);
      const sessions = Array.from({ length: N }, (_, i) =>
        session(`s${i}`, { url: `https://ide/s${i}/`, lastActivity: new Date(T0).toISOString() }),
      );
      const pods: k8s.V1Pod[] = sessions.map((s) => ({
        metadata: { name: `${s.metadata.name}-pod`, namespace: 'ns', labels: { app: sessionPodApp(s) } },
        status: { podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
      }));
      let secretReads = 0;
      let podLists = 0;
      const core = {
        readNamespacedSecret: () => {
          secretReads++;
          return Promise.resolve({ data: { [SESSION_BRIDGE_TOKEN_KEY]: Buffer.from('tok').toString('base64') } });
        },
        listNamespacedPod: () => {
          podLists++;
          return Promise.resolve({ items: pods });
        },
      };
      const cachedPods = podsCache(() => pods);
      const bridges = new SessionBridge(core as never, cachedPods, 'ns', { requestMs: 5000, saveMs: 5000 });
      const clock = { now: T0 + 30 * MINUTE };
      const recorder = new Recorder();
      const sweeper = monitor(bridges, sessions, app, clock, recorder);

      await sweeper.sweep(true);
      assert.equal(activityCalls, N, 'the first sweep asks every session past its window');
      assert.equal(secretReads, N, 'one token read per session');
      for (let i = 1; i <= 8; i++) {
        clock.now += MINUTE;
        await sweeper.sweep(true);
      }
      assert.deepEqual({ activityCalls, secretReads, podLists }, { activityCalls: N, secretReads: N, podLists: 0 });
      clock.now += 1.5 * MINUTE; // 9.5 minutes after the activity: its window has opened
      await sweeper.sweep(true);
      assert.deepEqual(
        { activityCalls, secretReads, podLists },
        { activityCalls: 2 * N, secretReads: N, podLists: 0 },
        'asked again once the window could open, with the tokens kept',
      );
      assert.deepEqual([recorder.patches, recorder.deleted], [[], []], 'active sessions are left alone');
    } finally {
      server.close();
    }
  });

  it('only sessions that serve are idle-checked and warned; the lifetime counts from creation for all', async () => {
    const bridges = new FakeBridges();
    const app = appDefinition({ timeout: 10, stopWarningSeconds: 0 });
    const queued = session('queued', { startStrategy: 'lazy' });
    const serving = session('serving', { url: 'https://ide/serving/' });
    const clock = { now: T0 + 30 * MINUTE };
    const recorder = new Recorder();
    assert.deepEqual(await monitor(bridges, [queued, serving], app, clock, recorder).sweep(true), ['serving']);
    assert.deepEqual(recorder.deleted, ['serving']);

    const lifetime = appDefinition({ timeout: 10, maxLifetimeMinutes: 20, stopWarningSeconds: 0 });
    const recorder2 = new Recorder();
    assert.deepEqual(await monitor(bridges, [queued], lifetime, clock, recorder2).sweep(true), ['queued']);
  });

  it('an idle warning does not count for the lifetime stop: activity that keeps the session warns of the lifetime', async () => {
    const bridges = new FakeBridges();
    // Idle after 5 min, lifetime 10 min, a 2 min window.
    const app = appDefinition({ timeout: 5, maxLifetimeMinutes: 10, stopWarningSeconds: 120 });
    const s = session('lou', { url: 'https://ide/lou/' });
    const clock = { now: T0 + 8.2 * MINUTE };
    const recorder = new Recorder();
    const sweeper = monitor(bridges, [s], app, clock, recorder);
    bridges.secondsSince.set('lou', 4.2 * 60); // last active at 4 min: idle stop at 9 min
    await sweeper.sweep(true);
    assert.deepEqual(
      bridges.notices.map((n) => n.notice.reason),
      ['Idle'],
    );
    const annotation = (recorder.patches[0]?.body as { metadata: { annotations: Record<string, string> } }).metadata
      .annotations[ANNOTATIONS.stopWarning];
    assert.match(annotation ?? '', /^Idle 2026-11-23T12:08:12\.000Z$/);
    s.metadata.annotations = { [ANNOTATIONS.stopWarning]: annotation! };

    clock.now = T0 + 8.6 * MINUTE;
    bridges.secondsSince.set('lou', 6); // active again: the lifetime (10 min) is the next stop
    await sweeper.sweep(true);
    assert.deepEqual(
      bridges.notices.map((n) => n.notice.reason),
      ['Idle', 'MaxLifetime'],
    );
    assert.deepEqual(recorder.deleted, []);
  });

  it('a sweep whose operator stops leading saves, warns and deletes nothing more', async () => {
    const bridges = new FakeBridges();
    const app = appDefinition({ timeout: 10, stopWarningSeconds: 0, saveWorkOnStop: true });
    const sessions = ['a', 'b', 'c'].map((n) => session(n, { url: `https://ide/${n}/` }));
    const clock = { now: T0 + 30 * MINUTE };
    const recorder = new Recorder();
    const leading = new AbortController();
    let saves = 0;
    bridges.saving = (signal) =>
      new Promise((resolve, reject) => {
        saves++;
        leading.abort(); // the lease is lost while the first save runs
        signal?.addEventListener('abort', () => reject(new Error('cancelled')));
        if (signal?.aborted) reject(new Error('cancelled'));
      });
    const stopped = await monitor(bridges, sessions, app, clock, recorder).sweep(true, leading.signal);
    assert.deepEqual(stopped, []);
    assert.equal(saves, 1, 'no save started after the abort');
    assert.deepEqual([recorder.deleted, recorder.patches, recorder.statuses], [[], [], []]);
  });

  it('stop() (the lease lost) ends a running sweep at once: a save under way is given up, nothing deleted', async () => {
    const bridges = new FakeBridges();
    const app = appDefinition({ timeout: 10, stopWarningSeconds: 0, saveWorkOnStop: true });
    const recorder = new Recorder();
    let saving!: () => void;
    const started = new Promise<void>((resolve) => (saving = resolve));
    // A save that ends only when it is given up (the bridge's agent hangs).
    bridges.saving = (signal) =>
      new Promise((_resolve, reject) => {
        saving();
        signal?.addEventListener('abort', () => reject(new Error('cancelled')));
      });
    const lou = session('lou', { url: 'https://ide/lou/' });
    const sweeper = new ActivityMonitor(
      {
        config: {
          monitorEnabled: true,
          activityTrackerEnabled: true,
          maxSessionLifetimeMinutes: 0,
          activityIntervalMs: 10,
        },
        appDefinitions: { list: () => [app] },
        sessions: { list: () => [lou], get: () => lou },
        sessionsApi: recorder.sessionsApi,
        bridges,
        events: recorder.eventSink,
        log: createLogger('silent'),
      },
      () => new Date(T0 + 30 * MINUTE),
    );
    sweeper.start();
    await started;
    await sweeper.stop();
    assert.deepEqual([recorder.deleted, recorder.patches, recorder.statuses], [[], [], []]);
  });

  it('a missing token is told as such, not as a missing pod', async () => {
    const bridges = new FakeBridges();
    bridges.locateError = new BridgeCallError('its token is missing (Secret or key)');
    const app = appDefinition({ timeout: 10, stopWarningSeconds: 60 });
    const recorder = new Recorder();
    await monitor(
      bridges,
      [session('lou', { url: 'https://ide/lou/' })],
      app,
      { now: T0 + 30 * MINUTE },
      recorder,
    ).sweep(true);
    assert.deepEqual(
      recorder.events.map((e) => [e.type, e.reason, e.message]),
      [
        [
          'Warning',
          'StopWarning',
          'the IDE could not be warned (its token is missing (Secret or key)); Idle stop in 60 s',
        ],
      ],
    );
  });

  it('a stop writes its reason on the session (by uid) and deletes it; no status before the delete keeps it active', async () => {
    const bridges = new FakeBridges();
    const app = appDefinition({ maxLifetimeMinutes: 20, stopWarningSeconds: 0 });
    const recorder = new Recorder();
    await monitor(
      bridges,
      [session('lou', { url: 'https://ide/lou/' })],
      app,
      { now: T0 + 30 * MINUTE },
      recorder,
    ).sweep(true);
    // A status of Stopping before the delete would end the session's hold on its warm instance (and a
    // pass could set Ready back); the finalizer writes the reason into status once it is being deleted.
    assert.deepEqual(recorder.statuses, []);
    const patch = recorder.patches.at(-1)?.body as { metadata: { uid?: string; annotations: Record<string, string> } };
    assert.equal(patch.metadata.uid, 'uid-lou');
    assert.equal(patch.metadata.annotations[ANNOTATIONS.stopReason], 'MaxLifetime: running for more than 20 minute(s)');
    assert.deepEqual(recorder.deleted, ['lou']);
  });
});

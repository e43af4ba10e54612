// The Events on a Session (what `kubectl describe session` shows), against the real API server: a
// launch that goes well, warm or lazy, records none (its conditions tell the story, in the status
// write it makes anyway), and a lost pod and its return are told, repeats aggregated on one Event.
import assert from 'node:assert/strict';
import { pino } from 'pino';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { SessionCondition, type Session } from '../../server/src/model/session.js';
import { startOperator, type RunningOperator } from '../../server/src/operator/index.js';
import type { EventsApi } from '../../server/src/operator/runtime/events.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import {
  cleanUpSuite,
  createAppDefinition,
  createSession,
  FAST,
  ideCloudResources,
  lazySessionPod,
  running,
  waitForSession,
} from '../support/operator.js';

const WARM = 'warm-app';
// No data bridge: never a warm pool, always the lazy path.
const LAZY = 'lazy-app';

/**
 * The real Events API, whose writes can be held: while held, each call waits (unanswered) until
 * `release`, then goes to the API server.
 */
function holdableEventsApi(core: k8s.CoreV1Api) {
  let held: (() => void)[] | undefined;
  let waiting = 0;
  const gate = async () => {
    if (!held) return;
    waiting++;
    await new Promise<void>((resolve) => held!.push(resolve));
    waiting--;
  };
  const api: EventsApi = {
    createNamespacedEvent: (async (...args: Parameters<k8s.CoreV1Api['createNamespacedEvent']>) => {
      await gate();
      return core.createNamespacedEvent(...args);
    }) as k8s.CoreV1Api['createNamespacedEvent'],
    patchNamespacedEvent: (async (...args: Parameters<k8s.CoreV1Api['patchNamespacedEvent']>) => {
      await gate();
      return core.patchNamespacedEvent(...args);
    }) as k8s.CoreV1Api['patchNamespacedEvent'],
  };
  return {
    api,
    hold: () => (held ??= []),
    release: () => {
      const resolvers = held ?? [];
      held = undefined;
      for (const resolve of resolvers) resolve();
    },
    waiting: () => waiting,
  };
}

describe('operator: Events tell the story of a launch', function () {
  this.timeout(300_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let core: k8s.CoreV1Api;
  let operator: RunningOperator;
  let events: ReturnType<typeof holdableEventsApi>;

  async function eventsOf(session: string): Promise<k8s.CoreV1Event[]> {
    const list = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=Session,involvedObject.name=${session}`,
    });
    // Named `<session>.<time><sequence>…`: sorted by name, as recorded.
    return list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  }

  /**
   * Returns once every Event the operator recorded so far is written: one writer sends them in order,
   * so a refused session's Failed Event, seen, comes after them all.
   */
  async function eventsWritten(): Promise<void> {
    const barrier = `barrier-${Date.now().toString(36)}`;
    await createSession(r, barrier, { user: 'barry@example.com', appDefinition: 'no-such-app' });
    // With a message: without one, each failed try has node:assert parse this file to quote the
    // expression, which holds the event loop (and the operator in it) for about a second.
    await eventually(async () =>
      assert.ok(
        (await eventsOf(barrier)).some((e) => e.reason === 'Failed'),
        'no Failed Event yet',
      ),
    );
    await r.sessions.delete(barrier);
  }

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'op-events');
    r = ideCloudResources(cluster.kc, namespace);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    await createAppDefinition(r, WARM, { minInstances: 1 });
    await createAppDefinition(r, LAZY, { options: {} });
    events = holdableEventsApi(core);
    // The operator as main.ts starts it, writing its Events through the holdable API.
    operator = await startOperator(
      { namespace, ...FAST, eagerStart: true, sessionsPerUser: 10 },
      {
        kubeConfig: cluster.kc,
        logger: pino({ level: process.env.IDE_CLOUD_TEST_LOG ?? 'silent' }),
        eventsApi: events.api,
      },
    );
  });
  after(async () => {
    events?.release();
    await cleanUpSuite(cluster.kc, namespace, [operator]);
  });

  it('a warm launch reaches Running with its URL and writes no Event: its conditions tell its strategy and time', async () => {
    await eventually(async () => {
      const pool = (await r.appDefinitions.get(WARM)).status?.pool;
      assert.deepEqual(pool, { desired: 1, ready: 1 });
    }, 60_000);
    events.hold();
    await createSession(r, 'warm-1', { user: 'wendy@example.com', appDefinition: WARM });
    const session = await waitForSession(r, 'warm-1', running);
    assert.equal(session.status?.startStrategy, 'eager');
    assert.ok(session.status?.url);
    const conditions = Object.fromEntries((session.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(conditions.Reserved?.message, `warm instance ${session.status?.instanceId}`);
    assert.equal(conditions.Ready?.message, 'the IDE pod is ready (eager start)');
    assert.ok(conditions.Ready?.lastTransitionTime, 'the time the session began to serve');
    // The pass that wrote the URL is over once its status is read back: it sent no Event.
    const sent = events.waiting();
    events.release();
    assert.equal(sent, 0, 'no Event write sent');
    await eventsWritten();
    assert.deepEqual(await eventsOf('warm-1'), []);
  });

  it('a lazy launch writes no Event either: Reserved, Routed, EnvInjected and Ready tell its steps', async () => {
    await createSession(r, 'lazy-1', {
      user: 'larry@example.com',
      appDefinition: LAZY,
      envVars: { PLATFORM_TOKEN: 'value-never-in-an-event' },
    });
    const session = await waitForSession(r, 'lazy-1', running);
    assert.deepEqual(
      (session.status?.conditions ?? []).map((c) => [c.type, c.status, c.message]),
      [
        ['Reserved', 'False', 'no free warm instance; lazy start'],
        ['Routed', 'True', `path ${new URL(session.status!.url!).pathname} in ingress ide-cloud-sessions`],
        ['EnvInjected', 'True', "values in the session's Secret, referenced from the pod"],
        ['Ready', 'True', 'the IDE pod is ready (lazy-fallback start)'],
      ],
    );
    await eventsWritten();
    assert.deepEqual(await eventsOf('lazy-1'), []);
    assert.ok(!JSON.stringify(session.status).includes('value-never-in-an-event'));
  });

  it('a session whose pod goes and comes back twice counts each repeat on one Event', async () => {
    const ready = (status: string) => (s: Session) =>
      (s.status?.conditions ?? []).some((c) => c.type === SessionCondition.ready && c.status === status);
    const notReadyCount = async () => (await eventsOf('lazy-1')).find((e) => e.reason === 'NotReady')?.count ?? 0;
    for (let round = 0; round < 2; round++) {
      await waitForSession(r, 'lazy-1', ready('True'));
      // The pod goes (the operator makes another at once): the session tells it was lost, then back.
      const pod = await lazySessionPod(core, namespace, 'lazy-1');
      const told = await notReadyCount();
      await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace });
      await eventually(async () => assert.ok((await notReadyCount()) > told, 'no NotReady told'));
      await eventually(async () => {
        const again = await lazySessionPod(core, namespace, 'lazy-1');
        assert.notEqual(again.metadata?.uid, pod.metadata?.uid, 'no new pod');
      });
    }
    await waitForSession(r, 'lazy-1', ready('True'));
    await eventually(async () => {
      const told = await eventsOf('lazy-1');
      const byReason = Object.fromEntries(told.map((e) => [e.reason, e]));
      assert.equal(told.filter((e) => e.reason === 'Ready').length, 1, 'one Ready Event');
      assert.equal(told.filter((e) => e.reason === 'NotReady').length, 1, 'one NotReady Event');
      // At least once per round (a pass can see a pod's readiness more than once while the
      // terminating pod and the new one change): each time counted, never a new Event. The
      // launch's own Ready wrote none.
      assert.ok(byReason.Ready!.count! >= 2, `Ready count ${byReason.Ready!.count}`);
      assert.ok(byReason.NotReady!.count! >= 2, `NotReady count ${byReason.NotReady!.count}`);
      assert.equal(byReason.NotReady!.type, 'Warning');
      assert.ok(new Date(byReason.Ready!.lastTimestamp!) >= new Date(byReason.Ready!.firstTimestamp!));
    });
  });
});

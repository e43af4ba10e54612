// The operator under load and failure: many concurrent launches against a small pool, an operator
// stopped mid-way and restarted, dropped watch connections, two replicas with one leader.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../server/src/model/api-group.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { eventually } from '../support/kube.js';
import {
  appDefinitionSpec,
  createSession,
  freeReadyInstances,
  instanceReservations,
  running,
  waitForSession,
} from '../support/operator.js';
import { useStack, type Stack } from '../support/stack.js';

const APP = 'rust-latest';
const poolSelector = `${LABELS.component}=pool-instance,${LABELS.appDefinition}=${APP}`;

async function assertNoDoubleReservation({
  kc,
  apps,
  core,
  resources: r,
  namespace,
}: Pick<Stack, 'kc' | 'apps' | 'core' | 'resources' | 'namespace'>) {
  const pool = (await apps.listNamespacedDeployment({ namespace, labelSelector: poolSelector })).items;
  const reservations = await instanceReservations(kc, namespace);
  const holderOf = (d: k8s.V1Deployment | undefined) =>
    reservations.get(d?.metadata?.name ?? '')?.metadata?.labels?.[LABELS.session];
  const holders = pool.map(holderOf).filter(Boolean);
  assert.equal(new Set(holders).size, holders.length, 'one session per instance');
  const sessions = await r.sessions.list();
  const eager = sessions.filter((s) => s.status?.startStrategy === 'eager');
  assert.equal(new Set(eager.map((s) => s.status?.instanceId)).size, eager.length, 'one instance per session');
  for (const s of eager) {
    const d = pool.find((p) => p.metadata?.labels?.[LABELS.instanceId] === s.status?.instanceId);
    assert.equal(holderOf(d), s.metadata.name);
  }
  // No session has two workloads: lazy sessions have their own pod, eager ones none.
  const own = (await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.component}=session` })).items.filter(
    (p) => !p.metadata?.deletionTimestamp,
  );
  for (const s of sessions) {
    const count = own.filter((p) => p.metadata?.labels?.[LABELS.session] === s.metadata.name).length;
    assert.equal(count, s.status?.startStrategy === 'eager' ? 0 : 1, `workloads of ${s.metadata.name}`);
  }
  return { eager: eager.length, total: sessions.length };
}

/** Concurrent launches against the pool of 10 (the load test). */
const LAUNCHES = 50;

describe('operator: concurrency, restarts and dropped watches', function () {
  const stack = useStack('op-load', {
    apps: [appDefinitionSpec(APP, { minInstances: 10, maxInstances: null })],
    operator: { eagerStart: true },
  });
  this.timeout(300_000);

  it(`${LAUNCHES} concurrent launches against a pool of 10: no instance reserved twice, every session Running, every route kept; half of them ending at once take only their own routes`, async () => {
    await eventually(
      async () => assert.equal((await stack.resources.appDefinitions.get(APP)).status?.pool?.ready, 10),
      90_000,
      300,
    );
    const names = Array.from({ length: LAUNCHES }, (_, i) => `load-${i}`);
    await Promise.all(
      names.map((n) => createSession(stack.resources, n, { user: `${n}@example.com`, appDefinition: APP })),
    );
    await Promise.all(names.map((n) => waitForSession(stack.resources, n, running, 240_000)));
    const { eager, total } = await assertNoDoubleReservation(stack);
    assert.equal(total, LAUNCHES);
    assert.equal(eager, 10);
    const ingress = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
    const paths = ingress.spec!.rules!.flatMap((rule) => rule.http!.paths.map((p) => p.path ?? ''));
    assert.deepEqual(
      paths.map((p) => p.split('/')[1]).sort(),
      names.slice().sort(),
      'one path per session, each under its name',
    );
    // Half of them end at once: their paths go in a few batched patches, and no other path with them.
    const ending = names.filter((_, i) => i % 2 === 0);
    await Promise.all(ending.map((n) => stack.resources.sessions.delete(n)));
    const kept = names.filter((n) => !ending.includes(n)).sort();
    await eventually(
      async () => {
        const left = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
        const paths = left.spec!.rules!.flatMap((rule) => rule.http!.paths.map((p) => p.path ?? ''));
        assert.deepEqual(paths.map((p) => p.split('/')[1]).sort(), kept);
      },
      120_000,
      300,
    );
  });

  it('an operator stopped mid-way and restarted leaves no leak and no duplicate', async () => {
    await Promise.all(
      (await stack.resources.sessions.list()).map((s) => stack.resources.sessions.delete(s.metadata.name)),
    );
    await eventually(async () => assert.deepEqual(await stack.resources.sessions.list(), []), 60_000, 300);
    await eventually(
      async () => {
        assert.deepEqual((await stack.resources.appDefinitions.get(APP)).status?.pool, { desired: 10, ready: 10 });
        assert.equal(await freeReadyInstances(stack.kc, stack.namespace, APP), 10, 'every instance back in the pool');
      },
      90_000,
      300,
    );
    const names = Array.from({ length: 15 }, (_, i) => `restart-${i}`);
    await Promise.all(
      names.map((n) => createSession(stack.resources, n, { user: `${n}@example.com`, appDefinition: APP })),
    );
    // Stop as soon as the first sessions got a strategy: the rest are mid-way.
    await eventually(
      async () =>
        assert.ok(
          (await stack.resources.sessions.list()).some((s) => s.status?.startStrategy),
          'none decided yet',
        ),
      30_000,
      20,
    );
    await stack.restartOperator();
    await Promise.all(names.map((n) => waitForSession(stack.resources, n, running, 240_000)));
    const { eager, total } = await assertNoDoubleReservation(stack);
    assert.equal(total, 15);
    assert.equal(eager, 10);
    const pool = (
      await stack.apps.listNamespacedDeployment({ namespace: stack.namespace, labelSelector: poolSelector })
    ).items;
    assert.equal(pool.length, 10, 'no extra warm instances');
  });

  it('recovers from dropped watch connections', async () => {
    stack.operator!.dropWatches();
    await createSession(stack.resources, 'after-drop', { user: 'drop@example.com', appDefinition: APP });
    stack.operator!.dropWatches();
    const s = await waitForSession(stack.resources, 'after-drop', running, 60_000);
    assert.equal(s.status?.startStrategy, 'lazy-fallback');
  });
});

describe('operator: two replicas, one leader', function () {
  this.timeout(180_000);
  const operators: RunningOperator[] = [];
  const stack = useStack('op-leader', {
    apps: [appDefinitionSpec(APP, { minInstances: 1 })],
    setUp: async ({ startOperator }) => {
      for (const identity of ['replica-a', 'replica-b']) {
        operators.push(await startOperator({ eagerStart: true, leaderElection: true, identity }));
      }
    },
  });

  it('elects exactly one leader, which reconciles; a standby takes over within seconds', async () => {
    await eventually(() => assert.equal(operators.filter((o) => o.isLeader()).length, 1), 15_000);
    await eventually(
      async () => assert.equal((await stack.resources.appDefinitions.get(APP)).status?.pool?.ready, 1),
      60_000,
      200,
    );
    await createSession(stack.resources, 'led-1', { user: 'a@example.com', appDefinition: APP });
    assert.equal((await waitForSession(stack.resources, 'led-1', running)).status?.startStrategy, 'eager');
    const leader = operators.find((o) => o.isLeader())!;
    const standby = operators.find((o) => o !== leader)!;
    // The same replica holds the lease for a while: no flapping.
    await eventually(() => assert.equal(operators.filter((o) => o.isLeader()).length, 1), 5_000);
    assert.ok(leader.isLeader());

    await leader.stop();
    const started = Date.now();
    await eventually(() => assert.ok(standby.isLeader(), 'the standby leads'), 10_000, 50);
    assert.ok(Date.now() - started < 10_000);
    await createSession(stack.resources, 'led-2', { user: 'b@example.com', appDefinition: APP });
    assert.equal((await waitForSession(stack.resources, 'led-2', running)).status?.startStrategy, 'lazy-fallback');
    let lease = await stack.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: 'ide-cloud-operator', namespace: stack.namespace });
    assert.equal(lease.spec?.holderIdentity, standby.config.identity);

    // A leader that dies without releasing: a new replica takes over once the lease (2 s here) expires.
    const third = await stack.startOperator({
      eagerStart: true,
      leaderElection: true,
      identity: 'replica-c',
    });
    operators.push(third);
    assert.ok(!third.isLeader());
    await standby.stop({ releaseLease: false });
    const crashed = Date.now();
    await eventually(() => assert.ok(third.isLeader(), 'the new replica leads'), 15_000, 50);
    assert.ok(Date.now() - crashed < 10_000, 'takeover within seconds');
    lease = await stack.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: 'ide-cloud-operator', namespace: stack.namespace });
    assert.equal(lease.spec?.holderIdentity, 'replica-c');
    await createSession(stack.resources, 'led-3', { user: 'c@example.com', appDefinition: APP });
    await waitForSession(stack.resources, 'led-3', running);
  });
});

// Two real operator processes side by side on one namespace (a rolling update, or two replicas): only
// the holder of the Lease acts, a burst of concurrent warm launches claims each warm instance once, and
// when the leader is killed (SIGKILL, no release) the other takes the Lease over once it expires and
// finishes the launches left pending.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { LABELS } from '../../server/src/model/api-group.js';
import type { Session } from '../../server/src/model/session.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import {
  freeReadyInstances,
  cleanUpSuite,
  createAppDefinition,
  createSession,
  ideCloudResources,
  instanceReservations,
  running,
  spawnOperator,
  waitForSession,
  type OperatorProcess,
} from '../support/operator.js';

const APP = 'java-latest';
const POOL = 6;
const BURST = 10;
const LEASE = 'ide-cloud-operator';
/**
 * Longer than FAST's 2 s: a leader busy with a burst on a loaded machine (the suites run in two lanes
 * on two cores) stalled past that renew deadline and lost the Lease to its standby mid-burst.
 */
const LEASE_TIMING = { leaseDurationMs: 10_000, leaseRenewIntervalMs: 1000 };
const poolSelector = `${LABELS.component}=pool-instance,${LABELS.appDefinition}=${APP}`;

/** Running, or Failed with a reason a person can read: a session that ended its launch. */
const settled = (s: Session) =>
  running(s) || (s.status?.phase === 'Failed' && !!s.status.error?.reason && !!s.status.error.code);

/** The session names each process passed over (its debug log), per process. */
const passes = (p: OperatorProcess) => new Set(p.logged('session pass').map((l) => String(l.session)));

describe('operator: two real operator processes, one Lease', function () {
  this.timeout(300_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let apps: k8s.AppsV1Api;
  let core: k8s.CoreV1Api;
  let leases: k8s.CoordinationV1Api;
  let processes: OperatorProcess[] = [];
  let leader: OperatorProcess;
  let standby: OperatorProcess;

  const output = () =>
    processes
      .map((p) => `\n--- ${p.identity}:\n${[...p.otherOutput, ...p.logs.map((l) => JSON.stringify(l))].join('\n')}`)
      .join('')
      .slice(-20_000);

  /** Each warm instance held by one existing session, that session eager on it; no session with two workloads. */
  async function assertEachInstanceClaimedOnce(): Promise<Session[]> {
    const sessions = await r.sessions.list();
    const pool = (await apps.listNamespacedDeployment({ namespace, labelSelector: poolSelector })).items;
    const reservations = await instanceReservations(cluster.kc, namespace);
    const holderOf = (d: k8s.V1Deployment) =>
      reservations.get(d.metadata?.name ?? '')?.metadata?.labels?.[LABELS.session];
    const holders = pool.map(holderOf).filter((h): h is string => !!h);
    assert.equal(new Set(holders).size, holders.length, `an instance reserved twice: ${holders.join(', ')}`);
    for (const d of pool) {
      const holder = holderOf(d);
      if (!holder) continue;
      const s = sessions.find((x) => x.metadata.name === holder);
      assert.ok(s, `${d.metadata?.name} is reserved for ${holder}, which does not exist (leaked)`);
      assert.equal(s.status?.instanceId, d.metadata?.labels?.[LABELS.instanceId], `${holder}'s instanceId`);
    }
    const eager = sessions.filter((s) => s.status?.instanceId);
    assert.equal(new Set(eager.map((s) => s.status?.instanceId)).size, eager.length, 'one instance per session');
    const own = (await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.component}=session` })).items;
    for (const s of sessions) {
      const lazy = own.some((p) => p.metadata?.labels?.[LABELS.session] === s.metadata.name);
      assert.ok(!(lazy && s.status?.instanceId), `${s.metadata.name} has a lazy pod and an instanceId`);
      if (s.status?.instanceId) assert.equal(s.status.startStrategy, 'eager', s.metadata.name);
      if (lazy) assert.notEqual(s.status?.startStrategy, 'eager', s.metadata.name);
    }
    return sessions;
  }

  async function burst(prefix: string): Promise<string[]> {
    const names = Array.from({ length: BURST }, (_, i) => `${prefix}-${i}`);
    await Promise.all(names.map((n) => createSession(r, n, { user: `${n}@example.com`, appDefinition: APP })));
    return names;
  }

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'op-two');
    r = ideCloudResources(cluster.kc, namespace);
    apps = cluster.kc.makeApiClient(k8s.AppsV1Api);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    leases = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    await createAppDefinition(r, APP, { minInstances: POOL, maxInstances: null });
    processes = ['operator-a', 'operator-b'].map((identity) =>
      spawnOperator(cluster.kubeconfig, namespace, identity, { eagerStart: true, sessionsPerUser: 1, ...LEASE_TIMING }),
    );
  });
  after(async () => {
    // Whoever still runs removes the finalizers; then every process started here goes.
    await cleanUpSuite(cluster.kc, namespace, processes);
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
  });

  it('only the holder of the Lease acts: a burst of concurrent warm launches claims each instance once', async () => {
    const holder = await eventually(
      async () => {
        const lease = await leases.readNamespacedLease({ name: LEASE, namespace });
        const identity = lease.spec?.holderIdentity;
        const p = processes.find((x) => x.identity === identity);
        assert.ok(p, `holder ${identity}${output()}`);
        return p;
      },
      60_000,
      100,
    );
    leader = holder;
    standby = processes.find((p) => p !== holder)!;
    await eventually(
      async () => assert.equal((await r.appDefinitions.get(APP)).status?.pool?.ready, POOL, output()),
      90_000,
      300,
    );

    const names = await burst('burst');
    await Promise.all(names.map((n) => waitForSession(r, n, settled, 120_000)));
    const sessions = await assertEachInstanceClaimedOnce();
    assert.equal(sessions.filter((s) => s.status?.startStrategy === 'eager').length, POOL, 'the pool served first');
    assert.ok(sessions.every(running), 'every launch of the burst Running');

    // One process held the Lease all along, and only it acted.
    const lease = await leases.readNamespacedLease({ name: LEASE, namespace });
    assert.equal(lease.spec?.holderIdentity, leader.identity, output());
    assert.equal(lease.spec?.leaseTransitions ?? 0, 0, `the Lease never changed hands${output()}`);
    assert.equal(leader.logged('became leader').length, 1, output());
    assert.equal(leader.logged('controllers started').length, 1, output());
    for (const n of names) assert.ok(passes(leader).has(n), `the leader passed over ${n}`);
    assert.equal(standby.child.exitCode, null, `the standby runs${output()}`);
    assert.deepEqual(standby.logged('became leader'), [], 'the standby never led');
    assert.deepEqual(standby.logged('controllers started'), [], 'the standby never started its controllers');
    assert.deepEqual([...passes(standby)], [], 'the standby never passed over a session');
  });

  it('SIGKILL of the leader: the other takes the Lease over within its bound and finishes the pending launches', async () => {
    await Promise.all((await r.sessions.list()).map((s) => r.sessions.delete(s.metadata.name)));
    await eventually(async () => assert.deepEqual(await r.sessions.list(), []), 60_000, 300);
    await eventually(
      async () => {
        assert.deepEqual((await r.appDefinitions.get(APP)).status?.pool, { desired: POOL, ready: POOL });
        assert.equal(await freeReadyInstances(cluster.kc, namespace, APP), POOL, 'every instance back in the pool');
      },
      90_000,
      300,
    );

    const names = await burst('pending');
    // Killed as soon as the first launch got a strategy: the others are mid-way or not begun.
    await eventually(
      async () =>
        assert.ok(
          (await r.sessions.list()).some((s) => s.status?.startStrategy),
          'none decided yet',
        ),
      30_000,
      20,
    );
    await leader.kill('SIGKILL');
    assert.equal(leader.child.signalCode, 'SIGKILL');
    const before = await r.sessions.list();
    const pending = before.filter((s) => !settled(s)).map((s) => s.metadata.name);

    // The bound: the lease duration from the dead leader's last renewal, plus a few attempts of the
    // standby (every renew interval) and room for a loaded machine.
    const bound = LEASE_TIMING.leaseDurationMs + 10 * LEASE_TIMING.leaseRenewIntervalMs + 10_000;
    await eventually(
      async () => {
        const lease = await leases.readNamespacedLease({ name: LEASE, namespace });
        assert.equal(lease.spec?.holderIdentity, standby.identity, output());
        assert.equal(standby.logged('became leader').length, 1);
      },
      bound,
      50,
    );
    const lease = await leases.readNamespacedLease({ name: LEASE, namespace });
    assert.equal(lease.spec?.leaseTransitions, 1, 'the Lease changed hands once');

    await Promise.all(names.map((n) => waitForSession(r, n, settled, 120_000)));
    await assertEachInstanceClaimedOnce();
    for (const n of pending) assert.ok(passes(standby).has(n), `the new leader finished ${n}`);
    assert.ok(pending.length > 0, 'launches were pending when the leader died');
    const pool = (await apps.listNamespacedDeployment({ namespace, labelSelector: poolSelector })).items;
    assert.equal(pool.length, POOL, 'no extra warm instances');
  });
});

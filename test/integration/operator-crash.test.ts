// Crashes that are real kills: the operator runs as its own process (its image's bundle) behind a
// proxy that counts its writes (test/support/kube-write-proxy.ts). One undisturbed eager launch (a
// warm instance claimed) and one lazy launch (workspace, config store, sidecar) are counted first,
// and the stop of each;
// then, for each write of that launch or stop, it is made again, the operator is SIGKILLed once that
// write has reached the API server and before it got the answer, and a fresh operator process is
// started: the session must end Running (or Failed with a reason) with nothing held twice, leaked or
// left without an owner, and once deleted, everything it held must be cleaned up. Every write that two
// counts of the phase both made is a kill point that must run: one whose write never comes again fails
// the run, named.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { ANNOTATIONS, API_VERSION, LABELS, SESSION_FINALIZER } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import { findCondition } from '../../server/src/model/conditions.js';
import { SessionCondition, isSessionFailed, type Session } from '../../server/src/model/session.js';
import type { OperatorConfigInput } from '../../server/src/operator/config.js';
import { COMPONENT, instanceClaimName, poolInstanceName } from '../../server/src/operator/manifests.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { startKubeWriteProxy, type KubeWriteProxy, type WriteRecord } from '../support/kube-write-proxy.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import {
  freeReadyInstances,
  bridgeToken,
  bundledOperator,
  cleanUpSuite,
  createAppDefinition,
  createSession,
  ideCloudResources,
  instanceReservations,
  running,
  spawnOperator,
  startBridge,
  type Bridge,
  type OperatorCommand,
  type OperatorProcess,
} from '../support/operator.js';

const EAGER_APP = 'java-latest';
const LAZY_APP = 'python-latest';
const INSTANCE = poolInstanceName(EAGER_APP, 1);
const INGRESS = 'ide-cloud-sessions';
// A port no other suite's bridge stand-ins use: every local control plane's kwok hands out pod IPs
// from the same loopback range, so suites running side by side could otherwise bind the same address.
const BRIDGE_PORT = 16391;
// One identity for every process: a crashed operator restarts in its pod under the pod's name, and
// takes the Lease it held at once (a fresh identity would wait for the Lease to expire).
const IDENTITY = 'crash-operator';
const SETTINGS: Partial<OperatorConfigInput> = {
  eagerStart: true,
  sessionsPerUser: 1,
  // Renewals pass through the proxy on a busy machine: a generous deadline keeps the leader leading.
  leaseDurationMs: 10_000,
  leaseRenewIntervalMs: 1000,
};
/** How long a launch, a restart or a clean-up may take on a loaded machine. */
const SETTLE_MS = 120_000;

/** Launches made for one kill point before giving up on a write that does not always come. */
const ATTEMPTS = 3;

/** A write of the counted launch: its signature (names taken out) and which of that signature it is. */
interface KillPoint {
  signature: string;
  occurrence: number;
  /** Whether the API server took it when counted. */
  applied: boolean;
}

/** Running, or Failed with a reason a person can read. */
const settled = (s: Session) =>
  running(s) || (isSessionFailed(s) && !!s.status?.error?.reason && !!s.status.error.code);

interface ProxiedOperator {
  proxy: KubeWriteProxy;
  process: OperatorProcess;
}

describe('operator: SIGKILLed after each write of a launch or a stop, then restarted', function () {
  this.timeout(1_200_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let apps: k8s.AppsV1Api;
  let core: k8s.CoreV1Api;
  let net: k8s.NetworkingV1Api;
  let coordination: k8s.CoordinationV1Api;
  let operator: ProxiedOperator | undefined;
  const started: ProxiedOperator[] = [];
  let bridge: Bridge | undefined;
  /** The operator as its image runs it: each kill point restarts it, and tsx's start-up would dominate the run. */
  let command: OperatorCommand;
  /** Where each kill hit (or which write did not come), printed at the end: the run's coverage. */
  const kills: string[] = [];

  const output = () =>
    operator
      ? `\n--- last operator:\n${[
          ...operator.process.otherOutput,
          ...operator.process.logs.map((l) => JSON.stringify(l)),
        ]
          .join('\n')
          .slice(-8000)}`
      : '';

  async function startProxiedOperator(): Promise<ProxiedOperator> {
    const proxy = await startKubeWriteProxy(cluster.kc);
    const process = spawnOperator(proxy.kubeconfig, namespace, IDENTITY, SETTINGS, command);
    const proxied = { proxy, process };
    started.push(proxied);
    operator = proxied;
    await eventually(
      () => assert.equal(process.logged('controllers started').length, 1, `not leading yet${output()}`),
      60_000,
      100,
    );
    return proxied;
  }

  /**
   * Both app definitions observed and Ready, the warm instance free and ready: the pool reconciler
   * has nothing left to write, so the writes counted next are the launch's.
   */
  async function assertPoolsSettled(): Promise<void> {
    for (const name of [EAGER_APP, LAZY_APP]) {
      const app = await r.appDefinitions.get(name);
      assert.equal(app.status?.observedGeneration, app.metadata.generation, `${name} observed`);
      assert.equal(findCondition(app.status?.conditions, 'Ready')?.status, 'True', `${name} Ready`);
    }
    assert.deepEqual((await r.appDefinitions.get(EAGER_APP)).status?.pool, { desired: 1, ready: 1 });
    assert.equal(await freeReadyInstances(cluster.kc, namespace, EAGER_APP), 1, 'the warm instance free and ready');
  }

  const poolsSettled = () => eventually(assertPoolsSettled, SETTLE_MS, 200);

  /** The free warm instance's pod, with a data-bridge stand-in on its address and its current token. */
  async function bridgeOnFreeInstance(): Promise<Bridge> {
    await poolsSettled();
    const ip = await eventually(
      async () => {
        const pods = (
          await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.poolInstance}=${INSTANCE}` })
        ).items.filter((p) => !p.metadata?.deletionTimestamp);
        // The recycled pod only: the one before it must be gone (it served the previous user).
        assert.equal(pods.length, 1, `pods of ${INSTANCE}: ${pods.map((p) => p.metadata?.name).join(', ')}`);
        const ready = (pods[0]!.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
        assert.ok(ready && pods[0]!.status?.podIP, 'the instance pod is ready');
        return pods[0]!.status!.podIP!;
      },
      SETTLE_MS,
      200,
    );
    await bridge?.close();
    bridge = await startBridge(ip, BRIDGE_PORT, { token: await bridgeToken(cluster.kc, namespace, INSTANCE) });
    return bridge;
  }

  /**
   * What every state, between launches or at their end, must satisfy: each warm instance held by one
   * existing, active session that names it; each object a session or a warm instance runs on owned by
   * an object that exists (the uid it names); each route naming an existing, not failed session and
   * pointing at its backend; a failed session holding nothing that runs or routes.
   */
  async function assertNothingLeaked(): Promise<void> {
    await assertRoutesLeadToTheirOwn();
    const sessions = new Map((await r.sessions.list()).map((s) => [s.metadata.name, s]));
    const owners = new Set<string>();
    for (const s of sessions.values()) owners.add(s.metadata.uid!);
    for (const a of await r.appDefinitions.list()) owners.add(a.metadata.uid!);
    for (const w of await r.workspaces.list()) owners.add(w.metadata.uid!);

    const deployments = (await apps.listNamespacedDeployment({ namespace })).items;
    // A warm instance's claim is owned by its Deployment until a workspace takes it.
    for (const d of deployments) owners.add(d.metadata!.uid!);
    const pool = deployments.filter((d) => d.metadata?.labels?.[LABELS.component] === COMPONENT.poolInstance);
    // Each instance's reservation is a Lease of its name, owned by it: whom it holds, if anyone.
    const reservations = await instanceReservations(cluster.kc, namespace);
    const reservationOf = (d: k8s.V1Deployment) => {
      const lease = reservations.get(d.metadata?.name ?? '');
      assert.ok(
        lease?.metadata?.ownerReferences?.some((o) => o.uid === d.metadata?.uid),
        `${d.metadata?.name} has a reservation of its own`,
      );
      assert.equal(
        d.metadata?.labels?.[LABELS.session],
        undefined,
        `${d.metadata?.name}: no session on the Deployment`,
      );
      assert.deepEqual(
        (d.metadata?.ownerReferences ?? []).filter((o) => o.kind === 'Session'),
        [],
      );
      return { holder: lease?.metadata?.labels?.[LABELS.session], uid: lease?.spec?.holderIdentity };
    };
    const holders = pool.map((d) => reservationOf(d).holder).filter((h): h is string => !!h);
    assert.equal(new Set(holders).size, holders.length, `an instance reserved twice: ${holders.join(', ')}`);
    for (const d of pool) {
      const { holder, uid } = reservationOf(d);
      if (!holder) {
        assert.equal(uid, undefined, `${d.metadata?.name} is free but names a session's uid`);
        continue;
      }
      const s = sessions.get(holder);
      assert.ok(s, `${d.metadata?.name} is reserved for ${holder}, which does not exist (leaked)`);
      assert.equal(
        uid,
        s.metadata.uid,
        `${d.metadata?.name} is reserved for its session ${holder}, the one that exists`,
      );
      assert.equal(s.status?.startStrategy, 'eager', `${holder} holds ${d.metadata?.name}`);
      assert.equal(s.status?.instanceId, d.metadata?.labels?.[LABELS.instanceId], `${holder}'s instanceId`);
      assert.ok(!isSessionFailed(s), `${holder} failed but still holds ${d.metadata?.name}`);
    }
    for (const s of sessions.values()) {
      if (s.status?.startStrategy === 'eager' && !isSessionFailed(s)) {
        const held = pool.filter((d) => reservationOf(d).holder === s.metadata.name);
        assert.equal(held.length, 1, `${s.metadata.name} is eager and holds one instance`);
      }
    }

    // Everything the operator made is owned by something that exists (the garbage collector removes
    // the rest): lazy sessions' pods, ReplicaSets, Deployments, Services, Secrets, ConfigMaps and claims alike.
    const services = (await core.listNamespacedService({ namespace })).items;
    const sessionPods = (
      await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.component}=${COMPONENT.session}` })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);
    const made = [
      ...sessionPods.map((o) => ['Pod', o] as const),
      ...(await apps.listNamespacedReplicaSet({ namespace })).items.map((o) => ['ReplicaSet', o] as const),
      ...deployments.map((o) => ['Deployment', o] as const),
      ...services.map((o) => ['Service', o] as const),
      ...(await core.listNamespacedSecret({ namespace })).items.map((o) => ['Secret', o] as const),
      ...(await core.listNamespacedConfigMap({ namespace })).items.map((o) => ['ConfigMap', o] as const),
      ...(await core.listNamespacedPersistentVolumeClaim({ namespace })).items.map((o) => ['Claim', o] as const),
      ...[...reservations.values()].map((o) => ['Lease', o] as const),
    ];
    for (const [kind, o] of made) {
      const labels = o.metadata?.labels ?? {};
      const session = labels[LABELS.session];
      if (!labels[LABELS.managedBy] && !session) continue;
      const refs = o.metadata?.ownerReferences ?? [];
      assert.ok(
        refs.some((ref) => owners.has(ref.uid)),
        `${kind} ${o.metadata?.name} has no owner that exists: ${JSON.stringify(refs.map((x) => `${x.kind}/${x.name}`))}`,
      );
      if (session && labels[LABELS.component] !== COMPONENT.poolInstance) {
        const s = sessions.get(session);
        assert.ok(s, `${kind} ${o.metadata?.name} belongs to ${session}, which does not exist`);
        assert.ok(
          refs.some((ref) => ref.kind === 'Session' && ref.uid === s.metadata.uid),
          `${kind} ${o.metadata?.name} is owned by its session ${session}`,
        );
        if (kind === 'Pod' || kind === 'ReplicaSet' || kind === 'Deployment' || kind === 'Service') {
          assert.ok(!isSessionFailed(s), `${kind} ${o.metadata?.name} still runs for the failed ${session}`);
        }
      }
    }

    const ingress = await net.readNamespacedIngress({ name: INGRESS, namespace }).catch(() => undefined);
    const paths = (ingress?.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []);
    const routed = new Set<string>();
    for (const p of paths) {
      const name = (p.path ?? '').split('/')[1] ?? '';
      const s = sessions.get(name);
      assert.ok(s, `route ${p.path} points at ${name}, which does not exist`);
      assert.ok(!routed.has(name), `${name} has two routes`);
      routed.add(name);
      assert.ok(!isSessionFailed(s), `route ${p.path} of the failed ${name}`);
      const backend =
        s.status?.startStrategy === 'eager'
          ? poolInstanceName(s.spec.appDefinition, Number(s.status.instanceId))
          : name;
      assert.equal(p.backend.service?.name, backend, `route of ${name}`);
      assert.ok(
        services.some((x) => x.metadata?.name === backend && !x.metadata.deletionTimestamp),
        `route of ${name} points at Service ${backend}, which does not exist`,
      );
      if (s.status?.url) assert.equal(p.path, new URL(s.status.url).pathname, `route of ${name} is its URL's`);
    }
    for (const s of sessions.values()) {
      if (running(s)) assert.ok(routed.has(s.metadata.name), `${s.metadata.name} runs without its route`);
    }
  }

  /**
   * What must hold at any moment, also the one a crash leaves: a route that leads to a warm instance
   * is that of the session holding it. A route left to a free instance would lead, once the next
   * session reserves it, from the last user's URL into the next user's IDE.
   */
  async function assertRoutesLeadToTheirOwn(): Promise<void> {
    const ingress = await net.readNamespacedIngress({ name: INGRESS, namespace }).catch(() => undefined);
    const paths = (ingress?.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []);
    const pool = (
      await apps.listNamespacedDeployment({ namespace, labelSelector: `${LABELS.component}=${COMPONENT.poolInstance}` })
    ).items;
    const reservations = await instanceReservations(cluster.kc, namespace);
    for (const p of paths) {
      const instance = pool.find((d) => d.metadata?.name === p.backend.service?.name);
      if (!instance) continue;
      const name = (p.path ?? '').split('/')[1];
      // The instance's own reservation (a Lease left by an earlier Deployment of the name is not).
      const reservation = reservations.get(instance.metadata!.name!);
      const own = reservation?.metadata?.ownerReferences?.some((o) => o.uid === instance.metadata?.uid);
      assert.equal(
        own ? reservation?.metadata?.labels?.[LABELS.session] : undefined,
        name,
        `route ${p.path} leads to ${instance.metadata?.name}, which ${name} no longer holds`,
      );
    }
  }

  /** Deletes the session and its workspace, as a user's stop and a course's end would. */
  async function removeLaunch(launch: Launch): Promise<void> {
    await r.sessions.delete(launch.session).catch(() => undefined);
    if (launch.workspace) await r.workspaces.delete(launch.workspace).catch(() => undefined);
  }

  /** Nothing of a deleted session and workspace is left, and the pool is whole and settled again. */
  async function assertCleanedUp({ session, workspace }: Launch): Promise<void> {
    assert.equal(await r.sessions.find(session), undefined, `${session} is gone`);
    if (workspace) assert.equal(await r.workspaces.find(workspace), undefined, `${workspace} is gone`);
    const selector = `${LABELS.session}=${session}`;
    const left = [
      ...(await core.listNamespacedPod({ namespace, labelSelector: selector })).items,
      ...(await apps.listNamespacedReplicaSet({ namespace, labelSelector: selector })).items,
      ...(await apps.listNamespacedDeployment({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedService({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedSecret({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items,
      ...(await coordination.listNamespacedLease({ namespace, labelSelector: selector })).items,
    ].map((o) => o.metadata?.name);
    assert.deepEqual(left, [], `what ${session} held is gone (the instance back in the pool)`);
    if (workspace) {
      const claims = await core.listNamespacedPersistentVolumeClaim({
        namespace,
        labelSelector: `${LABELS.workspace}=${workspace}`,
      });
      assert.deepEqual(
        claims.items.map((c) => c.metadata?.name),
        [],
        `${workspace}'s claim is gone`,
      );
    }
    const ingress = await net.readNamespacedIngress({ name: INGRESS, namespace }).catch(() => undefined);
    const paths = (ingress?.spec?.rules ?? []).flatMap((rule) => rule.http?.paths ?? []).map((p) => p.path);
    assert.deepEqual(
      paths.filter((p) => p?.startsWith(`/${session}/`)),
      [],
      `${session}'s route is gone`,
    );
    await assertPoolsSettled();
    await assertNothingLeaked();
  }

  const cleanedUp = (launch: Launch) => eventually(() => assertCleanedUp(launch), SETTLE_MS, 300);

  /** A launch the way the service makes it (a lazy one with its workspace). */
  interface Launch {
    session: string;
    workspace?: string;
    create(): Promise<void>;
    /** Throws until the launch has made all its writes. */
    assertLaunched(): Promise<void>;
  }

  /** A warm launch; with `workspace`, of that workspace (made before the session, as the service does). */
  function eagerLaunch(name: string, injected: Bridge, workspace?: string): Launch {
    const user = `${name}@example.com`;
    return {
      session: name,
      ...(workspace ? { workspace } : {}),
      // As the service makes it: with the operator's finalizer (a lazy launch here comes without it, as from kubectl).
      create: async () => {
        if (workspace)
          await r.workspaces.create({
            metadata: { name: workspace, annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
            spec: { user, appDefinition: EAGER_APP },
          });
        await r.sessions.create({
          metadata: {
            name,
            finalizers: [SESSION_FINALIZER],
            labels: { [LABELS.user]: userLabelValue(user), [LABELS.appDefinition]: EAGER_APP },
          },
          spec: { user, appDefinition: EAGER_APP, ...(workspace ? { workspace } : {}), envVars: { K: name } },
        });
      },
      assertLaunched: async () => {
        const s = await r.sessions.get(name);
        assert.ok(running(s), `${name} Running: ${JSON.stringify(s.status)}`);
        const env = findCondition(s.status?.conditions, SessionCondition.envInjected);
        assert.equal(env?.status, 'True', `${name}'s values injected`);
        // The values reached the instance once, whatever a kill interrupted.
        assert.deepEqual(injected.received, [{ environment: { K: name }, user }]);
        const app = await r.appDefinitions.get(EAGER_APP);
        assert.deepEqual(app.status?.pool, { desired: 1, ready: 1 }, 'the instance ready, reserved or not');
        assert.equal(findCondition(app.status?.conditions, 'Ready')?.status, 'True');
      },
    };
  }

  /**
   * A launch of a new workspace as the service makes it (the workspace marked as made by the launch):
   * the warm instance serves it as it is, and its claim becomes the workspace's.
   */
  function eagerWorkspaceLaunch(name: string, injected: Bridge): Launch {
    const workspace = `ws-${name}`;
    const warm = eagerLaunch(name, injected, workspace);
    return {
      ...warm,
      assertLaunched: async () => {
        await warm.assertLaunched();
        const s = await r.sessions.get(name);
        assert.equal(s.status?.startStrategy, 'eager', `${name} served by the warm instance`);
        const w = await r.workspaces.get(workspace);
        assert.equal(w.status?.phase, 'Bound', `${workspace} Bound`);
        const instance = await apps.readNamespacedDeployment({ name: INSTANCE, namespace });
        assert.equal(w.status?.claimName, instanceClaimName(instance), "the instance's claim is the workspace's");
        const pvc = await core.readNamespacedPersistentVolumeClaim({ name: w.status!.claimName!, namespace });
        assert.deepEqual(
          pvc.metadata?.ownerReferences?.map((o) => o.uid),
          [w.metadata.uid],
          `${workspace} owns its claim`,
        );
      },
    };
  }

  function lazyLaunch(name: string): Launch {
    const workspace = `ws-${name}`;
    const user = `${name}@example.com`;
    return {
      session: name,
      workspace,
      create: async () => {
        await r.workspaces.create({ metadata: { name: workspace }, spec: { user, appDefinition: LAZY_APP } });
        await createSession(r, name, { user, appDefinition: LAZY_APP, workspace, envVars: { K: name } });
      },
      assertLaunched: async () => {
        const s = await r.sessions.get(name);
        assert.ok(running(s), `${name} Running: ${JSON.stringify(s.status)}`);
        const env = findCondition(s.status?.conditions, SessionCondition.envInjected);
        assert.equal(env?.status, 'True', `${name}'s values in its Secret`);
        assert.equal((await r.workspaces.get(workspace)).status?.phase, 'Bound', `${workspace} Bound`);
      },
    };
  }

  const launched = (launch: Launch) =>
    eventually(
      async () => {
        try {
          await launch.assertLaunched();
        } catch (error) {
          throw new Error(`${(error as Error).message}${output()}`);
        }
      },
      SETTLE_MS,
      200,
    );

  /** What is counted and killed: a session's launch (from its creation), or its stop (from its deletion). */
  type Phase = 'launch' | 'stop';

  /** Launches undisturbed (and stops, for the stop phase): the writes the phase made, first to last. */
  async function countWrites(phase: Phase, launch: Launch): Promise<WriteRecord[]> {
    await poolsSettled();
    const { proxy } = operator!;
    let from = proxy.writes.length;
    await launch.create();
    await launched(launch);
    await assertNothingLeaked();
    if (phase === 'stop') from = proxy.writes.length;
    const launchWrites = proxy.writes.slice(from);
    await removeLaunch(launch);
    await cleanedUp(launch);
    return phase === 'launch' ? launchWrites : proxy.writes.slice(from);
  }

  /** A write as the same write of another launch: method and path with the launch's names taken out. */
  function signature(write: WriteRecord, launch: Launch): string {
    let p = write.path.replace(`/namespaces/${namespace}/`, '/namespaces/<namespace>/');
    if (launch.workspace) p = p.split(launch.workspace).join('<workspace>');
    // A warm instance's claims are named anew each time it returns to the pool.
    p = p.replace(/-work-[0-9a-f]{8}/g, '-work-<claim>');
    return `${write.method} ${p.split(launch.session).join('<session>')}`;
  }

  const describePoint = (phase: Phase, point: KillPoint) => `${phase} write ${point.signature} #${point.occurrence}`;

  /** Each write counted, as the n-th write of its signature (a status is written twice). */
  function killPoints(writes: readonly WriteRecord[], launch: Launch): KillPoint[] {
    const seen = new Map<string, number>();
    return writes.map((w) => {
      const sig = signature(w, launch);
      seen.set(sig, (seen.get(sig) ?? 0) + 1);
      return { signature: sig, occurrence: seen.get(sig)!, applied: (w.status ?? 500) < 300 };
    });
  }

  /**
   * Makes the phase again and kills the operator right after its write `point`, then starts a fresh
   * operator process. A launch must end Running with nothing leaked, and be cleaned up once deleted;
   * a stop must clean up everything. A write the phase does not always make (one more status write)
   * may not come: the launch is then cleaned up and made again, a few times. Whether the kill ran is
   * the answer: the run fails unless every kill point did (killEachPoint).
   */
  async function crashAt(
    phase: Phase,
    point: KillPoint,
    makeLaunch: (attempt: number) => Promise<Launch>,
  ): Promise<boolean> {
    const what = describePoint(phase, point);
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const launch = await makeLaunch(attempt);
      await poolsSettled();
      if (phase === 'stop') {
        await launch.create();
        await launched(launch);
      }
      const victim = operator!;
      let seen = 0;
      let hit: WriteRecord | undefined;
      const killed = victim.proxy
        .killAfterWrite(
          (w) => signature(w, launch) === point.signature && ++seen === point.occurrence,
          () => victim.process.kill('SIGKILL'),
        )
        .then((w) => void (hit = w));
      const finished = phase === 'launch' ? () => launch.assertLaunched() : () => assertCleanedUp(launch);
      await (phase === 'launch' ? launch.create() : removeLaunch(launch));
      await eventually(async () => hit ?? (await finished()), SETTLE_MS, 200);
      if (!hit && !victim.proxy.disarm()) await killed;
      if (!hit) {
        kills.push(`${launch.session}: ${what} did not come (${seen} of its kind)`);
        await removeLaunch(launch);
        await cleanedUp(launch);
        continue;
      }
      assert.equal(victim.process.child.signalCode, 'SIGKILL', 'a real kill');
      kills.push(`${launch.session}: killed after ${what} (${hit.status})`);
      await assertRoutesLeadToTheirOwn();
      await victim.proxy.close();
      await startProxiedOperator();

      if (phase === 'launch') {
        const s = await eventually(
          async () => {
            const current = await r.sessions.get(launch.session);
            assert.ok(settled(current), `${launch.session} not settled: ${JSON.stringify(current.status)}${output()}`);
            return current;
          },
          SETTLE_MS,
          200,
        );
        await eventually(assertNothingLeaked, SETTLE_MS, 300);
        assert.ok(running(s), `${launch.session} ends Running: ${JSON.stringify(s.status)}`);
        await launched(launch);
        await removeLaunch(launch);
      }
      await cleanedUp(launch);
      return true;
    }
    return false;
  }

  /**
   * Kills at each write of the counted phase in turn (crashAt), then fails naming every kill point
   * whose write never came: a kill point left out is a crash the run did not test. The kill points
   * are the writes of the count that a second count (`recount`) made too; a write made in one count
   * only is not always made, which only a repeat (a status written again on a later pass) or a write
   * the API server refused (a 404 of two removing one route) may be.
   */
  async function killEachPoint(
    phase: Phase,
    counted: { launch: Launch; writes: readonly WriteRecord[] },
    makeLaunch: (suffix: string) => Promise<Launch>,
  ): Promise<void> {
    const recounted = await makeLaunch('recount');
    const key = (p: KillPoint) => `${p.signature} #${p.occurrence}`;
    const again = new Set(killPoints(await countWrites(phase, recounted), recounted).map(key));
    const countedPoints = killPoints(counted.writes, counted.launch);
    const points: KillPoint[] = [];
    for (const point of countedPoints) {
      if (again.has(key(point))) {
        points.push(point);
        continue;
      }
      kills.push(`${counted.launch.session}: ${describePoint(phase, point)} not in the recount, no kill point`);
      assert.ok(point.occurrence > 1 || !point.applied, `${describePoint(phase, point)} not made again by the recount`);
    }
    // A write made again after the API server refused a write since its last one, or refused itself (a
    // 409 of a race with another write and the pass's writes retried from there; a 404 of a second pass
    // that raced the object's deletion), comes only when that race does: it is tried, but need not come.
    const index = new Map(countedPoints.map((p, i) => [key(p), i]));
    const retryAfterRefusal = (p: KillPoint) => {
      const previous = index.get(`${p.signature} #${p.occurrence - 1}`);
      const at = index.get(key(p))!;
      return previous !== undefined && countedPoints.slice(previous, at + 1).some((q) => !q.applied);
    };
    const missed: string[] = [];
    for (const [i, point] of points.entries()) {
      if (!(await crashAt(phase, point, (attempt) => makeLaunch(`${i + 1}-${attempt}`)))) {
        if (retryAfterRefusal(point)) kills.push(`${describePoint(phase, point)}: its race did not recur, no kill`);
        else missed.push(describePoint(phase, point));
      }
    }
    assert.deepEqual(
      missed,
      [],
      `${missed.length} of ${points.length} kill points never came in ${ATTEMPTS} launches:\n      ${missed.join('\n      ')}`,
    );
  }

  before(async () => {
    [cluster, command] = await Promise.all([useCluster(), bundledOperator()]);
    namespace = await createTestNamespace(cluster.kc, 'op-crash');
    r = ideCloudResources(cluster.kc, namespace);
    apps = cluster.kc.makeApiClient(k8s.AppsV1Api);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    net = cluster.kc.makeApiClient(k8s.NetworkingV1Api);
    coordination = cluster.kc.makeApiClient(k8s.CoordinationV1Api);
    await createAppDefinition(r, EAGER_APP, {
      minInstances: 1,
      maxInstances: null,
      options: { dataBridgeEnabled: 'true', dataBridgePort: String(BRIDGE_PORT) },
    });
    // No warm pool: every launch is lazy, with the objects a lazy launch can make.
    await createAppDefinition(r, LAZY_APP, {
      minInstances: 0,
      maxInstances: null,
      options: { configStore: 'true' },
      sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
    });
    await startProxiedOperator();
  });
  after(async () => {
    if (kills.length > 0) console.log(`    kills:\n      ${kills.join('\n      ')}`);
    await cleanUpSuite(cluster.kc, namespace, operator ? [operator.process] : []);
    for (const o of started) {
      await o.process.kill('SIGKILL');
      await o.proxy.close();
    }
    await bridge?.close();
  });

  for (const phase of ['launch', 'stop'] as const) {
    it(`eager ${phase} (a warm instance claimed): SIGKILLed after each of its writes and restarted, nothing held twice, leaked or unowned`, async () => {
      const counted = eagerLaunch(`eager-${phase}-count`, await bridgeOnFreeInstance());
      const writes = await countWrites(phase, counted);
      log(`eager ${phase} writes`, writes);
      assert.ok(writes.length >= 4, `the ${phase}'s writes were counted: ${writes.length}`);
      if (phase === 'launch') assertWarmLaunchOrder(killPoints(writes, counted).map((p) => p.signature));
      await killEachPoint(phase, { launch: counted, writes }, async (suffix) =>
        eagerLaunch(`eager-${phase}-${suffix}`, await bridgeOnFreeInstance()),
      );
    });

    it(`eager ${phase} of a new workspace (the warm instance's claim taken over): SIGKILLed after each of its writes and restarted, no claim lost, given twice or leaked`, async () => {
      const counted = eagerWorkspaceLaunch(`eager-ws-${phase}-count`, await bridgeOnFreeInstance());
      const writes = await countWrites(phase, counted);
      log(`eager ${phase} of a new workspace writes`, writes);
      assert.ok(writes.length >= 5, `the ${phase}'s writes were counted: ${writes.length}`);
      await killEachPoint(phase, { launch: counted, writes }, async (suffix) =>
        eagerWorkspaceLaunch(`eager-ws-${phase}-${suffix}`, await bridgeOnFreeInstance()),
      );
    });

    it(`lazy ${phase} (workspace, config store, sidecar): SIGKILLed after each of its writes and restarted, nothing leaked or unowned`, async () => {
      const counted = lazyLaunch(`lazy-${phase}-count`);
      const writes = await countWrites(phase, counted);
      log(`lazy ${phase} writes`, writes);
      assert.ok(writes.length >= 3, `the ${phase}'s writes were counted: ${writes.length}`);
      await killEachPoint(phase, { launch: counted, writes }, async (suffix) => lazyLaunch(`lazy-${phase}-${suffix}`));
    });
  }
});

/**
 * A warm launch of a session created with the finalizer: the claim, the route and the status that
 * carries the URL, and only after that status the session's metadata (its decision's annotations),
 * once; nothing of the lazy path, nothing of the app definition (a reservation changes none of its
 * pool's counts).
 */
function assertWarmLaunchOrder(signatures: readonly string[]): void {
  assert.deepEqual(
    signatures.filter((s) => s.includes('/appdefinitions/')),
    [],
    'no write of the app definition',
  );
  const first = (sig: string) => signatures.findIndex((s) => s.startsWith(sig));
  // The claim: a replace of the instance's reservation (its Lease).
  const claim = first(`PUT /apis/coordination.k8s.io/v1/namespaces/<namespace>/leases/${INSTANCE}`);
  // The Ingress created with the route (the first) or the route appended to it.
  const route = signatures.findIndex((s) =>
    /^(POST|PATCH) \/apis\/networking\.k8s\.io\/v1\/namespaces\/<namespace>\/ingresses/.test(s),
  );
  const status = first(`PATCH /apis/${API_VERSION}/namespaces/<namespace>/sessions/<session>/status`);
  const metadata = signatures.indexOf(`PATCH /apis/${API_VERSION}/namespaces/<namespace>/sessions/<session>`);
  const order = signatures.join('\n      ');
  assert.ok(claim >= 0 && route > claim && status > route, `claim, route, then status:\n      ${order}`);
  assert.ok(metadata > status, `the session's metadata after its first status write:\n      ${order}`);
  assert.equal(
    signatures.filter((s) => s === signatures[metadata]).length,
    1,
    `the session's metadata written once:\n      ${order}`,
  );
  assert.equal(
    signatures.length,
    signatures.filter((s) => s === signatures[status]).length + 3,
    `claim, route, metadata and status only:\n      ${order}`,
  );
}

function log(title: string, writes: readonly WriteRecord[]): void {
  console.log(`    ${title}:\n      ${writes.map((w) => `${w.method} ${w.path} → ${w.status}`).join('\n      ')}`);
}

// Crashes that are real kills: the operator runs as its own process behind a proxy that counts its
// writes (test/support/kube-write-proxy.ts). One undisturbed eager launch (a warm instance claimed)
// and one lazy launch (workspace, config store, sidecar) are counted first; then, for each write N of
// that launch, a new launch is made, the operator is SIGKILLed once write N has reached the API server
// and before it got the answer, a fresh operator process is started, and the session must end Running
// (or Failed with a reason) with nothing held twice, leaked or left without an owner, and deleting it
// must clean up everything it held.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { findCondition } from '../../server/src/model/conditions.js';
import { SessionCondition, isSessionFailed, type Session } from '../../server/src/model/session.js';
import type { OperatorConfigInput } from '../../server/src/operator/config.js';
import { COMPONENT, poolInstanceName } from '../../server/src/operator/manifests.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { startKubeWriteProxy, type KubeWriteProxy, type WriteRecord } from '../support/kube-write-proxy.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import {
  bridgeToken,
  cleanUpSuite,
  createAppDefinition,
  createSession,
  ideCloudResources,
  running,
  spawnOperator,
  startBridge,
  type Bridge,
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
}

/** Running, or Failed with a reason a person can read. */
const settled = (s: Session) =>
  running(s) || (isSessionFailed(s) && !!s.status?.error?.reason && !!s.status.error.code);

interface ProxiedOperator {
  proxy: KubeWriteProxy;
  process: OperatorProcess;
}

describe('operator: SIGKILLed after each write of a launch, then restarted', function () {
  this.timeout(1_200_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let apps: k8s.AppsV1Api;
  let core: k8s.CoreV1Api;
  let net: k8s.NetworkingV1Api;
  let operator: ProxiedOperator | undefined;
  const started: ProxiedOperator[] = [];
  let bridge: Bridge | undefined;
  /** What each kill hit, for the failure messages and the run's log. */
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
    const process = spawnOperator(proxy.kubeconfig, namespace, IDENTITY, SETTINGS);
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

  /** The free warm instance's pod, with a data-bridge stand-in on its address and its current token. */
  async function bridgeOnFreeInstance(): Promise<Bridge> {
    await eventually(
      async () => {
        const app = await r.appDefinitions.get(EAGER_APP);
        assert.deepEqual(app.status?.pool, { desired: 1, ready: 1, reserved: 0 });
        assert.equal(findCondition(app.status?.conditions, 'Ready')?.status, 'True');
      },
      SETTLE_MS,
      200,
    );
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
    const sessions = new Map((await r.sessions.list()).map((s) => [s.metadata.name, s]));
    const owners = new Set<string>();
    for (const s of sessions.values()) owners.add(s.metadata.uid!);
    for (const a of await r.appDefinitions.list()) owners.add(a.metadata.uid!);
    for (const w of await r.workspaces.list()) owners.add(w.metadata.uid!);

    const deployments = (await apps.listNamespacedDeployment({ namespace })).items;
    const pool = deployments.filter((d) => d.metadata?.labels?.[LABELS.component] === COMPONENT.poolInstance);
    const holders = pool.map((d) => d.metadata?.labels?.[LABELS.session]).filter((h): h is string => !!h);
    assert.equal(new Set(holders).size, holders.length, `an instance reserved twice: ${holders.join(', ')}`);
    for (const d of pool) {
      const holder = d.metadata?.labels?.[LABELS.session];
      const sessionOwners = (d.metadata?.ownerReferences ?? []).filter((o) => o.kind === 'Session');
      if (!holder) {
        assert.deepEqual(sessionOwners, [], `${d.metadata?.name} is free but owned by a session`);
        continue;
      }
      const s = sessions.get(holder);
      assert.ok(s, `${d.metadata?.name} is reserved for ${holder}, which does not exist (leaked)`);
      assert.deepEqual(
        sessionOwners.map((o) => o.uid),
        [s.metadata.uid],
        `${d.metadata?.name} is owned by its session ${holder}, the one that exists`,
      );
      assert.equal(s.status?.startStrategy, 'eager', `${holder} holds ${d.metadata?.name}`);
      assert.equal(s.status?.instanceId, d.metadata?.labels?.[LABELS.instanceId], `${holder}'s instanceId`);
      assert.ok(!isSessionFailed(s), `${holder} failed but still holds ${d.metadata?.name}`);
    }
    for (const s of sessions.values()) {
      if (s.status?.startStrategy === 'eager' && !isSessionFailed(s)) {
        const held = pool.filter((d) => d.metadata?.labels?.[LABELS.session] === s.metadata.name);
        assert.equal(held.length, 1, `${s.metadata.name} is eager and holds one instance`);
      }
    }

    // Everything the operator made is owned by something that exists (the garbage collector removes
    // the rest): Deployments, Services, Secrets, ConfigMaps and claims alike.
    const made = [
      ...deployments.map((o) => ['Deployment', o] as const),
      ...(await core.listNamespacedService({ namespace })).items.map((o) => ['Service', o] as const),
      ...(await core.listNamespacedSecret({ namespace })).items.map((o) => ['Secret', o] as const),
      ...(await core.listNamespacedConfigMap({ namespace })).items.map((o) => ['ConfigMap', o] as const),
      ...(await core.listNamespacedPersistentVolumeClaim({ namespace })).items.map((o) => ['Claim', o] as const),
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
        if (kind === 'Deployment' || kind === 'Service') {
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
      if (s.status?.url) assert.equal(p.path, new URL(s.status.url).pathname, `route of ${name} is its URL's`);
    }
    for (const s of sessions.values()) {
      if (running(s)) assert.ok(routed.has(s.metadata.name), `${s.metadata.name} runs without its route`);
    }
  }

  /** Once the session and its workspace are deleted, nothing of theirs is left, and the pool is whole. */
  async function assertCleanedUp(session: string, workspace?: string): Promise<void> {
    await r.sessions.delete(session).catch(() => undefined);
    if (workspace) await r.workspaces.delete(workspace).catch(() => undefined);
    await eventually(
      async () => {
        assert.equal(await r.sessions.find(session), undefined, `${session} is gone`);
        if (workspace) assert.equal(await r.workspaces.find(workspace), undefined, `${workspace} is gone`);
        const selector = `${LABELS.session}=${session}`;
        const left = [
          ...(await apps.listNamespacedDeployment({ namespace, labelSelector: selector })).items,
          ...(await core.listNamespacedService({ namespace, labelSelector: selector })).items,
          ...(await core.listNamespacedSecret({ namespace, labelSelector: selector })).items,
          ...(await core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items,
        ].map((o) => `${o.kind ?? ''} ${o.metadata?.name}`);
        assert.deepEqual(left, [], `what ${session} held is gone`);
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
        const instance = await apps.readNamespacedDeployment({ name: INSTANCE, namespace });
        assert.equal(instance.metadata?.labels?.[LABELS.session], undefined, `${INSTANCE} is back in the pool`);
        assert.deepEqual((await r.appDefinitions.get(EAGER_APP)).status?.pool, { desired: 1, ready: 1, reserved: 0 });
        await assertNothingLeaked();
      },
      SETTLE_MS,
      300,
    );
  }

  /** A launch the way the service makes it; `done` tells when the launch has made all its writes. */
  interface Launch {
    session: string;
    workspace?: string;
    create(): Promise<void>;
    done(): Promise<boolean>;
    /** What must hold once the launch ended (beyond the invariants of every state). */
    verify?(): Promise<void>;
  }

  function eagerLaunch(name: string, injected: Bridge): Launch {
    return {
      session: name,
      create: async () => {
        await createSession(r, name, { user: `${name}@example.com`, appDefinition: EAGER_APP, envVars: { K: name } });
      },
      done: async () => {
        const s = await r.sessions.get(name);
        const app = await r.appDefinitions.get(EAGER_APP);
        return (
          running(s) &&
          findCondition(s.status?.conditions, SessionCondition.envInjected)?.status === 'True' &&
          injected.received.length === 1 &&
          app.status?.pool?.reserved === 1
        );
      },
      verify: async () => {
        assert.deepEqual(injected.received, [{ environment: { K: name }, user: `${name}@example.com` }]);
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
      done: async () => {
        const s = await r.sessions.get(name);
        const w = await r.workspaces.get(workspace);
        return (
          running(s) &&
          findCondition(s.status?.conditions, SessionCondition.envInjected)?.status === 'True' &&
          w.status?.phase === 'Bound'
        );
      },
    };
  }

  /** An undisturbed launch: the writes it made, from its first to its last. */
  async function countWrites(launch: Launch): Promise<WriteRecord[]> {
    const { proxy } = operator!;
    const from = proxy.writes.length;
    await launch.create();
    await eventually(
      async () => assert.ok(await launch.done(), `${launch.session} not launched yet${output()}`),
      SETTLE_MS,
      200,
    );
    await assertNothingLeaked();
    const writes = proxy.writes.slice(from);
    await assertCleanedUp(launch.session, launch.workspace);
    return writes;
  }

  /** A write as the same write of another launch: method and path with the launch's names taken out. */
  function signature(write: WriteRecord, launch: Launch): string {
    let p = write.path.replace(`/namespaces/${namespace}/`, '/namespaces/<namespace>/');
    if (launch.workspace) p = p.split(launch.workspace).join('<workspace>');
    return `${write.method} ${p.split(launch.session).join('<session>')}`;
  }

  /** Each write of the counted launch, as the n-th write of its signature (a status is written twice). */
  function killPoints(writes: readonly WriteRecord[], launch: Launch): KillPoint[] {
    const seen = new Map<string, number>();
    return writes.map((w) => {
      const sig = signature(w, launch);
      seen.set(sig, (seen.get(sig) ?? 0) + 1);
      return { signature: sig, occurrence: seen.get(sig)! };
    });
  }

  /**
   * Launches, kills the operator right after the launch's write `point`, starts a fresh operator, and
   * checks that the session ends settled with nothing leaked and that its deletion cleans everything
   * up. A write the launch does not always make (one more status write) may not come: the launch is
   * then cleaned up and made again, a few times.
   */
  async function crashAt(point: KillPoint, makeLaunch: (attempt: number) => Promise<Launch>): Promise<void> {
    const what = `${point.signature} #${point.occurrence}`;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const launch = await makeLaunch(attempt);
      const victim = operator!;
      let seen = 0;
      let hit: WriteRecord | undefined;
      const killed = victim.proxy
        .killAfterWrite(
          (w) => signature(w, launch) === point.signature && ++seen === point.occurrence,
          () => victim.process.kill('SIGKILL'),
        )
        .then((w) => void (hit = w));
      await launch.create();
      await eventually(
        async () => hit ?? assert.ok(await launch.done(), `${launch.session}: neither killed nor launched${output()}`),
        SETTLE_MS,
        200,
      );
      if (!hit && !victim.proxy.disarm()) await killed;
      if (!hit) {
        kills.push(`${launch.session}: ${what} did not come (${seen} of its kind)`);
        await assertCleanedUp(launch.session, launch.workspace);
        continue;
      }
      assert.equal(victim.process.child.signalCode, 'SIGKILL', 'a real kill');
      kills.push(`${launch.session}: killed after ${what}: ${hit.method} ${hit.path} → ${hit.status}`);
      await victim.proxy.close();
      await startProxiedOperator();

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
      // The launch ends whole: the values reached the instance once, whatever the kill interrupted.
      await eventually(
        async () => assert.ok(await launch.done(), `${launch.session} did not end its launch${output()}`),
        SETTLE_MS,
        200,
      );
      await launch.verify?.();
      await assertCleanedUp(launch.session, launch.workspace);
      return;
    }
    assert.fail(`${what} never came in ${ATTEMPTS} launches`);
  }

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'op-crash');
    r = ideCloudResources(cluster.kc, namespace);
    apps = cluster.kc.makeApiClient(k8s.AppsV1Api);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    net = cluster.kc.makeApiClient(k8s.NetworkingV1Api);
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

  it('eager launch (a warm instance claimed): killed after each of its writes, it ends Running with nothing held twice or leaked', async () => {
    const counted = eagerLaunch('eager-count', await bridgeOnFreeInstance());
    const writes = await countWrites(counted);
    log('eager launch writes', writes);
    assert.ok(writes.length >= 4, `the launch's writes were counted: ${writes.length}`);
    const points = killPoints(writes, counted);
    for (const [i, point] of points.entries()) {
      await crashAt(point, async (attempt) => eagerLaunch(`eager-${i + 1}-${attempt}`, await bridgeOnFreeInstance()));
    }
  });

  it('lazy launch (workspace, config store, sidecar): killed after each of its writes, it ends Running with nothing left without an owner', async () => {
    const counted = lazyLaunch('lazy-count');
    const writes = await countWrites(counted);
    log('lazy launch writes', writes);
    assert.ok(writes.length >= 8, `the launch's writes were counted: ${writes.length}`);
    const points = killPoints(writes, counted);
    for (const [i, point] of points.entries()) {
      await crashAt(point, async (attempt) => lazyLaunch(`lazy-${i + 1}-${attempt}`));
    }
  });
});

function log(title: string, writes: readonly WriteRecord[]): void {
  console.log(`    ${title}:\n      ${writes.map((w) => `${w.method} ${w.path} → ${w.status}`).join('\n      ')}`);
}

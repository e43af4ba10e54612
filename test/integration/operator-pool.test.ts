// The warm pool (operator.eagerStart on): every row of the spec's pool table, data injection into a
// bridge served on the instance pod's own address, generation tracking.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { SESSION_ENV_LABEL } from '../../server/src/model/session-env.js';
import { ANNOTATIONS, LABELS } from '../../server/src/model/api-group.js';
import { instanceClaimName } from '../../server/src/operator/manifests.js';
import { eventually } from '../support/kube.js';
import { sessionUrlPattern } from '../support/landing.js';
import {
  appDefinitionSpec,
  createSession,
  FAST,
  bridgeToken,
  instanceHolder,
  instanceReservations,
  lazySessionPod,
  readyPodIp,
  running,
  startBridge,
  waitForSession,
  type Bridge,
} from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'python-latest';
const poolSelector = `${LABELS.component}=pool-instance,${LABELS.appDefinition}=${APP}`;

describe('operator: warm pool and eager start', function () {
  const stack = useStack('op-pool', {
    apps: [appDefinitionSpec(APP, { minInstances: 2, maxInstances: 20 })],
    operator: { eagerStart: true, sessionsPerUser: 10 },
    operatorLogs: true,
  });
  this.timeout(300_000);
  const bridges: Bridge[] = [];

  async function instances() {
    const list = await stack.apps.listNamespacedDeployment({ namespace: stack.namespace, labelSelector: poolSelector });
    return list.items
      .filter((d) => !d.metadata?.deletionTimestamp)
      .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  }

  /** The claim a warm instance mounts at the work folder. */
  const claimOf = (d: k8s.V1Deployment): string => instanceClaimName(d)!;

  /** Pod uid of each warm instance (its one live pod). */
  async function instancePods(): Promise<Map<string, string>> {
    const pods = await stack.core.listNamespacedPod({
      namespace: stack.namespace,
      labelSelector: `${LABELS.component}=pool-instance`,
    });
    return new Map(
      pods.items
        .filter((p) => !p.metadata?.deletionTimestamp)
        .map((p) => [p.metadata!.labels![LABELS.poolInstance]!, p.metadata!.uid!]),
    );
  }

  async function poolStatus() {
    return (await stack.resources.appDefinitions.get(APP)).status?.pool;
  }

  stack.cleanUp(() => Promise.all(bridges.map((b) => b.close())));

  it('keeps minInstances generic instances with the data bridge on, labelled with the generation', async () => {
    await eventually(async () => assert.deepEqual(await poolStatus(), { desired: 2, ready: 2 }), 60_000);
    const list = await instances();
    assert.deepEqual(
      list.map((d) => d.metadata?.name),
      ['python-latest-pool-1', 'python-latest-pool-2'],
    );
    const generation = String((await stack.resources.appDefinitions.get(APP)).metadata.generation);
    for (const d of list) {
      assert.equal(d.metadata?.annotations?.[ANNOTATIONS.appDefinitionGeneration], generation);
      const ide = d.spec!.template.spec!.containers[0]!;
      assert.equal(ide.name, APP);
      const env = Object.fromEntries((ide.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
      assert.deepEqual(JSON.parse(JSON.stringify(env)), {
        DATA_BRIDGE_ENABLED: 'true',
        DATA_BRIDGE_PORT: '16281',
        // The token the operator authenticates to the bridge with, by reference only.
        DATA_BRIDGE_TOKEN: { secretKeyRef: { name: `${d.metadata!.name}-bridge`, key: 'token' } },
        SESSION_ENV_STRATEGY: 'data-bridge',
        WORKSPACE_DIR: '/home/ide/workspace',
      });
      // The work folder on a claim of the instance's own, from the start.
      assert.equal(ide.volumeMounts?.find((m) => m.name === 'workspace')?.mountPath, '/home/ide/workspace');
      const claim = await stack.core.readNamespacedPersistentVolumeClaim({
        name: claimOf(d),
        namespace: stack.namespace,
      });
      assert.deepEqual(
        claim.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
        [['Deployment', d.metadata!.name, d.metadata!.uid]],
      );
      assert.equal(d.metadata?.ownerReferences?.[0]?.kind, 'AppDefinition');
      // The labels the chart's NetworkPolicies select, on the pod template; the selector stays `app`.
      assert.equal(d.spec!.template.metadata?.labels?.[LABELS.component], 'pool-instance');
      assert.equal(d.spec!.template.metadata?.labels?.[LABELS.managedBy], 'ide-cloud-operator');
      assert.deepEqual(d.spec!.selector.matchLabels, { app: d.metadata!.name });
    }
  });

  it('reserves a free instance: annotations, ownership, route, URL, and injects the environment into the bridge', async () => {
    for (const d of await instances()) {
      const ip = await readyPodIp(stack.kc, stack.namespace, `${LABELS.poolInstance}=${d.metadata!.name}`);
      const token = await bridgeToken(stack.kc, stack.namespace, d.metadata!.name!);
      // The first post is also the bridge's first health check: a refused one brings a health check,
      // then the posts, the first of which is refused too and tried again.
      bridges.push(await startBridge(ip, 16281, { token, failPosts: 2 }));
    }
    await stack.core.createNamespacedConfigMap({
      namespace: stack.namespace,
      body: {
        metadata: { name: 'course', labels: { [SESSION_ENV_LABEL]: 'true' } },
        data: { GIT_MAIL: 'a@example.com', COURSE: 'cm' },
      },
    });
    await stack.core.createNamespacedSecret({
      namespace: stack.namespace,
      body: {
        metadata: { name: 'token', labels: { [SESSION_ENV_LABEL]: 'true' } },
        stringData: { PLATFORM_TOKEN: 'tok-123', COURSE: 'secret-wins' },
      },
    });
    const created = await createSession(stack.resources, 'eager-1', {
      user: 'erin@example.com',
      appDefinition: APP,
      envVars: { GIT_USER: 'erin', COURSE: 'direct' },
      envVarsFromConfigMaps: ['course'],
      envVarsFromSecrets: ['token'],
    });
    // The decision's annotations come after the status that carries the URL.
    const session = await waitForSession(
      stack.resources,
      'eager-1',
      (s) => running(s) && !!s.metadata.annotations?.[ANNOTATIONS.instanceId],
    );
    assert.equal(session.status?.startStrategy, 'eager');
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.startStrategy], 'eager');
    const id = session.metadata.annotations?.[ANNOTATIONS.instanceId];
    assert.ok(id === '1' || id === '2');
    assert.equal(session.status?.instanceId, id);
    assert.match(session.status!.url!, sessionUrlPattern('eager-1'));

    // The claim is the instance's reservation: its Lease names the session and its uid.
    const leases = stack.kc.makeApiClient(k8s.CoordinationV1Api);
    const reservation = await leases.readNamespacedLease({ name: `${APP}-pool-${id}`, namespace: stack.namespace });
    assert.equal(reservation.metadata?.labels?.[LABELS.session], 'eager-1');
    assert.equal(reservation.spec?.holderIdentity, created.metadata.uid);
    // The Deployment is not touched: no session of its own, no new generation, no rollout, no wait
    // for the deployment controller.
    const instance = await stack.apps.readNamespacedDeployment({
      name: `${APP}-pool-${id}`,
      namespace: stack.namespace,
    });
    assert.equal(instance.metadata?.labels?.[LABELS.session], undefined);
    assert.equal(instance.metadata?.generation, 1);
    assert.ok(!instance.metadata?.ownerReferences?.some((o) => o.kind === 'Session'));
    assert.ok(
      reservation.metadata?.ownerReferences?.some((o) => o.kind === 'Deployment' && o.uid === instance.metadata?.uid),
      'the reservation goes with its instance',
    );
    // The claim cleared the API server's record of field ownership (instances.ts, clearFieldRecord),
    // which the free instance's reservation still has.
    assert.equal(reservation.metadata?.managedFields, undefined);
    const free = await leases.readNamespacedLease({
      name: `${APP}-pool-${id === '1' ? '2' : '1'}`,
      namespace: stack.namespace,
    });
    assert.equal(free.metadata?.labels?.[LABELS.session], undefined);
    assert.ok((free.metadata?.managedFields ?? []).length > 0, "a free instance's reservation has its record");
    const ingress = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
    const paths = ingress.spec!.rules!.flatMap((rule) =>
      rule.http!.paths.map((p) => [p.path, p.backend.service?.name]),
    );
    assert.deepEqual(paths, [[new URL(session.status!.url!).pathname, `${APP}-pool-${id}`]]);

    const injected = await waitForSession(stack.resources, 'eager-1', (s) =>
      (s.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
    );
    const condition = injected.status!.conditions!.find((c) => c.type === 'EnvInjected')!;
    assert.match(condition.message ?? '', /health checks 2\/\d+, posts 2$/);
    const bodies = bridges.flatMap((b) => b.received);
    assert.deepEqual(bodies, [
      {
        environment: { GIT_USER: 'erin', COURSE: 'secret-wins', GIT_MAIL: 'a@example.com', PLATFORM_TOKEN: 'tok-123' },
        user: 'erin@example.com',
      },
    ]);
    assert.deepEqual(
      bridges.flatMap((b) => b.refused),
      [],
      'the operator sent the token and the reservation',
    );
    assert.ok(!JSON.stringify(injected.status).includes('tok-123'));
    // A warm launch that goes well records no Event (even one whose values took a second post): its
    // conditions tell its steps, in the status writes it makes anyway.
    const events = await stack.core.listNamespacedEvent({
      namespace: stack.namespace,
      fieldSelector: 'involvedObject.kind=Session,involvedObject.name=eager-1',
    });
    assert.deepEqual(
      events.items.map((e) => [e.reason, e.type, e.count]),
      [],
    );
    assert.ok(!JSON.stringify(events.items.map((e) => e.message)).includes('tok-123'));
    assert.ok(stack.operatorLogs.length > 0, 'the operator logged');
    assert.ok(!stack.operatorLogs.join('').includes('tok-123'), 'the injected token is not in the operator logs');
    await eventually(async () => assert.deepEqual(await poolStatus(), { desired: 2, ready: 2 }));
  });

  it('returns the instance to the pool when the session ends (id within minInstances), with a fresh pod', async () => {
    const session = await stack.resources.sessions.get('eager-1');
    const name = `${APP}-pool-${session.status!.instanceId}`;
    const before = await stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
    await stack.resources.sessions.delete('eager-1');
    await eventually(async () => {
      const after = await stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
      assert.equal(after.metadata?.uid, before.metadata?.uid, 'same instance');
      // A fresh claim; the last user's goes with their files (no workspace took it).
      assert.notEqual(claimOf(after), claimOf(before));
      const old = await stack.core
        .readNamespacedPersistentVolumeClaim({ name: claimOf(before), namespace: stack.namespace })
        .catch(() => undefined);
      assert.ok(!old || old.metadata?.deletionTimestamp, "the ended session's claim goes");
      assert.equal(await instanceHolder(stack.kc, stack.namespace, name), '', 'its own reservation, free');
      assert.ok(after.spec?.template.metadata?.annotations?.['ide-cloud.io/recycled-at'], 'pod restarted');
    }, 30_000);
    await eventually(async () => assert.deepEqual(await poolStatus(), { desired: 2, ready: 2 }), 30_000);
    // Its pod restarted and the controller manager wrote the Deployment's status: no record started
    // again. (The return clears it too: for an instance an operator before the change claimed.)
    const returned = await stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
    assert.ok((returned.status?.observedGeneration ?? 0) > (before.status?.observedGeneration ?? 0));
    assert.equal(returned.metadata?.managedFields, undefined);
    const ingress = await stack.net
      .readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace })
      .catch(() => undefined);
    assert.ok(!JSON.stringify(ingress?.spec ?? {}).includes('/eager-1/'));
  });

  it("serves a launch's new workspace from a warm instance as it is: the instance's claim becomes the workspace's", async () => {
    // Earlier bridges go first: the restarted pod may get a former pod's address, and one still
    // listening there would take the values.
    await Promise.all(bridges.splice(0).map((b) => b.close()));
    await eventually(async () => assert.deepEqual(await poolStatus(), { desired: 2, ready: 2 }), 30_000);
    const podsBefore = await instancePods();
    const claimsBefore = new Map((await instances()).map((d) => [d.metadata!.name!, claimOf(d)]));
    const generationsBefore = new Map((await instances()).map((d) => [d.metadata!.name!, d.metadata?.generation]));
    // As the service makes it in a launch (POST /service without an existing workspace).
    await stack.resources.workspaces.create({
      metadata: { name: 'ws-gina', annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
      spec: { user: 'gina@example.com', appDefinition: APP },
    });
    await createSession(stack.resources, 'ws-eager', {
      user: 'gina@example.com',
      appDefinition: APP,
      workspace: 'ws-gina',
      envVars: { GIT_USER: 'gina' },
    });
    const reserved = await waitForSession(stack.resources, 'ws-eager', (s) => !!s.status?.instanceId);
    assert.equal(reserved.status?.startStrategy, 'eager');
    const name = `${APP}-pool-${reserved.status!.instanceId}`;
    const claim = claimsBefore.get(name)!;
    assert.match(claim, new RegExp(`^${name}-work-[0-9a-f]{8}$`));
    const d = await stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
    assert.equal(d.metadata?.generation, generationsBefore.get(name), 'the pod template is not touched');
    assert.equal(claimOf(d), claim);
    // The reservation names the new workspace: its claim is the instance's.
    const reservation = (await instanceReservations(stack.kc, stack.namespace)).get(name);
    assert.equal(reservation?.metadata?.labels?.[LABELS.workspace], 'ws-gina');
    // The workspace names the instance's claim, which is now the workspace's.
    const workspace = await eventually(async () => {
      const w = await stack.resources.workspaces.get('ws-gina');
      assert.equal(w.status?.phase, 'Bound');
      assert.equal(w.status?.claimName, claim);
      return w;
    });
    const ready = workspace.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(ready.reason, 'ClaimTakenOver');
    const pvc = await stack.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: stack.namespace });
    assert.deepEqual(
      pvc.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['Workspace', 'ws-gina', workspace.metadata.uid]],
    );
    assert.equal(pvc.metadata?.labels?.[LABELS.workspace], 'ws-gina');
    assert.equal(pvc.metadata?.labels?.[LABELS.poolInstance], undefined);
    const ip = await readyPodIp(stack.kc, stack.namespace, `${LABELS.poolInstance}=${name}`);
    const bridge = await startBridge(ip, 16281, { token: await bridgeToken(stack.kc, stack.namespace, name) });
    bridges.push(bridge);
    await waitForSession(
      stack.resources,
      'ws-eager',
      (s) => running(s) && (s.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
    );
    assert.deepEqual(bridge.received, [{ environment: { GIT_USER: 'gina' }, user: 'gina@example.com' }]);
    assert.equal((await instancePods()).get(name), podsBefore.get(name), 'the prewarmed pod served the session');

    await stack.resources.sessions.delete('ws-eager');
    // The instance itself: the pool's counts do not tell a returned instance from a reserved one.
    const fresh = await eventually(async () => {
      const back = await stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
      const reservation = (await instanceReservations(stack.kc, stack.namespace)).get(name);
      assert.equal(reservation?.metadata?.labels?.[LABELS.session], undefined, 'reservation dropped');
      assert.equal(reservation?.metadata?.labels?.[LABELS.workspace], undefined);
      assert.notEqual(claimOf(back), claim, 'a fresh claim');
      return claimOf(back);
    }, 30_000);
    // The fresh claim is created right after the Deployment that names it (it is owned by it).
    await eventually(async () => {
      const next = await stack.core.readNamespacedPersistentVolumeClaim({ name: fresh, namespace: stack.namespace });
      assert.deepEqual(
        next.metadata?.ownerReferences?.map((o) => [o.kind, o.name]),
        [['Deployment', name]],
      );
    }, 30_000);
    // The workspace keeps its claim.
    await stack.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: stack.namespace });
    await eventually(async () => assert.deepEqual(await poolStatus(), { desired: 2, ready: 2 }), 30_000);
  });

  /** A session of `user` on `workspace`, made as the service makes it, once it runs. */
  async function runningOn(workspace: string, name: string, user: string) {
    await createSession(stack.resources, name, { user, appDefinition: APP, workspace });
    return waitForSession(stack.resources, name, running);
  }

  it('relaunches a workspace that holds work on a pod of its own, mounting its claim', async () => {
    const claim = (await stack.resources.workspaces.get('ws-gina')).status!.claimName!;
    const s = await runningOn('ws-gina', 'ws-again', 'gina@example.com');
    assert.equal(s.status?.startStrategy, 'lazy');
    const reservedCondition = s.status!.conditions!.find((c) => c.type === 'Reserved')!;
    assert.equal(reservedCondition.reason, 'WorkspaceHoldsWork');
    const spec = (await lazySessionPod(stack.core, stack.namespace, 'ws-again')).spec!;
    assert.equal(spec.volumes!.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName, claim);
    const ide = spec.containers[0]!;
    assert.deepEqual(ide.volumeMounts?.find((m) => m.name === 'workspace')?.mountPath, '/home/ide/workspace');
    assert.equal(ide.env?.find((e) => e.name === 'WORKSPACE_DIR')?.value, '/home/ide/workspace');
    await stack.resources.sessions.delete('ws-again');
    // A workspace not made by a launch (POST /service/workspace, kubectl) may hold work too: lazy.
    await stack.resources.workspaces.create({
      metadata: { name: 'ws-hal' },
      spec: { user: 'hal@example.com', appDefinition: APP },
    });
    const hal = await runningOn('ws-hal', 'ws-hal-1', 'hal@example.com');
    assert.equal(hal.status?.startStrategy, 'lazy');
    // The workspace's reconciler writes its claim in its own pass, not before the session's.
    await eventually(async () =>
      assert.equal((await stack.resources.workspaces.get('ws-hal')).status?.claimName, 'ws-hal'),
    );
    await stack.resources.sessions.delete('ws-hal-1');
    await eventually(async () => assert.deepEqual(await stack.resources.sessions.list(), []), 30_000);
  });

  it('falls back to the lazy path when the pool is exhausted', async () => {
    // Bridges of earlier tests go: a restarted pod may get a former pod's address.
    await Promise.all(bridges.splice(0).map((b) => b.close()));
    for (const n of [1, 2, 3])
      await createSession(stack.resources, `pool-${n}`, { user: `u${n}@example.com`, appDefinition: APP });
    const sessions = await Promise.all([1, 2, 3].map((n) => waitForSession(stack.resources, `pool-${n}`, running)));
    const strategies = sessions.map((s) => s.status?.startStrategy).sort();
    assert.deepEqual(strategies, ['eager', 'eager', 'lazy-fallback']);
    const lazy = sessions.find((s) => s.status?.startStrategy === 'lazy-fallback')!;
    await waitForSession(
      stack.resources,
      lazy.metadata.name,
      (s) => s.metadata.annotations?.[ANNOTATIONS.startStrategy] === 'lazy-fallback',
    );
    await lazySessionPod(stack.core, stack.namespace, lazy.metadata.name);
    // No bridge answers on these instances: injection gives up after the attempts, the session stays Running.
    const eager = sessions.find((x) => x.status?.startStrategy === 'eager')!;
    const failed = await waitForSession(
      stack.resources,
      eager.metadata.name,
      (x) => (x.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'False'),
      // Every health check of the window must fail first: allow for a loaded machine.
      180_000,
    );
    const condition = failed.status!.conditions!.find((c) => c.type === 'EnvInjected')!;
    assert.equal(condition.reason, 'InjectionFailed');
    const attempts = FAST.bridgeHealthAttempts;
    assert.match(condition.message ?? '', new RegExp(`health checks ${attempts}/${attempts}, posts 0, last error: `));
    assert.equal(failed.status?.phase, 'Running');
    assert.deepEqual(
      new Set(sessions.filter((s) => s.status?.startStrategy === 'eager').map((s) => s.status?.instanceId)),
      new Set(['1', '2']),
    );
  });

  it('minInstances lowered: a reserved instance above it is deleted when its session ends', async () => {
    await stack.resources.appDefinitions.mergePatch(APP, { spec: { minInstances: 1 } });
    const holder = (await stack.resources.sessions.list()).find((s) => s.status?.instanceId === '2')!;
    // Still reserved: the running session keeps its instance.
    await eventually(async () => assert.equal((await poolStatus())?.desired, 1));
    assert.ok((await instances()).some((d) => d.metadata?.name === `${APP}-pool-2`));
    await stack.resources.sessions.delete(holder.metadata.name);
    await eventually(
      async () =>
        assert.ok(!(await instances()).some((d) => d.metadata?.name === `${APP}-pool-2`), 'instance 2 still there'),
      30_000,
    );
  });

  it('minInstances raised: missing instances are created', async () => {
    await stack.resources.appDefinitions.mergePatch(APP, { spec: { minInstances: 3 } });
    await eventually(async () => {
      assert.deepEqual(
        (await instances()).map((d) => d.metadata?.name),
        [`${APP}-pool-1`, `${APP}-pool-2`, `${APP}-pool-3`],
      );
    }, 30_000);
  });

  it('a new generation recreates free instances; a reserved one keeps its pod and is recreated when released', async () => {
    const holder = (await stack.resources.sessions.list()).find((s) => s.status?.instanceId === '1')!;
    const reservedBefore = await stack.apps.readNamespacedDeployment({
      name: `${APP}-pool-1`,
      namespace: stack.namespace,
    });
    const updated = await stack.resources.appDefinitions.mergePatch(APP, {
      spec: { image: 'ide-cloud/session-python:v2' },
    });
    const generation = String(updated.metadata.generation);
    await eventually(async () => {
      for (const d of await instances()) {
        if (d.metadata?.name === `${APP}-pool-1`) continue;
        assert.equal(d.metadata?.annotations?.[ANNOTATIONS.appDefinitionGeneration], generation);
        assert.equal(d.spec?.template.spec?.containers[0]?.image, 'ide-cloud/session-python:v2');
      }
    }, 30_000);
    const reservedNow = await stack.apps.readNamespacedDeployment({
      name: `${APP}-pool-1`,
      namespace: stack.namespace,
    });
    assert.equal(reservedNow.metadata?.uid, reservedBefore.metadata?.uid);
    assert.equal(
      reservedNow.spec?.template.spec?.containers[0]?.image,
      reservedBefore.spec?.template.spec?.containers[0]?.image,
    );
    await stack.resources.sessions.delete(holder.metadata.name);
    await eventually(async () => {
      const d = await stack.apps.readNamespacedDeployment({ name: `${APP}-pool-1`, namespace: stack.namespace });
      assert.notEqual(d.metadata?.uid, reservedBefore.metadata?.uid, 'recreated');
      assert.equal(d.metadata?.annotations?.[ANNOTATIONS.appDefinitionGeneration], generation);
    }, 30_000);
  });

  it('minInstances 0 empties the pool; the eager path stays available and falls back to lazy', async () => {
    for (const s of await stack.resources.sessions.list()) await stack.resources.sessions.delete(s.metadata.name);
    await stack.resources.appDefinitions.mergePatch(APP, { spec: { minInstances: 0 } });
    await eventually(async () => assert.deepEqual(await instances(), []), 30_000);
    await createSession(stack.resources, 'after-empty', { user: 'z@example.com', appDefinition: APP });
    const s = await waitForSession(stack.resources, 'after-empty', running);
    assert.equal(s.status?.startStrategy, 'lazy-fallback');
    assert.deepEqual(await poolStatus(), { desired: 0, ready: 0 });
  });
});

// The operator's lazy path, limits, workspaces and idle shutdown on the real control plane (pods run through kwok).
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { SESSION_ENV_LABEL } from '../../server/src/model/session-env.js';
import { ANNOTATIONS, LABELS } from '../../server/src/model/api-group.js';
import { ErrorCode } from '../../server/src/model/error-codes.js';
import { NO_PROGRESS_DEADLINE } from '../../server/src/operator/manifests.js';
import { isNotFound } from '../../server/src/kube/client.js';
import { eventually } from '../support/kube.js';
import { startKubeWriteProxy, type KubeWriteProxy } from '../support/kube-write-proxy.js';
import { sessionUrlPattern } from '../support/landing.js';
import { startWatchHoldProxy, type WatchHoldProxy } from '../support/watch-hold-proxy.js';
import {
  appDefinitionSpec,
  createSession,
  lazySessionPod,
  lazySessionPods,
  running,
  waitForSession,
} from '../support/operator.js';
import { useStack } from '../support/stack.js';

const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

describe('operator: lazy sessions, limits, workspaces, idle shutdown', function () {
  const stack = useStack('op-lazy', {
    apps: [
      appDefinitionSpec('python-latest', {
        options: { configStore: 'true' },
        sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
      }),
      // No warning window: its idle stop comes at once (the warning has its own suite, operator-stop-warning).
      appDefinitionSpec('c-latest', { maxInstances: 1, timeout: 1, stopWarningSeconds: 0 }),
    ],
    operator: { eagerStart: false, sessionsPerUser: 2, activityIntervalMs: 300, ingressClassName: 'nginx' },
  });
  this.timeout(180_000);

  it('starts a lazy session with its workspace: pod, Service, sidecar, route, URL, Running', async () => {
    await stack.resources.workspaces.create({
      metadata: { name: 'ws-alice-1' },
      spec: { user: 'alice@example.com', appDefinition: 'python-latest' },
    });
    await eventually(
      async () => assert.equal((await stack.resources.workspaces.get('ws-alice-1')).status?.phase, 'Bound'),
      30_000,
    );
    await stack.core.createNamespacedSecret({
      namespace: stack.namespace,
      body: {
        metadata: { name: 'alice-token', labels: { [SESSION_ENV_LABEL]: 'true' } },
        stringData: { PLATFORM_TOKEN: 's3cret' },
      },
    });
    const created = await createSession(stack.resources, 'session-alice-1', {
      user: 'alice@example.com',
      appDefinition: 'python-latest',
      workspace: 'ws-alice-1',
      envVars: { GIT_USER: 'alice' },
      envVarsFromSecrets: ['alice-token'],
    });
    // The decision's annotations (the spec's) follow the status that tells it.
    const session = await waitForSession(
      stack.resources,
      'session-alice-1',
      (s) => running(s) && !!s.metadata.annotations?.[ANNOTATIONS.startStrategy],
    );
    assert.match(session.status!.url!, sessionUrlPattern('session-alice-1'));
    assert.equal(session.status?.startStrategy, 'lazy');
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.startStrategy], 'lazy');
    const conditions = Object.fromEntries((session.status?.conditions ?? []).map((c) => [c.type, c.status]));
    assert.deepEqual(conditions, { Reserved: 'False', Routed: 'True', EnvInjected: 'True', Ready: 'True' });
    for (const c of session.status?.conditions ?? []) assert.equal(c.observedGeneration, session.metadata.generation);

    // The IDE pod, the operator's own, owned by the Session: no ReplicaSet or Deployment in between,
    // whose status writes and passes a session's one pod never needs.
    const pod = await lazySessionPod(stack.core, stack.namespace, 'session-alice-1');
    assert.match(pod.metadata!.name!, /^session-alice-1-/);
    assert.deepEqual(
      pod.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['Session', 'session-alice-1', created.metadata.uid]],
    );
    const named = { name: 'session-alice-1', namespace: stack.namespace };
    await assert.rejects(stack.apps.readNamespacedReplicaSet(named), isNotFound);
    await assert.rejects(stack.apps.readNamespacedDeployment(named), isNotFound);
    assert.deepEqual(
      pod.spec!.containers.map((c) => c.name),
      ['python-latest', 'auth-proxy'],
    );
    assert.equal(pod.metadata?.labels?.app?.startsWith('session-alice-1-'), true);
    assert.equal(pod.metadata?.labels?.app?.includes(created.metadata.uid!.slice(0, 8)), true);
    // The labels the chart's NetworkPolicies select.
    assert.equal(pod.metadata?.labels?.[LABELS.component], 'session');
    assert.equal(pod.metadata?.labels?.[LABELS.managedBy], 'ide-cloud-operator');
    const ide = pod.spec!.containers[0]!;
    // Values come from the session's own Secret (owned by it), never in plain text in the pod spec; the
    // work folder is no secret.
    assert.deepEqual(plain(ide.env), [
      { name: 'WORKSPACE_DIR', value: '/home/ide/workspace' },
      { name: 'GIT_USER', valueFrom: { secretKeyRef: { name: 'session-alice-1-env', key: 'GIT_USER' } } },
    ]);
    assert.deepEqual(plain(ide.envFrom), [{ secretRef: { name: 'alice-token' } }]);
    assert.equal(
      pod.spec!.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName,
      'ws-alice-1',
    );
    assert.equal(pod.spec!.volumes?.find((v) => v.name === 'config-store')?.configMap?.name, 'session-alice-1-config');
    await stack.core.readNamespacedService({ name: 'session-alice-1', namespace: stack.namespace });
    await stack.core.readNamespacedConfigMap({ name: 'session-alice-1-config', namespace: stack.namespace });
    const sidecar = await stack.apps.readNamespacedDeployment({
      name: 'session-alice-1-db',
      namespace: stack.namespace,
    });
    assert.ok(sidecar.metadata!.creationTimestamp! <= pod.metadata!.creationTimestamp!);
    assert.equal(sidecar.spec!.template.metadata?.labels?.[LABELS.component], 'sidecar');
    assert.equal(sidecar.spec!.template.metadata?.labels?.[LABELS.managedBy], 'ide-cloud-operator');
    // No progress deadline: once the deployment controller has written the ready status, it keeps no
    // Progressing condition.
    assert.equal(sidecar.spec?.progressDeadlineSeconds, NO_PROGRESS_DEADLINE);
    await eventually(async () => {
      const { status } = await stack.apps.readNamespacedDeployment({
        name: 'session-alice-1-db',
        namespace: stack.namespace,
      });
      assert.equal(status?.readyReplicas, 1);
      assert.deepEqual(
        (status?.conditions ?? []).map((c) => c.type),
        ['Available'],
      );
    });

    const ingress = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
    const paths = ingress.spec!.rules!.flatMap((rule) =>
      rule.http!.paths.map((p) => [rule.host, p.path, p.backend.service?.name]),
    );
    assert.deepEqual(paths, [['ide.localtest.me', new URL(session.status!.url!).pathname, 'session-alice-1']]);
    assert.equal(ingress.spec!.ingressClassName, 'nginx');

    const events = await eventually(async () => {
      const list = await stack.core.listNamespacedEvent({
        namespace: stack.namespace,
        fieldSelector: 'involvedObject.kind=Session,involvedObject.name=session-alice-1',
      });
      // A launch that goes well records no Event: its conditions tell the story.
      assert.deepEqual(
        list.items.map((e) => e.reason),
        [],
      );
      return list;
    });
    assert.ok(!JSON.stringify(events.items.map((e) => e.message)).includes('s3cret'));
    assert.ok(!JSON.stringify(session.status).includes('s3cret'));
  });

  it('refuses a session over sessionsPerUser (553) and over maxInstances (552)', async () => {
    await createSession(stack.resources, 'bob-1', { user: 'bob@example.com', appDefinition: 'c-latest' });
    await waitForSession(stack.resources, 'bob-1', running);
    await createSession(stack.resources, 'carol-1', { user: 'carol@example.com', appDefinition: 'c-latest' });
    const refused = await waitForSession(stack.resources, 'carol-1', (s) => s.status?.phase === 'Failed');
    assert.equal(refused.status?.error?.code, ErrorCode.maxInstancesReached);

    await createSession(stack.resources, 'alice-2', { user: 'alice@example.com', appDefinition: 'python-latest' });
    await waitForSession(stack.resources, 'alice-2', running);
    await createSession(stack.resources, 'alice-3', { user: 'alice@example.com', appDefinition: 'python-latest' });
    const overUser = await waitForSession(stack.resources, 'alice-3', (s) => s.status?.phase === 'Failed');
    assert.equal(overUser.status?.error?.code, ErrorCode.sessionsPerUserReached);
    await eventually(async () =>
      assert.deepEqual(await lazySessionPods(stack.core, stack.namespace, 'alice-3', { live: true }), []),
    );
    await stack.resources.sessions.delete('alice-2');
    await stack.resources.sessions.delete('alice-3');
    await stack.resources.sessions.delete('carol-1');
  });

  it('a running lazy session keeps its pod when the app definition changes', async () => {
    await createSession(stack.resources, 'frank-1', { user: 'frank@example.com', appDefinition: 'python-latest' });
    await waitForSession(stack.resources, 'frank-1', running);
    const before = await lazySessionPod(stack.core, stack.namespace, 'frank-1');
    const updated = await stack.resources.appDefinitions.mergePatch('python-latest', {
      spec: { image: 'ide-cloud/session-python:v2' },
    });
    await eventually(async () =>
      assert.equal(
        (await stack.resources.appDefinitions.get('python-latest')).status?.observedGeneration,
        updated.metadata.generation,
      ),
    );
    await createSession(stack.resources, 'frank-2', { user: 'frank@example.com', appDefinition: 'python-latest' });
    await waitForSession(stack.resources, 'frank-2', running);
    const after = await lazySessionPod(stack.core, stack.namespace, 'frank-1');
    assert.equal(after.metadata?.uid, before.metadata?.uid);
    assert.equal(after.spec?.containers[0]?.image, before.spec?.containers[0]?.image);
    assert.notEqual(before.spec?.containers[0]?.image, 'ide-cloud/session-python:v2');
    const fresh = await lazySessionPod(stack.core, stack.namespace, 'frank-2');
    assert.equal(fresh.spec?.containers[0]?.image, 'ide-cloud/session-python:v2');
  });

  it('deleting a Session directly removes its route and everything it owns', async () => {
    const owned = async () => {
      const live = (o: k8s.KubernetesObject) => !o.metadata?.deletionTimestamp;
      // The session's own pod (named from the session's: listed under it), not the sidecar Deployment's.
      const pods = (await lazySessionPods(stack.core, stack.namespace, 'frank-1', { live: true })).map(() => ({
        metadata: { name: 'frank-1' },
      }));
      const deployments = (await stack.apps.listNamespacedDeployment({ namespace: stack.namespace })).items.filter(
        live,
      );
      const services = (await stack.core.listNamespacedService({ namespace: stack.namespace })).items;
      const configMaps = (await stack.core.listNamespacedConfigMap({ namespace: stack.namespace })).items.filter(live);
      return [...pods, ...deployments, ...services, ...configMaps]
        .map((o) => o.metadata?.name)
        .filter((n) => n?.startsWith('frank-1'));
    };
    assert.deepEqual((await owned()).sort(), ['frank-1', 'frank-1', 'frank-1-config', 'frank-1-db', 'frank-1-db']);
    await stack.resources.sessions.delete('frank-1');
    await eventually(async () => assert.equal(await stack.resources.sessions.find('frank-1'), undefined));
    await eventually(async () => assert.deepEqual(await owned(), []), 30_000);
    const ingress = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
    const sessions = ingress.spec!.rules!.flatMap((rule) => rule.http!.paths.map((p) => p.path?.split('/')[1]));
    assert.ok(!sessions.includes('frank-1') && sessions.includes('frank-2'));
    // Its routes' patches cleared the API server's record of field owners, which would list every path.
    assert.equal(ingress.metadata?.managedFields, undefined);
    await stack.resources.sessions.delete('frank-2');
  });

  it('a session created right after its workspace starts (the cache may not have the workspace yet)', async () => {
    for (const n of [1, 2, 3]) {
      await stack.resources.workspaces.create({
        metadata: { name: `ws-gus-${n}` },
        spec: { user: `gus${n}@example.com`, appDefinition: 'python-latest' },
      });
      await createSession(stack.resources, `gus-${n}`, {
        user: `gus${n}@example.com`,
        appDefinition: 'python-latest',
        workspace: `ws-gus-${n}`,
      });
    }
    for (const n of [1, 2, 3]) {
      const session = await waitForSession(
        stack.resources,
        `gus-${n}`,
        (s) => running(s) || s.status?.phase === 'Failed',
      );
      assert.equal(session.status?.phase, 'Running', JSON.stringify(session.status?.error));
      await stack.resources.sessions.delete(`gus-${n}`);
    }
  });

  it('fails a session for an unknown app definition (473) or workspace (471)', async () => {
    await createSession(stack.resources, 'dave-1', { user: 'dave@example.com', appDefinition: 'no-such-app' });
    await createSession(stack.resources, 'dave-2', {
      user: 'dave@example.com',
      appDefinition: 'python-latest',
      workspace: 'ws-none',
    });
    assert.equal(
      (await waitForSession(stack.resources, 'dave-1', (s) => s.status?.phase === 'Failed')).status?.error?.code,
      473,
    );
    assert.equal(
      (await waitForSession(stack.resources, 'dave-2', (s) => s.status?.phase === 'Failed')).status?.error?.code,
      471,
    );
  });

  it('stops a session idle for longer than its timeout and records why', async () => {
    // bob-1 (c-latest, timeout 1 minute) reports activity two minutes ago, as PATCH /service/session would.
    await stack.resources.sessions.patchStatus('bob-1', { lastActivity: new Date(Date.now() - 120_000).toISOString() });
    await eventually(async () => assert.equal(await stack.resources.sessions.find('bob-1'), undefined), 30_000);
    // The recorder's background writer sends the Event beside the delete, not before it.
    await eventually(async () => {
      const events = await stack.core.listNamespacedEvent({
        namespace: stack.namespace,
        fieldSelector: 'involvedObject.name=bob-1,reason=Stopped',
      });
      assert.match(events.items[0]?.message ?? '', /Idle/);
    });
    await eventually(async () => {
      const ingress = await stack.net.readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace });
      const sessions = ingress.spec!.rules!.flatMap((rule) => rule.http!.paths.map((p) => p.path?.split('/')[1]));
      assert.ok(!sessions.includes('bob-1'));
    });
  });

  it('deleting a workspace ends its session and deletes its claim; everything owned goes', async () => {
    await stack.resources.workspaces.delete('ws-alice-1');
    await eventually(async () => {
      assert.equal(await stack.resources.sessions.find('session-alice-1'), undefined);
      assert.equal(await stack.resources.workspaces.find('ws-alice-1'), undefined);
    }, 30_000);
    await eventually(async () => {
      const stopped = await stack.core.listNamespacedEvent({
        namespace: stack.namespace,
        fieldSelector: 'involvedObject.name=session-alice-1,reason=Stopped',
      });
      assert.match(stopped.items[0]?.message ?? '', /WorkspaceDeleted/);
    });
    await eventually(async () => {
      const selector = { namespace: stack.namespace, labelSelector: `${LABELS.session}=session-alice-1` };
      const workloads = [
        ...(await lazySessionPods(stack.core, stack.namespace, 'session-alice-1')),
        ...(await stack.apps.listNamespacedDeployment(selector)).items,
      ];
      assert.deepEqual(
        workloads.filter((d) => !d.metadata?.deletionTimestamp).map((d) => d.metadata?.name),
        [],
      );
      const claim = await stack.core
        .readNamespacedPersistentVolumeClaim({ name: 'ws-alice-1', namespace: stack.namespace })
        .catch(() => undefined);
      assert.ok(!claim || claim.metadata?.deletionTimestamp, 'claim deleted');
      const services = (await stack.core.listNamespacedService({ namespace: stack.namespace })).items.map(
        (s) => s.metadata?.name,
      );
      assert.ok(!services.includes('session-alice-1'));
    }, 30_000);
  });
});

describe('operator: sessionsPerUser within one second', function () {
  const stack = useStack('op-limit-second', {
    apps: [appDefinitionSpec('c-latest')],
    operator: { eagerStart: false, sessionsPerUser: 1 },
  });
  this.timeout(180_000);

  // Creation timestamps have one-second resolution: a session created in the same second as one that
  // is already past the check, with a name that sorts before it, must still count it.
  it('a session of the same second whose name sorts first is refused once the other is past the check (553)', async () => {
    const decided = (s: { status?: { startStrategy?: string } }) => !!s.status?.startStrategy;
    for (let attempt = 0; attempt < 20; attempt++) {
      const user = `erin-${attempt}@example.com`;
      const first = `s${attempt}-z-first`;
      const second = `s${attempt}-a-second`;
      await createSession(stack.resources, first, { user, appDefinition: 'c-latest' });
      await eventually(
        async () => assert.ok(decided(await stack.resources.sessions.get(first)), `${first} not past the check yet`),
        30_000,
        10,
      );
      await createSession(stack.resources, second, { user, appDefinition: 'c-latest' });
      const [a, b] = await Promise.all([stack.resources.sessions.get(first), stack.resources.sessions.get(second)]);
      if (a.metadata.creationTimestamp !== b.metadata.creationTimestamp) {
        // Not the same second: the order by time decides, which is not what this test is about.
        await Promise.all([stack.resources.sessions.delete(first), stack.resources.sessions.delete(second)]);
        continue;
      }
      const refused = await waitForSession(stack.resources, second, (s) => s.status?.phase === 'Failed' || running(s));
      assert.equal(refused.status?.phase, 'Failed', `${second} of the same second as ${first} was not refused`);
      assert.equal(refused.status?.error?.code, ErrorCode.sessionsPerUserReached);
      await waitForSession(stack.resources, first, running);
      return;
    }
    assert.fail('20 attempts never created two sessions within one second');
  });
});

describe('operator: the writes of a lazy launch', function () {
  this.timeout(180_000);
  let writes: KubeWriteProxy;
  let watches: WatchHoldProxy;
  const stack = useStack('op-lazy-writes', {
    apps: [
      appDefinitionSpec('python-latest', {
        options: { dataBridgeEnabled: 'true', dataBridgePort: '16281', configStore: 'true' },
        sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
      }),
    ],
    // The operator's client: through a proxy that can hold its watches' events back, then one that
    // counts its writes.
    setUp: async ({ kc, cleanUp, startOperator }) => {
      writes = await startKubeWriteProxy(kc);
      cleanUp(() => writes.close(), 'last');
      watches = await startWatchHoldProxy(writes.kubeconfig);
      cleanUp(() => watches.close(), 'last');
      const operatorKc = new k8s.KubeConfig();
      operatorKc.loadFromFile(watches.kubeconfig);
      await startOperator({ eagerStart: false }, operatorKc);
    },
    operatorLogs: true,
  });

  it("passes that come before the pod's watch event write nothing again, and the bridge token stays", async () => {
    const core = stack.kc.makeApiClient(k8s.CoreV1Api);
    const name = 'session-writes-1';
    const passes = () =>
      stack.operatorLogs.filter((line) => {
        const entry = JSON.parse(line) as { msg?: string; session?: string };
        return entry.msg === 'session pass' && entry.session === name;
      }).length;
    // The pods' and Deployments' watch events are late (a loaded machine): the session's own come first.
    const release = watches.hold(
      (url) =>
        url.startsWith(`/api/v1/namespaces/${stack.namespace}/pods`) ||
        url.startsWith(`/apis/apps/v1/namespaces/${stack.namespace}/deployments`),
    );
    try {
      await createSession(stack.resources, name, { user: 'wes@example.com', appDefinition: 'python-latest' });
      await waitForSession(
        stack.resources,
        name,
        (s) => s.status?.conditions?.some((c) => c.type === 'Routed') ?? false,
      );
      const secret = await core.readNamespacedSecret({ name: `${name}-env`, namespace: stack.namespace });
      // Three more passes, each after the one before ended (a key is never in two passes at once).
      for (let i = 0; i < 3; i++) {
        const before = passes();
        await stack.resources.sessions.mergePatch(name, {
          metadata: { annotations: { 'test.ide-cloud.io/touch': String(i) } },
        });
        await eventually(() => assert.ok(passes() > before, 'no pass after the change'));
      }
      release();
      const session = await waitForSession(stack.resources, name, running);
      assert.equal(session.metadata.annotations?.['test.ide-cloud.io/touch'], '2');
      const after = await core.readNamespacedSecret({ name: `${name}-env`, namespace: stack.namespace });
      assert.ok(after.data?.['.data-bridge-token']);
      assert.equal(after.data?.['.data-bridge-token'], secret.data?.['.data-bridge-token'], 'the bridge token changed');
      assert.equal(after.metadata?.resourceVersion, secret.metadata?.resourceVersion);
    } finally {
      release();
    }
    const count = (path: string) => writes.writes.filter((w) => w.path === path).length;
    const objects = {
      configStore: count(`/api/v1/namespaces/${stack.namespace}/configmaps/${name}-config`),
      // Created (a POST to the collection, the suite's only Secret), or written by name.
      secret:
        count(`/api/v1/namespaces/${stack.namespace}/secrets`) +
        count(`/api/v1/namespaces/${stack.namespace}/secrets/${name}-env`),
      sidecarService: count(`/api/v1/namespaces/${stack.namespace}/services/${name}-db`),
      sidecarDeployment: count(`/apis/apps/v1/namespaces/${stack.namespace}/deployments/${name}-db`),
      // Created (a POST to the collection: the suite's only session pod).
      pod: count(`/api/v1/namespaces/${stack.namespace}/pods`),
      service: count(`/api/v1/namespaces/${stack.namespace}/services/${name}`),
    };
    assert.deepEqual(
      objects,
      { configStore: 1, secret: 1, sidecarService: 1, sidecarDeployment: 1, pod: 1, service: 1 },
      JSON.stringify(writes.writes.map((w) => `${w.method} ${w.path}`)),
    );
  });
});

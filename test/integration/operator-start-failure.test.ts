// A session whose start cannot succeed fails within seconds with a reason (status, Event, progress
// stream, the service's metrics), and one that never gets ready fails at its app definition's start deadline; a failed
// session keeps nothing that runs or routes. On the real control plane: Unschedulable comes from the
// real scheduler. The other pod states come from a kubelet: kwok manages only the nodes annotated for
// it and would make every pod ready at once, so these sessions' pods go to a node of this suite that
// kwok leaves alone (they request more CPU than kwok's node has), and the test writes their status
// through pods/status as that node's kubelet would.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../server/src/model/api-group.js';
import { ErrorCode } from '../../server/src/model/error-codes.js';
import { sessionNameFor } from '../../server/src/model/names.js';
import { SessionCondition, SessionFailureReason, type Session } from '../../server/src/model/session.js';
import { toProgressView } from '../../server/src/service/session-progress.js';
import { eventually } from '../support/kube.js';
import {
  appDefinitionSpec,
  createSession,
  lazySessionPods,
  ON_NODE_WITHOUT_KUBELET as ON_OWN_NODE,
  waitForSession,
} from '../support/operator.js';
import {
  SERVICE_AUTH_TOKEN,
  call,
  readProgressStream,
  startTestService,
  type StreamMessage,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

describe('operator: a start that cannot succeed fails with a reason', function () {
  const stack = useStack('op-start', {
    // A node without kwok's annotation: nothing runs its pods but this test, acting as its kubelet.
    nodeWithoutKubelet: true,
    apps: [
      appDefinitionSpec('huge', { requestsCpu: '100000', limitsCpu: '100000' }),
      appDefinitionSpec('python', ON_OWN_NODE),
      appDefinitionSpec('slow', { ...ON_OWN_NODE, startDeadlineSeconds: 3 }),
    ],
    operator: { eagerStart: false, sessionsPerUser: 10 },
  });
  this.timeout(120_000);

  /** The session's pod once the scheduler bound it to this suite's node. */
  async function boundPod(session: string): Promise<k8s.V1Pod> {
    return eventually(async () => {
      const pods = await stack.core.listNamespacedPod({
        namespace: stack.namespace,
        labelSelector: `${LABELS.session}=${session}`,
      });
      const pod = pods.items.find((p) => p.spec?.nodeName === stack.node.name);
      assert.ok(pod, `no pod of ${session} on ${stack.node.name} yet`);
      return pod;
    }, 30_000);
  }

  /** What the node's kubelet reports: the pod started, its IDE container waiting for `reason`. */
  async function kubeletReports(
    pod: k8s.V1Pod,
    waiting: { reason: string; message: string },
    extra: { startTime?: Date; restartCount?: number; exitCode?: number } = {},
  ): Promise<void> {
    const [ide, ...others] = pod.spec!.containers;
    const status = (c: k8s.V1Container, w?: typeof waiting): k8s.V1ContainerStatus => ({
      name: c.name,
      image: c.image!,
      imageID: '',
      ready: false,
      restartCount: w ? (extra.restartCount ?? 0) : 0,
      state: { waiting: w ?? { reason: 'ContainerCreating' } },
      ...(w && extra.exitCode !== undefined ? { lastState: { terminated: { exitCode: extra.exitCode } } } : {}),
    });
    await stack.core.patchNamespacedPodStatus(
      {
        name: pod.metadata!.name!,
        namespace: stack.namespace,
        body: {
          status: {
            phase: 'Pending',
            startTime: extra.startTime ?? new Date(),
            containerStatuses: [status(ide!, waiting), ...others.map((c) => status(c))],
          },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }

  /** The session failed with `reason`: status, Ready condition, an Event, the progress stream. */
  async function assertFailed(name: string, reason: string, code: number, message: RegExp): Promise<Session> {
    const session = await waitForSession(stack.resources, name, (s) => s.status?.phase === 'Failed', 30_000);
    assert.equal(session.status?.error?.code, code);
    assert.match(session.status!.error!.reason, message);
    const ready = session.status?.conditions?.find((c) => c.type === SessionCondition.ready);
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, reason);
    assert.equal(ready?.message, session.status!.error!.reason);
    // What the service's progress stream sends of it.
    const view = toProgressView(session);
    assert.deepEqual(view.error, session.status!.error);
    assert.deepEqual(
      view.conditions.find((c) => c.type === SessionCondition.ready),
      { type: 'Ready', status: 'False', reason, message: session.status!.error!.reason },
    );
    await eventually(async () => {
      const events = await stack.core.listNamespacedEvent({
        namespace: stack.namespace,
        fieldSelector: `involvedObject.kind=Session,involvedObject.name=${name}`,
      });
      const event = events.items.find((e) => e.reason === reason);
      assert.ok(event, `no ${reason} event: ${JSON.stringify(events.items.map((e) => e.reason))}`);
      assert.equal(event.type, 'Warning');
      assert.equal(event.message, session.status!.error!.reason);
    });
    return session;
  }

  /** Nothing of the failed session runs or routes: its pod, Service, Secret and route are gone. */
  async function assertReleased(name: string): Promise<void> {
    await eventually(async () => {
      const gone = async (read: () => Promise<unknown>) => {
        try {
          const o = (await read()) as { metadata?: k8s.V1ObjectMeta };
          return !!o.metadata?.deletionTimestamp;
        } catch (error) {
          return (error as { code?: number }).code === 404;
        }
      };
      const pods = await lazySessionPods(stack.core, stack.namespace, name, { live: true });
      assert.deepEqual(
        pods.map((p) => p.metadata?.name),
        [],
        'pod',
      );
      assert.ok(await gone(() => stack.core.readNamespacedService({ name, namespace: stack.namespace })), 'service');
      assert.ok(
        await gone(() => stack.core.readNamespacedSecret({ name: `${name}-env`, namespace: stack.namespace })),
        'secret',
      );
      // The shared Ingress goes with its last path.
      const ingress = await stack.net
        .readNamespacedIngress({ name: 'ide-cloud-sessions', namespace: stack.namespace })
        .catch(() => undefined);
      const routed = ingress?.spec?.rules?.flatMap((rule) => rule.http?.paths.map((p) => p.path) ?? []) ?? [];
      assert.ok(!routed.some((p) => p?.startsWith(`/${name}/`)), `route of ${name} still there`);
    }, 30_000);
    // The session stays (Failed) for people to read, until it is deleted.
    assert.equal((await stack.resources.sessions.get(name)).status?.phase, 'Failed');
  }

  it('Unschedulable (the real scheduler: no node has the CPU asked for) fails at once', async () => {
    await createSession(stack.resources, 'huge-1', { user: 'ann@example.com', appDefinition: 'huge' });
    await assertFailed(
      'huge-1',
      SessionFailureReason.unschedulable,
      ErrorCode.internal,
      /^no node of the cluster can run the IDE \(0\/\d+ nodes are available/,
    );
    await assertReleased('huge-1');
  });

  it('an image pull failing past its bound fails with ImagePullFailed', async () => {
    await createSession(stack.resources, 'pull-1', { user: 'ben@example.com', appDefinition: 'python' });
    const pod = await boundPod('pull-1');
    // Pulling for a minute already, the last attempt failed.
    await kubeletReports(
      pod,
      { reason: 'ErrImagePull', message: 'failed to pull image: not found' },
      { startTime: new Date(Date.now() - 60_000) },
    );
    await assertFailed(
      'pull-1',
      SessionFailureReason.imagePullFailed,
      ErrorCode.internal,
      /^the IDE image could not be pulled: ide-cloud\/session-python:latest \(failed to pull image: not found\)$/,
    );
    await assertReleased('pull-1');
  });

  it('a crash-looping IDE fails with CrashLooping', async () => {
    await createSession(stack.resources, 'crash-1', { user: 'cat@example.com', appDefinition: 'python' });
    const pod = await boundPod('crash-1');
    await kubeletReports(
      pod,
      { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container' },
      { restartCount: 3, exitCode: 1 },
    );
    await assertFailed(
      'crash-1',
      SessionFailureReason.crashLooping,
      ErrorCode.internal,
      /^the IDE keeps crashing at start: container python restarted 3 times, last exit code 1$/,
    );
    await assertReleased('crash-1');
  });

  it('a Secret the pod references that is missing fails with ContainerConfigError', async () => {
    await createSession(stack.resources, 'config-1', {
      user: 'dan@example.com',
      appDefinition: 'python',
      envVars: { GIT_USER: 'dan' },
    });
    const pod = await boundPod('config-1');
    // The session's Secret of values goes before its container starts: what the kubelet then finds.
    await stack.core.deleteNamespacedSecret({ name: 'config-1-env', namespace: stack.namespace });
    const ide = pod.spec!.containers[0]!;
    // Several keys of the one Secret can be referenced (the values, the data bridge token).
    const missing = new Set<string>();
    for (const env of ide.env ?? []) {
      const ref = env.valueFrom?.secretKeyRef;
      if (!ref) continue;
      const found = await stack.core
        .readNamespacedSecret({ name: ref.name!, namespace: stack.namespace })
        .catch(() => undefined);
      if (!found) missing.add(ref.name!);
    }
    assert.deepEqual([...missing], ['config-1-env']);
    await kubeletReports(pod, { reason: 'CreateContainerConfigError', message: `secret "config-1-env" not found` });
    await assertFailed(
      'config-1',
      SessionFailureReason.containerConfigError,
      ErrorCode.internal,
      /^the IDE cannot start: the configuration of container python is incomplete \(secret "config-1-env" not found\)$/,
    );
    await assertReleased('config-1');
  });

  it("a launch whose image cannot be pulled: the service's progress stream and metrics show why", async () => {
    let service = await startTestService(stack.kc, stack.namespace, { sessionsPerUser: 10 });
    try {
      const user = 'fay@example.com';
      const workspace = 'ws-pull';
      const name = sessionNameFor(workspace);
      const expected =
        /^the IDE image could not be pulled: ide-cloud\/session-python:latest \(failed to pull image: not found\)$/;
      const failedIn = (messages: StreamMessage[]) =>
        messages.find((m) => m.event === 'session' && m.data.phase === 'Failed');
      const eventIn = (messages: StreamMessage[]) =>
        messages.find((m) => m.event === 'event' && m.data.reason === SessionFailureReason.imagePullFailed);
      const stream = readProgressStream(
        `${service.url}/service/session/events/${SERVICE_AUTH_TOKEN}/${encodeURIComponent(user)}/${workspace}`,
        (messages) => !!failedIn(messages) && !!eventIn(messages),
      );
      const launch = call(service.url, 'POST', '/service', {
        body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition: 'python', workspaceName: workspace, timeout: 2 },
      });
      await kubeletReports(
        await boundPod(name),
        { reason: 'ErrImagePull', message: 'failed to pull image: not found' },
        { startTime: new Date(Date.now() - 60_000) },
      );

      // The launch answers the operator's reason (and removes its session).
      const answer = await launch;
      assert.equal(answer.status, ErrorCode.internal, answer.text);
      assert.match((answer.json as { reason: string }).reason, expected);

      // The progress stream: the session Failed with the readable reason, and the Warning Event.
      const messages = await stream;
      const failed = failedIn(messages)!.data as { error?: { reason: string }; conditions: Record<string, string>[] };
      assert.match(failed.error?.reason ?? '', expected);
      const ready = failed.conditions.find((c) => c.type === SessionCondition.ready);
      assert.equal(ready?.reason, SessionFailureReason.imagePullFailed);
      assert.match(ready?.message ?? '', expected);
      const event = eventIn(messages)!.data as { type: string; message: string };
      assert.equal(event.type, 'Warning');
      assert.match(event.message, expected);

      // The metrics: the failed start counted by machine reason, though the launch removed the session.
      const counted = (text: string) =>
        /^ide_cloud_session_start_failures_total\{app_definition="python",reason="ImagePullFailed"\} (\d+)$/m.exec(
          text,
        )?.[1];
      const scraped = await call(service.url, 'GET', '/q/metrics');
      assert.equal(counted(scraped.text), '1', scraped.text);
      // Bounded labels only: no user, session or workspace names.
      for (const unbounded of [user, encodeURIComponent(user), name, workspace]) {
        assert.ok(!scraped.text.includes(unbounded), `the metrics name ${unbounded}`);
      }

      // A failed session that stays (created directly, as kubectl would) is shown by the gauge, read
      // from the cache at scrape time: a restarted service shows it at once, without counting it again.
      await createSession(stack.resources, 'pull-kept', { user: 'gus@example.com', appDefinition: 'python' });
      await kubeletReports(
        await boundPod('pull-kept'),
        { reason: 'ErrImagePull', message: 'failed to pull image: not found' },
        { startTime: new Date(Date.now() - 60_000) },
      );
      await waitForSession(stack.resources, 'pull-kept', (s) => s.status?.phase === 'Failed', 30_000);
      await service.close();
      service = await startTestService(stack.kc, stack.namespace, { sessionsPerUser: 10 });
      const present = (await stack.resources.sessions.list()).filter(
        (s) =>
          !s.metadata.deletionTimestamp &&
          s.spec.appDefinition === 'python' &&
          s.status?.conditions?.some(
            (c) => c.type === SessionCondition.ready && c.reason === SessionFailureReason.imagePullFailed,
          ),
      ).length;
      assert.ok(present >= 1);
      const restarted = await call(service.url, 'GET', '/q/metrics');
      assert.match(
        restarted.text,
        new RegExp(`^ide_cloud_sessions_failed\\{app_definition="python",reason="ImagePullFailed"\\} ${present}$`, 'm'),
      );
      assert.equal(counted(restarted.text), undefined, 'a restarted service does not count again what it finds failed');
    } finally {
      await service.close();
    }
  });

  it('a pod that never gets ready fails at the start deadline of its app definition', async () => {
    await createSession(stack.resources, 'slow-1', { user: 'eve@example.com', appDefinition: 'slow' });
    const pod = await boundPod('slow-1');
    // Starting, as far as its kubelet tells: nothing unrecoverable, just never ready.
    await kubeletReports(pod, { reason: 'ContainerCreating', message: '' });
    await assertFailed(
      'slow-1',
      SessionFailureReason.startDeadlineExceeded,
      ErrorCode.launchTimeout,
      /^the IDE did not start within 3 s$/,
    );
    await assertReleased('slow-1');
  });
});

// Issue 27, item 10 (fifth race): a session that became ready after its service process was killed
// (SIGKILL, before the launch answered) held the user's slot until its idle stop: nobody had its URL,
// and the user's next launch was refused 553. Replayed with the service as its own process and the
// real operator; the session's pod sits on a node no kubelet runs until the test, as that kubelet,
// reports it ready after the kill. A session keeps the service's "unanswered" mark until a launch
// answers it, so the user's next ephemeral launch at the limit adopts it (same values) or replaces
// it (other values); one whose URL was answered, or which reported activity, is never taken.
import assert from 'node:assert/strict';
import { ANNOTATIONS } from '../../server/src/model/api-group.js';
import { isSessionReady, type Session } from '../../server/src/model/session.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, ON_NODE_WITHOUT_KUBELET } from '../support/operator.js';
import {
  SERVICE_AUTH_TOKEN,
  activeSessionsOf,
  assertAnsweredAlone,
  call,
  type Answer,
} from '../support/service-harness.js';
import type { ServiceProcess } from '../support/service-process.js';
import { useStack } from '../support/stack.js';

describe('security: a session that became ready after its service was killed (27.10)', function () {
  const stack = useStack('sec-killed-slot', {
    nodeWithoutKubelet: true,
    // A start deadline far beyond the test's bounds: it cannot be what frees a user's slot.
    apps: [appDefinitionSpec('patient', { ...ON_NODE_WITHOUT_KUBELET, startDeadlineSeconds: 600 })],
    operator: { eagerStart: false, sessionsPerUser: 1 },
  });
  this.timeout(300_000);
  let service: ServiceProcess | undefined;
  /** A fresh service process; the previous one (each test leaves one running) is stopped first. */
  const startService = async () => (service = await stack.replaceService({ IDE_CLOUD_SESSIONS_PER_USER: '1' }));

  const launch = (user: string, course: string): Promise<Answer> =>
    call(service!.url, 'POST', '/service', {
      body: {
        appId: SERVICE_AUTH_TOKEN,
        user,
        appDefinition: 'patient',
        ephemeral: true,
        timeout: 2,
        env: { fromMap: { COURSE: course } },
      },
    });

  /** Waits until the operator reports `name` ready (the API server's word). */
  const readyAtServer = (name: string): Promise<Session> =>
    eventually(async () => {
      const session = await stack.resources.sessions.get(name);
      assert.ok(isSessionReady(session), `not ready yet: ${JSON.stringify(session.status)}`);
      return session;
    }, 60_000);

  /**
   * An ephemeral launch killed with its service process (SIGKILL) while it waits; its session then
   * becomes ready, the operator writes its URL, and nobody has it. A fresh service process is started.
   */
  async function readyAfterKill(user: string, course: string): Promise<Session> {
    await startService();
    const cut = launch(user, course).catch((error: Error) => error);
    const half = await eventually(async () => {
      const [found, ...more] = await activeSessionsOf(stack.resources, user);
      assert.ok(found, 'the launch created its session');
      assert.equal(more.length, 0);
      return found;
    }, 60_000);
    const pod = await stack.node.boundPod(half.metadata.name);
    const killed = service!;
    await killed.kill('SIGKILL');
    assert.equal(killed.child.signalCode, 'SIGKILL');
    assert.ok((await cut) instanceof Error, 'the cut launch got no answer');
    await stack.node.kubeletStarts(pod);
    const ready = await readyAtServer(half.metadata.name);
    await startService();
    return ready;
  }

  it('the next launch with the same values adopts it and answers its URL, instead of 553', async () => {
    const user = 'kim@example.com';
    const orphan = await readyAfterKill(user, 'algorithms');

    const answer = await launch(user, 'algorithms');
    assert.equal(answer.status, 200, `held at sessionsPerUser by ${orphan.metadata.name}: ${answer.text}`);
    assert.equal(answer.text, orphan.status?.url);
    const sessions = await activeSessionsOf(stack.resources, user);
    assert.deepEqual(
      sessions.map((s) => s.metadata.uid),
      [orphan.metadata.uid],
      'the same session, adopted: no second one',
    );
    // Answered now: in someone's hands, never taken by a later launch.
    assert.equal(sessions[0]!.metadata.annotations?.[ANNOTATIONS.unanswered], undefined);
    const other = await launch(user, 'compilers');
    assert.equal(other.status, 553, other.text);
  });

  it('the next launch with other values replaces it with a fresh session, instead of 553', async () => {
    const user = 'lee@example.com';
    const orphan = await readyAfterKill(user, 'algorithms');

    const retry = launch(user, 'compilers');
    let settled = false;
    void retry.finally(() => (settled = true));
    const fresh = await eventually(async () => {
      if (settled) return undefined;
      const found = (await activeSessionsOf(stack.resources, user)).find((s) => s.metadata.uid !== orphan.metadata.uid);
      assert.ok(found, 'the retry created no session');
      return found;
    }, 60_000);
    if (fresh) await stack.node.kubeletStarts(await stack.node.boundPod(fresh.metadata.name));
    const answer = await retry;
    assert.equal(answer.status, 200, `held at sessionsPerUser by ${orphan.metadata.name}: ${answer.text}`);
    const session = await assertAnsweredAlone(stack.resources, answer, fresh!, 'only the fresh session');
    assert.equal(session.spec.envVars?.COURSE, 'compilers');
  });

  it('one that reported activity was opened by someone: never taken (553)', async () => {
    const user = 'max@example.com';
    const orphan = await readyAfterKill(user, 'algorithms');
    const activity = await call(service!.url, 'PATCH', '/service/session', {
      body: { appId: SERVICE_AUTH_TOKEN, sessionName: orphan.metadata.name },
    });
    assert.equal(activity.status, 200, activity.text);
    await eventually(async () =>
      assert.ok((await stack.resources.sessions.get(orphan.metadata.name)).status?.lastActivity),
    );

    const other = await launch(user, 'compilers');
    assert.equal(other.status, 553, other.text);
    assert.deepEqual(
      (await activeSessionsOf(stack.resources, user)).map((s) => s.metadata.uid),
      [orphan.metadata.uid],
    );
  });
});

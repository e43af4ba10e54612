// A service killed (SIGKILL: no shutdown code runs) while a blocking launch waits, with the real
// operator serving the launch (issue 17). The service runs as its own process (main.ts, configured
// by environment variables); the session's pod waits on a node no kubelet runs, so the start holds
// until the test, acting as that node's kubelet, reports the pod ready. A fresh service process then
// gets the retry: for a workspace it adopts the half-started session and answers its URL, or removes
// it when it does not start by the retry's deadline, so the user's next launch is not refused 553.
// An ephemeral launch's session has a random name, so no retry can name it: the retry of a user at
// sessionsPerUser finds it among the user's sessions that have not served yet and adopts it (the same
// values) or removes it and starts afresh (other values), either way long before the operator's
// start deadline could free the slot.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { sessionNameFor } from '../../server/src/model/names.js';
import { SessionCondition, type Session } from '../../server/src/model/session.js';
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

describe('service process killed during a blocking launch, the real operator serving it', function () {
  const stack = useStack('svc-killed', {
    nodeWithoutKubelet: true,
    apps: [
      appDefinitionSpec('python', ON_NODE_WITHOUT_KUBELET),
      // A start deadline far beyond the test's bounds: it cannot be what frees a user's slot.
      appDefinitionSpec('patient', { ...ON_NODE_WITHOUT_KUBELET, startDeadlineSeconds: 600 }),
    ],
    operator: { eagerStart: false, sessionsPerUser: 1 },
  });
  this.timeout(300_000);
  let service: ServiceProcess | undefined;

  /** A fresh service process; the previous one (each test leaves one running) is stopped first. */
  const startService = async () => (service = await stack.replaceService({ IDE_CLOUD_SESSIONS_PER_USER: '1' }));

  const launch = (body: Record<string, unknown>): Promise<Answer> =>
    call(service!.url, 'POST', '/service', {
      body: { appId: SERVICE_AUTH_TOKEN, appDefinition: 'python', timeout: 2, ...body },
    });

  /** `answer` gave the URL of `half`, adopted and Ready, the one session of its user. */
  async function assertAdopted(answer: Answer, half: Session): Promise<void> {
    const session = await assertAnsweredAlone(
      stack.resources,
      answer,
      half,
      'the same session, adopted: no second one',
    );
    const ready = session.status?.conditions?.find((c) => c.type === SessionCondition.ready);
    assert.equal(ready?.status, 'True');
  }

  const boundPod = (session: string) => stack.node.boundPod(session);
  const kubeletStarts = (pod: k8s.V1Pod) => stack.node.kubeletStarts(pod);

  /**
   * A launch in flight, waiting for its session, when its service process is killed: its session
   * exists and its pod sits on the node without a kubelet. A fresh service process is started.
   * Resolves with the half-started session.
   */
  async function launchCutByKill(user: string, body: Record<string, unknown>): Promise<Session> {
    await startService();
    const cut = launch({ user, ...body }).catch((error: Error) => error);
    const half = await eventually(async () => {
      const [found, ...more] = await activeSessionsOf(stack.resources, user);
      assert.ok(found, 'the launch created its session');
      assert.equal(more.length, 0);
      return found;
    }, 60_000);
    await boundPod(half.metadata.name);
    const killed = service!;
    await killed.kill('SIGKILL');
    assert.equal(killed.child.signalCode, 'SIGKILL');
    assert.ok((await cut) instanceof Error, 'the cut launch got no answer');
    const now = await stack.resources.sessions.get(half.metadata.name);
    assert.ok(!now.status?.url, `still starting: ${JSON.stringify(now.status)}`);
    await startService();
    return now;
  }

  it('a retry of the same workspace adopts the half-started session and answers its URL once it runs', async () => {
    const user = 'ada@example.com';
    const half = await launchCutByKill(user, { workspaceName: 'ws-adopt' });
    assert.equal(half.metadata.name, sessionNameFor('ws-adopt'));

    const retry = launch({ user, workspaceName: 'ws-adopt' });
    await kubeletStarts(await boundPod(half.metadata.name));
    const answer = await retry;
    assert.equal(answer.status, 200, answer.text);

    await assertAdopted(answer, half);
    // The user is not held by an orphan: the same launch again answers the same session at once.
    const again = await launch({ user, workspaceName: 'ws-adopt' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.text, answer.text);
  });

  it('a retry that times out removes the half-started session, and the user launches again without 553', async () => {
    const user = 'grace@example.com';
    const half = await launchCutByKill(user, { workspaceName: 'ws-stuck' });

    const retry = await launch({ user, workspaceName: 'ws-stuck', timeout: 0.1 });
    assert.equal(retry.status, 551, retry.text);
    // Removed through the operator's finalizer, not left Starting.
    await eventually(async () => {
      const names = (await stack.resources.sessions.list()).map((s) => s.metadata.name);
      assert.ok(!names.includes(half.metadata.name), `${half.metadata.name} still there`);
    }, 60_000);

    const next = launch({ user, workspaceName: 'ws-next' });
    await kubeletStarts(await boundPod(sessionNameFor('ws-next')));
    const answer = await next;
    assert.equal(answer.status, 200, `not held at sessionsPerUser by ${half.metadata.name}: ${answer.text}`);
    assert.deepEqual(
      (await activeSessionsOf(stack.resources, user)).map((s) => s.metadata.name),
      [sessionNameFor('ws-next')],
    );
  });

  /**
   * Polls `find` (which throws while it finds nothing) until it finds something or `answered` settles
   * first; undefined then.
   */
  async function beforeAnswer<T>(answered: Promise<unknown>, find: () => Promise<T> | T): Promise<T | undefined> {
    let settled = false;
    const settle = () => (settled = true);
    answered.then(settle, settle);
    return eventually(async () => (settled ? undefined : find()), 60_000);
  }

  it('an ephemeral launch cut by the kill: the retry at sessionsPerUser adopts it, answers its URL, and the user holds one session', async () => {
    const user = 'hal@example.com';
    const body = { ephemeral: true, appDefinition: 'patient', env: { fromMap: { COURSE: 'algorithms' } } };
    const half = await launchCutByKill(user, body);
    assert.equal(half.spec.workspace, undefined);

    const retry = launch({ user, ...body });
    // Started once the retry waits on it (its log says so): started before, it would be a session
    // that serves, the user's, not one left starting.
    const adopting = await beforeAnswer(retry, () => {
      const lines = service!.logged('adopting a session still starting');
      assert.ok(
        lines.some((line) => line.session === half.metadata.name),
        `the retry has not adopted ${half.metadata.name}`,
      );
      return true;
    });
    if (adopting) await kubeletStarts(await boundPod(half.metadata.name));
    const answer = await retry;
    assert.equal(answer.status, 200, `held at sessionsPerUser by ${half.metadata.name}: ${answer.text}`);

    await assertAdopted(answer, half);
  });

  it('an ephemeral launch cut by the kill, retried with other values: the half-started session makes way for a fresh one', async () => {
    const user = 'ida@example.com';
    const body = { ephemeral: true, appDefinition: 'patient' };
    const half = await launchCutByKill(user, { ...body, env: { fromMap: { TOKEN: 'first' } } });

    const retry = launch({ user, ...body, env: { fromMap: { TOKEN: 'second' } } });
    const fresh = await beforeAnswer(retry, async () => {
      const found = (await activeSessionsOf(stack.resources, user)).find((s) => s.metadata.uid !== half.metadata.uid);
      assert.ok(found, 'the retry created no session');
      return found;
    });
    if (fresh) await kubeletStarts(await boundPod(fresh.metadata.name));
    const answer = await retry;
    assert.equal(answer.status, 200, `held at sessionsPerUser by ${half.metadata.name}: ${answer.text}`);

    const session = await assertAnsweredAlone(stack.resources, answer, fresh!, 'only the fresh session');
    assert.equal(session.spec.envVars?.TOKEN, 'second');
    // Removed through the operator's finalizer, not left Starting.
    await eventually(async () => {
      const names = (await stack.resources.sessions.list()).map((s) => s.metadata.name);
      assert.ok(!names.includes(half.metadata.name), `${half.metadata.name} still there`);
    }, 60_000);
  });
});

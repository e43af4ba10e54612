// A service restarted during a blocking launch (issue 17): the launch's call is gone, its session is
// half-started. A retry of the same launch (same workspace, same user) on the new service adopts it
// and answers its URL once it runs; if it does not start in time, the retry removes it, so the user
// is never held at sessionsPerUser (553) by a session nobody waits for. The test plays the operator.
import assert from 'node:assert/strict';
import { LABELS } from '../../server/src/model/api-group.js';
import { sessionNameFor, userLabelValue } from '../../server/src/model/names.js';
import { eventually } from '../support/kube.js';
import {
  BASE_APP,
  SERVICE_AUTH_TOKEN,
  call,
  operatorFillsStatus,
  startTestService,
  type TestService,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;

describe('service restarted during a blocking launch: the retry adopts or clears the half-started session', function () {
  const stack = useStack('svc-restart', { apps: [BASE_APP] });
  this.timeout(120_000);
  let service: TestService | undefined;
  stack.cleanUp(() => service?.close());

  const launch = (body: Record<string, unknown>) =>
    call(service!.url, 'POST', '/service', { body: { appId, appDefinition: 'python-latest', ...body } });
  const sessionsOf = async (user: string) =>
    (await stack.resources.sessions.list(`${LABELS.user}=${userLabelValue(user)}`)).filter(
      (s) => !s.metadata.deletionTimestamp,
    );

  /** A launch that is waiting for its URL when its service restarts; resolves with the half-started session. */
  async function launchCutByRestart(user: string, workspaceName: string) {
    service = await startTestService(stack.kc, stack.namespace, { sessionsPerUser: 1 });
    const cut = launch({ user, workspaceName, timeout: 1 });
    const [half] = await eventually(async () => {
      const found = await sessionsOf(user);
      assert.equal(found.length, 1, 'the launch created its session');
      return found;
    });
    await service.close(); // the restart: the waiting call ends, its session stays
    const answer = await cut.catch((error: Error) => ({ status: 0, text: error.message }));
    assert.notEqual(answer.status, 200, 'the cut launch got no URL');
    service = await startTestService(stack.kc, stack.namespace, { sessionsPerUser: 1 });
    return half!;
  }

  it('adopts the half-started session and answers its URL once it runs', async () => {
    const user = 'ada@example.com';
    const half = await launchCutByRestart(user, 'ws-adopt');
    assert.equal(half.metadata.name, sessionNameFor('ws-adopt'));
    const retry = launch({ user, workspaceName: 'ws-adopt', timeout: 1 });
    await operatorFillsStatus(stack.resources, (name) => name === half.metadata.name);
    const answer = await retry;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.text, `https://ide.example.test/${half.metadata.name}/`);
    const [session] = await sessionsOf(user);
    assert.equal(session?.metadata.uid, half.metadata.uid, 'the same session, adopted');
  });

  it('removes it when it does not start in time, and the user launches again without 553', async () => {
    const user = 'grace@example.com';
    const half = await launchCutByRestart(user, 'ws-stuck');
    const retry = await launch({ user, workspaceName: 'ws-stuck', timeout: 0.05 });
    assert.equal(retry.status, 551, retry.text);
    await eventually(async () => assert.deepEqual(await sessionsOf(user), []), 30_000);

    const next = launch({ user, workspaceName: 'ws-next', timeout: 1 });
    await operatorFillsStatus(stack.resources, (name) => name === sessionNameFor('ws-next'));
    const answer = await next;
    assert.equal(answer.status, 200, `not held at sessionsPerUser by ${half.metadata.name}: ${answer.text}`);
  });
});

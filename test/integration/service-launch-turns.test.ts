// The launches of a burst wait their turn before the operator (LAUNCHES_BEFORE_OPERATOR), against the
// real kube-apiserver. The test plays the operator: a session it has not taken up holds its launch's
// turn; the next launch creates its session only once the operator has written a status.
import assert from 'node:assert/strict';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session } from '../../server/src/model/session.js';
import { LAUNCHES_BEFORE_OPERATOR } from '../../server/src/service/launcher.js';
import { eventually } from '../support/kube.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

describe('service launch turns before the operator (the test plays the operator)', function () {
  const stack = useStack('svc-turns', { apps: [BASE_APP], service: { sessionsPerUser: 1 } });
  this.timeout(120_000);

  const launch = (user: string, extra: Record<string, unknown> = {}) =>
    call(stack.service.url, 'POST', '/service', {
      body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition: 'python-latest', ephemeral: true, ...extra },
      timeoutMs: 100_000,
    });
  const live = async () => (await stack.resources.sessions.list()).filter((s) => !s.metadata.deletionTimestamp);
  const ofUser = async (user: string) =>
    (await live()).filter((s) => s.metadata.labels?.[LABELS.user] === userLabelValue(user));
  const serve = (s: Session) =>
    stack.resources.sessions.patchStatus(s.metadata.name, {
      phase: 'Running',
      url: `https://ide.example.test/${s.metadata.name}/`,
      startStrategy: 'eager',
    });
  /** The sessions stay as many as `count` for a second: no launch past its turn created one. */
  const staysAt = async (count: number) => {
    for (const until = Date.now() + 1000; Date.now() < until;) {
      assert.equal((await live()).length, count, 'a launch created its session without a turn');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  afterEach(async () => {
    // No operator takes its route finalizer off: the test does.
    for (const s of await stack.resources.sessions.list()) {
      await stack.resources.sessions
        .mergePatch(s.metadata.name, { metadata: { finalizers: null } })
        .catch(() => undefined);
      await stack.resources.sessions.delete(s.metadata.name).catch(() => undefined);
    }
    await eventually(async () => assert.deepEqual(await stack.resources.sessions.list(), []), 30_000);
  });

  it('creates the next session once the operator has taken one up (a status, not yet the URL)', async () => {
    const users = Array.from({ length: LAUNCHES_BEFORE_OPERATOR + 1 }, (_, i) => `turn${i}@example.com`);
    const answers = users.map((user) => launch(user));
    await eventually(async () => assert.equal((await live()).length, LAUNCHES_BEFORE_OPERATOR), 30_000);
    await staysAt(LAUNCHES_BEFORE_OPERATOR);
    // Taken up, as a lazy start the operator decided and whose pod is still starting: the turn goes.
    const [first] = await live();
    await stack.resources.sessions.patchStatus(first!.metadata.name, {
      phase: 'Pending',
      startStrategy: 'lazy',
      observedGeneration: 1,
    });
    await eventually(async () => assert.equal((await live()).length, LAUNCHES_BEFORE_OPERATOR + 1), 30_000);
    for (const s of await live()) await serve(s);
    for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200, answer.text);
  });

  it('checks the limits again once a launch had to wait: of two launches of one user, the second answers 553', async () => {
    const users = Array.from({ length: LAUNCHES_BEFORE_OPERATOR }, (_, i) => `busy${i}@example.com`);
    const answers = users.map((user) => launch(user));
    await eventually(async () => assert.equal((await live()).length, LAUNCHES_BEFORE_OPERATOR), 30_000);
    // Both pass the limits before either has a session, then wait (sessionsPerUser is 1).
    const twice = [launch('twice@example.com'), launch('twice@example.com')];
    await staysAt(LAUNCHES_BEFORE_OPERATOR);
    const held = await live();
    await serve(held[0]!);
    await eventually(async () => assert.equal((await ofUser('twice@example.com')).length, 1), 30_000);
    // The other's turn: the user's session counts now.
    await serve(held[1]!);
    const refused = await Promise.race(twice);
    assert.equal(refused.status, 553, refused.text);
    assert.equal((await ofUser('twice@example.com')).length, 1);
    for (const s of await live()) await serve(s);
    assert.deepEqual((await Promise.all(twice)).map((a) => a.status).sort(), [200, 553]);
    for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200, answer.text);
  });

  it('answers 551 to a launch whose deadline passes while it waits for its turn, having created nothing', async () => {
    const users = Array.from({ length: LAUNCHES_BEFORE_OPERATOR }, (_, i) => `held${i}@example.com`);
    const answers = users.map((user) => launch(user));
    await eventually(async () => assert.equal((await live()).length, LAUNCHES_BEFORE_OPERATOR), 30_000);
    const late = await launch('late@example.com', { timeout: 0.02 });
    assert.equal(late.status, 551, late.text);
    assert.match(late.text, /too many launches were ahead/);
    assert.deepEqual(await ofUser('late@example.com'), []);
    for (const s of await live()) await serve(s);
    for (const answer of await Promise.all(answers)) assert.equal(answer.status, 200, answer.text);
  });
});

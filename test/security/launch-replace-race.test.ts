// Issue 27, item 10 (first race): an ephemeral launch of a user at sessionsPerUser replaces a session
// of other values still starting, and deleted it by name: a session that got its URL between the
// launch's read and its delete was deleted, though it served and its own launch answered its URL.
// Replayed against the real service and kube-apiserver with the test as the operator: the service's
// client goes through a proxy that holds the replacing DELETE, and the test writes the status in
// that instant. The delete now carries the uid and resourceVersion it read as preconditions.
import assert from 'node:assert/strict';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session } from '../../server/src/model/session.js';
import { eventually } from '../support/kube.js';
import { serviceSeesSession, type Answer, launchEphemeral } from '../support/service-harness.js';
import { useHeldService } from '../support/held-service.js';

describe('security: the replace path of an ephemeral launch (27.10)', function () {
  this.timeout(120_000);
  const held = useHeldService('sec-replace', { sessionsPerUser: 1 });

  const launch = (user: string, course: string, timeout: number): Promise<Answer> =>
    launchEphemeral(held.service.url, user, timeout, course);

  const sessionsOf = async (user: string): Promise<Session[]> =>
    held.r.sessions.list(`${LABELS.user}=${userLabelValue(user)}`);

  /** The first launch's session, once the service counts it (the second launch is then at the limit). */
  async function halfStarted(user: string): Promise<Session> {
    const half = await eventually(async () => {
      const [found] = await sessionsOf(user);
      assert.ok(found, 'the first launch created its session');
      return found;
    });
    await serviceSeesSession(held.service, user, half.metadata.name);
    return half;
  }

  /** Holds the service's DELETE of `name` until the answer is called. */
  const holdDeleteOf = (name: string) =>
    held.proxy.holdRequest((method, url) => method === 'DELETE' && url.split('?')[0]!.endsWith(`/sessions/${name}`));

  it('a session that serves in the instant the replace path deletes it is kept, and both launches answer its URL', async () => {
    const user = 'replace-race@example.com';
    const first = launch(user, 'first', 1);
    const half = await halfStarted(user);
    const deleteHeld = holdDeleteOf(half.metadata.name);

    const second = launch(user, 'second', 0.1);
    const send = await deleteHeld;
    // Between the second launch's read and its delete, the operator reports the URL and the first
    // launch answers it.
    const url = `https://ide.example.test/${half.metadata.name}/`;
    await held.r.sessions.patchStatus(half.metadata.name, { phase: 'Running', url, startStrategy: 'lazy' });
    const a = await first;
    assert.equal(a.status, 200, a.text);
    assert.equal(a.text, url);
    send();

    const b = await second;
    const kept = await held.r.sessions.get(half.metadata.name);
    assert.equal(kept.metadata.uid, half.metadata.uid);
    assert.equal(kept.metadata.deletionTimestamp, undefined, 'the session that serves was deleted');
    // It serves: the user's one session, which the second launch answers (as it would a moment later).
    assert.equal(b.status, 200, b.text);
    assert.equal(b.text, url);
    assert.deepEqual(
      (await sessionsOf(user)).map((s) => s.metadata.uid),
      [half.metadata.uid],
    );
  });

  it('a session whose status changed in that instant without a URL is still replaced: the delete is retried as read again', async () => {
    const user = 'replace-retry@example.com';
    const first = launch(user, 'first', 1);
    const half = await halfStarted(user);
    const deleteHeld = holdDeleteOf(half.metadata.name);

    const second = launch(user, 'second', 1);
    const send = await deleteHeld;
    await held.r.sessions.patchStatus(half.metadata.name, { phase: 'Starting', startStrategy: 'lazy' });
    send();

    const fresh = await eventually(async () => {
      const found = (await sessionsOf(user)).find((s) => s.metadata.uid !== half.metadata.uid);
      assert.ok(found, 'the second launch created no session');
      return found;
    });
    assert.ok((await held.r.sessions.get(half.metadata.name)).metadata.deletionTimestamp, 'the half-started one goes');
    // The operator's finalizer ends it; its own launch then answers 474, as the replace path says.
    await held.r.sessions.mergePatch(half.metadata.name, { metadata: { finalizers: null } });
    const answered = await first;
    assert.equal(answered.status, 474, answered.text);
    assert.equal(fresh.spec.envVars?.COURSE, 'second');
    const url = `https://ide.example.test/${fresh.metadata.name}/`;
    await held.r.sessions.patchStatus(fresh.metadata.name, { phase: 'Running', url, startStrategy: 'lazy' });
    const replaced = await second;
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.text, url);
  });

  it('a session whose URL came but was not answered yet is replaced, and its launch answers 474, never that URL', async () => {
    const user = 'replace-unanswered@example.com';
    const first = launch(user, 'first', 1);
    const half = await halfStarted(user);
    // The first launch's write that records its answer, held: the URL is there, not yet handed out.
    const answerHeld = held.proxy.holdRequest(
      (method, url) => method === 'PATCH' && url.split('?')[0]!.endsWith(`/sessions/${half.metadata.name}`),
    );
    const url = `https://ide.example.test/${half.metadata.name}/`;
    await held.r.sessions.patchStatus(half.metadata.name, { phase: 'Running', url, startStrategy: 'lazy' });
    const send = await Promise.race([
      answerHeld,
      first.then((a) => assert.fail(`the first launch answered ${a.status} before recording it`)),
    ]);

    const second = launch(user, 'second', 1);
    await eventually(async () => {
      assert.ok((await held.r.sessions.get(half.metadata.name)).metadata.deletionTimestamp, 'not replaced yet');
    });
    send();
    const answered = await first;
    assert.equal(answered.status, 474, answered.text);

    await held.r.sessions.mergePatch(half.metadata.name, { metadata: { finalizers: null } });
    const fresh = await eventually(async () => {
      const found = (await sessionsOf(user)).find((s) => s.metadata.uid !== half.metadata.uid);
      assert.ok(found, 'the second launch created no session');
      return found;
    });
    const freshUrl = `https://ide.example.test/${fresh.metadata.name}/`;
    await held.r.sessions.patchStatus(fresh.metadata.name, { phase: 'Running', url: freshUrl, startStrategy: 'lazy' });
    const replaced = await second;
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.text, freshUrl);
  });
});

// Issue 27, item 10 (third race): an ephemeral launch of a user at sessionsPerUser adopts a session of
// the same values still starting, and at its own 551 left it starting: a session nobody might wait
// for held the user's slot. Replayed against the real service and kube-apiserver with the test as
// the operator: the adopted session goes at the adopter's deadline, as the adopter's own would,
// unless it serves in that instant (the proxy holds the removing DELETE while the test writes the URL).
import assert from 'node:assert/strict';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session } from '../../server/src/model/session.js';
import { eventually } from '../support/kube.js';
import { serviceSeesSession, type Answer, launchEphemeral } from '../support/service-harness.js';
import { useHeldService } from '../support/held-service.js';

const ADOPTER_TIMEOUT = 0.05; // 3 s

describe('security: an adopted ephemeral session at the adopter timeout (27.10)', function () {
  this.timeout(120_000);
  const held = useHeldService('sec-adopt', { sessionsPerUser: 1 });

  const launch = (user: string, timeout: number): Promise<Answer> =>
    launchEphemeral(held.service.url, user, timeout, 'algorithms');

  /** The first launch's session, once the service counts it (the adopter is then at the limit). */
  async function halfStarted(user: string): Promise<Session> {
    const half = await eventually(async () => {
      const [found] = await held.r.sessions.list(`${LABELS.user}=${userLabelValue(user)}`);
      assert.ok(found, 'the first launch created its session');
      return found;
    });
    await serviceSeesSession(held.service, user, half.metadata.name);
    return half;
  }

  it('the adopted session still starting at the adopter deadline goes, as the adopter own would', async () => {
    const user = 'adopt-timeout@example.com';
    const first = launch(user, 1);
    const half = await halfStarted(user);

    const adopter = await launch(user, ADOPTER_TIMEOUT);
    assert.equal(adopter.status, 551, adopter.text);
    // The adopter answers once its cache shows the removal: read right after, it is under way.
    const after = await held.r.sessions.get(half.metadata.name);
    assert.ok(after.metadata.deletionTimestamp, 'the adopted session was left starting, holding the user');
    // The operator's finalizer ends it; the launch that created it answers 474.
    await held.r.sessions.mergePatch(half.metadata.name, { metadata: { finalizers: null } });
    const created = await first;
    assert.equal(created.status, 474, created.text);
  });

  it('one that serves in the instant of its removal is kept, and the adopter answers its URL', async () => {
    const user = 'adopt-serves@example.com';
    const first = launch(user, 1);
    const half = await halfStarted(user);
    const deleteHeld = held.proxy.holdRequest(
      (method, url) => method === 'DELETE' && url.split('?')[0]!.endsWith(`/sessions/${half.metadata.name}`),
    );

    const adopter = launch(user, ADOPTER_TIMEOUT);
    const send = await Promise.race([
      deleteHeld,
      adopter.then((a) => assert.fail(`the adopter answered ${a.status} without removing the session`)),
    ]);
    const url = `https://ide.example.test/${half.metadata.name}/`;
    await held.r.sessions.patchStatus(half.metadata.name, { phase: 'Running', url, startStrategy: 'lazy' });
    send();

    const [a, b] = await Promise.all([adopter, first]);
    assert.equal(a.status, 200, a.text);
    assert.equal(a.text, url);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.text, url);
    const kept = await held.r.sessions.get(half.metadata.name);
    assert.equal(kept.metadata.deletionTimestamp, undefined, 'the session that serves was deleted');
  });
});

// Attack 10 of issue 15, replayed against the real service and kube-apiserver: workspace and session
// names. Another user could take a landing-page workspace name in advance (or simply have the same
// cut user part), the session names of `ws-x` and `x` were the same (so were a long name's cut
// session name and a short name spelling it out), and the victim's launch then got 409 and left its
// new workspace behind. Now a landing name is reserved for its user, session names are one-to-one,
// and the 409 path removes what the call created.
import assert from 'node:assert/strict';
import { LABELS } from '../../server/src/model/api-group.js';
import { dnsLabel, landingWorkspaceName, sessionNameFor, userLabelValue } from '../../server/src/model/names.js';
import { eventually } from '../support/kube.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call, operatorFillsStatus, type Answer } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const APP = 'python-latest';
const REPO = 'https://git.example.org/course/exercise-01.git';

/** The session name of a workspace before the fix: `ws-` dropped, cut by dnsLabel with an 8-hex hash. */
const oldSessionNameFor = (workspace: string) => dnsLabel(['session', workspace.replace(/^ws-/, '')]);

describe('security: workspace and session names (10)', function () {
  const stack = useStack('sec-names', { apps: [BASE_APP], service: {} });
  this.timeout(120_000);

  const launch = (user: string, workspaceName: string, timeoutMinutes = 0.5) =>
    call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: APP, workspaceName, timeout: timeoutMinutes },
    });

  /**
   * A launch the operator (played by the test) lets run: answers the launch's answer, at once when it
   * is refused before its session exists.
   */
  async function launchRunning(user: string, workspaceName: string): Promise<Answer> {
    const answer = launch(user, workspaceName);
    const filled = operatorFillsStatus(
      stack.resources,
      (_name, spec) => spec.user === user && spec.workspace === workspaceName,
      undefined,
      20_000,
    ).catch(() => undefined);
    const refused = await Promise.race([answer, filled.then(() => undefined)]);
    return refused ?? answer;
  }

  const workspaceOwner = async (name: string) => (await stack.resources.workspaces.find(name))?.spec.user;

  it('ws-x and x get different sessions: the second launch is not refused with 409', async () => {
    const mallory = 'mallory-1@example.com';
    const bob = 'bob-1@example.com';
    const first = await launchRunning(mallory, 'x');
    assert.equal(first.status, 200, first.text);
    const second = await launchRunning(bob, 'ws-x');
    assert.equal(second.status, 200, second.text);
    assert.notEqual(first.text, second.text);
    const bobs = (await stack.resources.sessions.list()).filter((s) => s.spec.user === bob);
    assert.deepEqual(
      bobs.map((s) => [s.metadata.name, s.spec.workspace]),
      [[sessionNameFor('ws-x'), 'ws-x']],
    );
  });

  it("a short name spelling out a long name's cut session name does not take that session", async () => {
    const victim = `ws-${'course-project-'.repeat(3)}final-version-1`;
    const crafted = `ws-${oldSessionNameFor(victim).slice('session-'.length)}`;
    assert.equal(oldSessionNameFor(crafted), oldSessionNameFor(victim), 'the attack on the old names');
    const mallory = 'mallory-2@example.com';
    const bob = 'bob-2@example.com';
    const squat = await launchRunning(mallory, crafted);
    assert.equal(squat.status, 200, squat.text);
    const answer = await launchRunning(bob, victim);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(await workspaceOwner(victim), bob);
  });

  it("another user cannot create a user's landing-page workspace in advance (403, nothing written)", async () => {
    const bob = 'bob-3@example.com';
    const mallory = 'mallory-3@example.com';
    const bobsName = landingWorkspaceName(APP, bob, REPO);
    // Short launch timeout: before the fix the squat was accepted and waited for an operator.
    const squat = await launch(mallory, bobsName, 0.05);
    assert.equal(squat.status, 403, squat.text);
    assert.deepEqual(squat.json, { code: 403, reason: 'the workspace name is reserved for another user' });
    assert.equal(await stack.resources.workspaces.find(bobsName), undefined, 'no workspace was written');
    assert.equal(await stack.resources.sessions.find(sessionNameFor(bobsName)), undefined, 'no session was written');

    const own = await launchRunning(bob, bobsName);
    assert.equal(own.status, 200, own.text);
    assert.equal(await workspaceOwner(bobsName), bob);
    // The same link opens the same workspace.
    const again = await launch(bob, landingWorkspaceName(APP, bob, REPO));
    assert.deepEqual([again.status, again.text], [200, own.text]);
  });

  it('two users whose user parts are cut the same get different landing workspaces', async () => {
    const bob = 'bob-the-student@example.com';
    const lookalike = 'bob-the-student@example.net';
    const theirs = landingWorkspaceName(APP, lookalike, REPO);
    const bobs = landingWorkspaceName(APP, bob, REPO);
    const first = await launchRunning(lookalike, theirs);
    assert.equal(first.status, 200, first.text);
    const second = await launchRunning(bob, bobs);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual([await workspaceOwner(theirs), await workspaceOwner(bobs)], [lookalike, bob]);
  });

  it('a launch refused with 409 (session name taken) removes the workspace it created', async () => {
    const bob = 'bob-4@example.com';
    const workspace = 'ws-victim-workspace';
    // Someone else's session holds the name (made directly, as kubectl or an older release would).
    const mallory = 'mallory-4@example.com';
    await stack.resources.sessions.create({
      metadata: { name: sessionNameFor(workspace), labels: { [LABELS.user]: userLabelValue(mallory) } },
      spec: { user: mallory, appDefinition: APP, workspace: 'ws-elsewhere' },
    });
    const answer = await launch(bob, workspace, 0.05);
    assert.equal(answer.status, 409, answer.text);
    assert.deepEqual(answer.json, { code: 409, reason: "the workspace's session name is held by another session" });
    await eventually(async () => {
      const left = await stack.resources.workspaces.find(workspace);
      assert.ok(!left || left.metadata.deletionTimestamp, 'the workspace the launch created is gone');
    }, 10_000);
  });
});

// Issue 27, item 1: `sessionsPerUser` counted sessions only; one user made 6 claims in 2 s with
// `POST /service/workspace`, and the namespace's quota is shared by everyone. Replayed against the real
// service and kube-apiserver: a user's workspaces are capped (`workspacesPerUser`), concurrent creates
// included, on both ways a workspace is made (POST /service/workspace and a launch naming a new one).
import assert from 'node:assert/strict';
import net from 'node:net';
import { ErrorCode } from '../../server/src/model/error-codes.js';
import { eventually } from '../support/kube.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call, operatorFillsStatus } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const LIMIT = 3;
const AT_LIMIT = { code: 554, reason: `user is at the limit of ${LIMIT} workspace(s); delete one first` };

describe('security: workspaces per user (27.1)', function () {
  this.timeout(120_000);

  const create = (user: string) =>
    call(stack.service.url, 'POST', '/service/workspace', { body: { appId, user, appDefinition: 'python-latest' } });
  const workspacesOf = async (user: string) =>
    (await stack.resources.workspaces.list()).filter((w) => w.spec.user === user && !w.metadata.deletionTimestamp);

  const stack = useStack('sec-ws-limit', { apps: [BASE_APP], service: { workspacesPerUser: LIMIT } });

  it('creates at most workspacesPerUser workspaces of one user, even when six are asked for at once', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => create('hoarder@example.com')));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 554, 554, 554], answers.map((a) => a.text).join('\n'));
    for (const refused of answers.filter((a) => a.status === ErrorCode.workspacesPerUserReached)) {
      assert.deepEqual(refused.json, AT_LIMIT);
    }
    assert.equal((await workspacesOf('hoarder@example.com')).length, LIMIT, 'the API server holds three');
    assert.equal((await create('neighbour@example.com')).status, 200, 'another user is not held');
  });

  it('refuses a launch that would make one more workspace, before it writes anything', async () => {
    const answer = await call(stack.service.url, 'POST', '/service', {
      body: {
        appId,
        user: 'hoarder@example.com',
        appDefinition: 'python-latest',
        workspaceName: 'ws-one-more',
        timeout: 0.05,
      },
    });
    assert.equal(answer.status, 554, answer.text);
    assert.deepEqual(answer.json, AT_LIMIT);
    assert.equal(await stack.resources.workspaces.find('ws-one-more'), undefined);
    assert.equal((await stack.resources.sessions.list()).length, 0, 'no session was created');
  });

  it('admits a new workspace again once the user deletes one', async () => {
    const [first] = await workspacesOf('hoarder@example.com');
    const deleted = await call(stack.service.url, 'DELETE', '/service/workspace', {
      body: { appId, user: 'hoarder@example.com', workspaceName: first!.metadata.name },
    });
    assert.equal(deleted.status, 200, deleted.text);
    await eventually(async () => {
      const again = await create('hoarder@example.com');
      assert.equal(again.status, 200, again.text);
    }, 10_000);
    assert.equal((await create('hoarder@example.com')).status, 554);
  });

  describe('a workspace that a cancelled or failed launch created and that never served goes with it', () => {
    /** A launch of a new workspace that times out while its session waits at the operator's gate (kept). */
    const leaveQueued = async (user: string, workspaceName: string) => {
      const launch = call(stack.service.url, 'POST', '/service', {
        body: { appId, user, appDefinition: 'python-latest', workspaceName, timeout: 0.05 },
      });
      const sessionName = await operatorFillsStatus(
        stack.resources,
        (_name, spec) => spec.workspace === workspaceName,
        () => ({
          phase: 'Pending',
          conditions: [
            {
              type: 'Admitted',
              status: 'False',
              reason: 'Queued',
              message: 'waiting for a lazy start',
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        }),
      );
      const answer = await launch;
      assert.equal(answer.status, 551, answer.text);
      assert.match(answer.text, /keeps its place/);
      assert.ok(await stack.resources.workspaces.find(workspaceName), 'the queued launch keeps its workspace');
      return sessionName;
    };
    const gone = (workspaceName: string) =>
      eventually(async () => {
        const workspace = await stack.resources.workspaces.find(workspaceName);
        assert.ok(!workspace || workspace.metadata.deletionTimestamp, `${workspaceName} is still there`);
      }, 10_000);

    it('cancelled: stopping the session of a new workspace before it served removes the workspace too', async () => {
      const user = 'canceller@example.com';
      const sessionName = await leaveQueued(user, 'ws-cancelled');
      const stopped = await call(stack.service.url, 'DELETE', '/service/session', {
        body: { appId, user, sessionName },
      });
      assert.equal(stopped.status, 200, stopped.text);
      await gone('ws-cancelled');
    });

    it('failed: a launch that adopted such a session and saw it fail removes the workspace too', async () => {
      const user = 'adopter@example.com';
      const sessionName = await leaveQueued(user, 'ws-failed');
      const adopter = call(stack.service.url, 'POST', '/service', {
        body: { appId, user, appDefinition: 'python-latest', workspaceName: 'ws-failed', timeout: 0.2 },
      });
      // Failed only once adopted: a launch that finds it failed already replaces it instead (and, with
      // nobody here to remove it, answers 551), as a loaded machine showed.
      await eventually(
        () =>
          assert.ok(
            stack.service.logs.some(
              (line) => line.includes('adopting a session still starting') && line.includes(sessionName),
            ),
            'the launch adopted the queued session',
          ),
        10_000,
      );
      await operatorFillsStatus(
        stack.resources,
        (_name, spec) => spec.workspace === 'ws-failed',
        () => ({
          phase: 'Failed',
          error: { code: 552, reason: 'app definition python-latest is at maxInstances (1)' },
        }),
      );
      const answer = await adopter;
      assert.equal(answer.status, 552, answer.text);
      await gone('ws-failed');
    });

    it('cancelled before its session exists: a launch whose caller is gone leaves no workspace and no session', async () => {
      const refusedLaunches = async () => {
        const metrics = await call(stack.service.url, 'GET', '/q/metrics');
        const line = metrics.text
          .split('\n')
          .find((l) => l.startsWith('ide_cloud_launch_duration_seconds_count{') && l.includes('outcome="refused"'));
        return Number(line?.split(' ').pop() ?? 0);
      };
      const before = await refusedLaunches();
      // The browser's cancel aborts its launch: the connection closes right after the request is sent.
      const body = JSON.stringify({
        appId,
        user: 'quick@example.com',
        appDefinition: 'python-latest',
        workspaceName: 'ws-gone-early',
        timeout: 1,
      });
      const socket = net.connect(Number(new URL(stack.service.url).port), '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(
        `POST /service HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        () => socket.destroy(),
      );
      // The launch ends at once (not at its timeout of a minute), and what it made is gone or going.
      await eventually(async () => assert.equal(await refusedLaunches(), before + 1), 10_000);
      const workspace = await stack.resources.workspaces.find('ws-gone-early');
      assert.ok(!workspace || workspace.metadata.deletionTimestamp, 'no workspace left');
      const sessions = (await stack.resources.sessions.list()).filter((x) => x.spec.workspace === 'ws-gone-early');
      assert.ok(
        sessions.every((x) => x.metadata.deletionTimestamp),
        'no session left',
      );
    });

    it('a workspace whose session served stays when the session is stopped', async () => {
      const user = 'student@example.com';
      const launch = call(stack.service.url, 'POST', '/service', {
        body: { appId, user, appDefinition: 'python-latest', workspaceName: 'ws-served', timeout: 0.2 },
      });
      const sessionName = await operatorFillsStatus(stack.resources, (_name, spec) => spec.workspace === 'ws-served');
      assert.equal((await launch).status, 200);
      const stopped = await call(stack.service.url, 'DELETE', '/service/session', {
        body: { appId, user, sessionName },
      });
      assert.equal(stopped.status, 200, stopped.text);
      const workspace = await stack.resources.workspaces.find('ws-served');
      assert.ok(workspace && !workspace.metadata.deletionTimestamp, 'the served workspace keeps the work');
    });
  });
});

// Launch (POST /service) and the separate steps against the real kube-apiserver. The test plays the
// operator: it waits for the Session the service creates and writes the status the operator would.
import assert from 'node:assert/strict';
import { activityToken } from '../../server/src/model/activity-token.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { isDnsLabel, sessionNameFor, userLabelValue } from '../../server/src/model/names.js';
import { eventually } from '../support/kube.js';
import {
  BASE_APP,
  SERVICE_AUTH_TOKEN,
  call,
  operatorFillsStatus,
  serviceSeesSession,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;

describe('service launch (the test plays the operator)', function () {
  const stack = useStack('svc-launch', {
    apps: [
      BASE_APP,
      { ...BASE_APP, name: 'with-sidecar', sidecars: [{ name: 'db', image: 'postgres:16', mountWorkspace: true }] },
      { ...BASE_APP, name: 'tiny', maxInstances: 1 },
      { ...BASE_APP, name: 'java-17-latest' },
    ],
    // Activity reports need the IDE's activity token here: the hardening an installation can turn on.
    service: { sessionsPerUser: 1, activityRequiresToken: true },
  });
  this.timeout(120_000);
  let users = 0;
  /** A fresh user per test: sessionsPerUser is 1. */
  const newUser = () => `student${++users}@example.com`;

  const launch = (body: Record<string, unknown>) =>
    call(stack.service.url, 'POST', '/service', { body: { appId, ...body } });
  const ofUser = async (user: string) => ({
    workspaces: (await stack.resources.workspaces.list(`${LABELS.user}=${userLabelValue(user)}`)).filter(
      (w) => !w.metadata.deletionTimestamp,
    ),
    sessions: (await stack.resources.sessions.list(`${LABELS.user}=${userLabelValue(user)}`)).filter(
      (s) => !s.metadata.deletionTimestamp,
    ),
  });

  it('creates a generated workspace and a session, and answers the URL once the operator reports it', async () => {
    const user = newUser();
    const answer = launch({
      user,
      appDefinition: 'python-latest',
      label: 'Exercise 1',
      env: { fromMap: { IDE: 'true' } },
    });
    const name = await operatorFillsStatus(stack.resources, (_n, spec) => spec.user === user);
    const response = await answer;
    assert.equal(response.status, 200, response.text);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(response.text, `https://ide.example.test/${name}/`);

    const { workspaces, sessions } = await ofUser(user);
    assert.equal(workspaces.length, 1);
    const workspace = workspaces[0]!;
    assert.ok(isDnsLabel(workspace.metadata.name));
    assert.match(workspace.metadata.name, /^ws-python-latest-student\d+-example-com-[0-9a-f-]+$/);
    assert.deepEqual(workspace.spec, { user, appDefinition: 'python-latest', label: 'Exercise 1' });
    assert.equal(workspace.metadata.labels?.[LABELS.appDefinition], 'python-latest');
    const session = sessions[0]!;
    assert.equal(session.metadata.name, sessionNameFor(workspace.metadata.name));
    assert.equal(session.spec.workspace, workspace.metadata.name);
    assert.deepEqual(session.spec.envVars, { IDE: 'true' });
    assert.match(session.spec.sessionSecret ?? '', /^[0-9a-f]{32}$/);
    assert.equal(session.metadata.labels?.[LABELS.workspace], workspace.metadata.name);
    assert.equal(session.metadata.labels?.[LABELS.user], userLabelValue(user));
    assert.equal(session.metadata.ownerReferences, undefined, 'no owner reference from session to workspace');
  });

  it('reuses a named workspace and answers the running session again (idempotent second launch)', async () => {
    const user = newUser();
    const request = { user, appDefinition: 'python-latest', workspaceName: 'ws-stable-name' };
    const first = launch(request);
    await operatorFillsStatus(stack.resources, (_n, spec) => spec.user === user);
    const firstAnswer = await first;
    assert.equal(firstAnswer.status, 200, firstAnswer.text);
    const second = await launch(request);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.text, firstAnswer.text);
    const { workspaces, sessions } = await ofUser(user);
    assert.deepEqual(
      workspaces.map((w) => w.metadata.name),
      ['ws-stable-name'],
    );
    assert.deepEqual(
      sessions.map((s) => s.metadata.name),
      [sessionNameFor('ws-stable-name')],
    );
  });

  it('replaces a failed session of the workspace once it is gone (its finalizer first), then answers the new URL', async () => {
    const user = newUser();
    const workspace = 'ws-after-failure';
    const name = sessionNameFor(workspace);
    const labels = { [LABELS.user]: userLabelValue(user) };
    await stack.resources.workspaces.create({
      metadata: { name: workspace, labels },
      spec: { user, appDefinition: 'python-latest' },
    });
    // A failed session that still holds a finalizer, as the operator's route finalizer would.
    await stack.resources.sessions.create({
      metadata: { name, labels, finalizers: ['ide-cloud.io/test-hold'] },
      spec: { user, appDefinition: 'python-latest', workspace },
    });
    await stack.resources.sessions.patchStatus(name, {
      phase: 'Failed',
      error: { code: 500, reason: 'the pod could not start' },
    });

    const answer = launch({ user, appDefinition: 'python-latest', workspaceName: workspace });
    await eventually(
      async () => assert.ok((await stack.resources.sessions.get(name)).metadata.deletionTimestamp, 'not deleted yet'),
      10_000,
    );
    await stack.resources.sessions.mergePatch(name, { metadata: { finalizers: null } });
    await operatorFillsStatus(stack.resources, (n) => n === name);
    const result = await answer;
    assert.equal(result.status, 200, result.text);
    assert.equal(result.text, `https://ide.example.test/${name}/`);
  });

  it('waits for a session that another launch is starting, then answers its URL', async () => {
    const user = newUser();
    const request = { user, appDefinition: 'python-latest', workspaceName: 'ws-twice-at-once' };
    const first = launch(request);
    await eventually(async () => assert.equal((await ofUser(user)).sessions.length, 1));
    const second = launch(request);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await operatorFillsStatus(stack.resources, (_n, spec) => spec.user === user);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(a.text, b.text);
    assert.equal((await ofUser(user)).sessions.length, 1);
  });

  it('answers 551 at the timeout and removes the half-started session and the workspace it created', async () => {
    const user = newUser();
    const started = Date.now();
    const answer = await launch({ user, appDefinition: 'python-latest', timeout: 0.02 });
    assert.equal(answer.status, 551, answer.text);
    assert.deepEqual(answer.json, { code: 551, reason: 'the session did not become ready in time' });
    assert.ok(Date.now() - started < 10_000);
    await eventually(async () => assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] }));
  });

  it('keeps an existing workspace when a launch on it times out', async () => {
    const user = newUser();
    const created = await call(stack.service.url, 'POST', '/service/workspace', {
      body: { appId, user, appDefinition: 'python-latest', label: 'mine' },
    });
    assert.equal(created.status, 200, created.text);
    const name = (created.json as { name: string }).name;
    const answer = await launch({ user, appDefinition: 'python-latest', workspaceName: name, timeout: 0.02 });
    assert.equal(answer.status, 551);
    await eventually(async () => {
      const { workspaces, sessions } = await ofUser(user);
      assert.deepEqual(
        workspaces.map((w) => w.metadata.name),
        [name],
      );
      assert.deepEqual(sessions, []);
    });
  });

  it('answers the operator refusal (Failed with error) and cleans up', async () => {
    const user = newUser();
    const answer = launch({ user, appDefinition: 'python-latest' });
    await operatorFillsStatus(
      stack.resources,
      (_n, spec) => spec.user === user,
      () => ({ phase: 'Failed', error: { code: 552, reason: 'app definition python-latest is at maxInstances (1)' } }),
    );
    const response = await answer;
    assert.equal(response.status, 552);
    assert.deepEqual(response.json, { code: 552, reason: 'app definition python-latest is at maxInstances (1)' });
    await eventually(async () => assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] }));
  });

  it('refuses with 552 at maxInstances before creating anything', async () => {
    const other = newUser();
    await stack.resources.sessions.create({
      metadata: { name: 'tiny-occupant', labels: { [LABELS.user]: userLabelValue(other) } },
      spec: { user: other, appDefinition: 'tiny' },
    });
    // The limits check reads the service's session cache: let it see the occupant first.
    await serviceSeesSession(stack.service, other, 'tiny-occupant');
    const user = newUser();
    const answer = await launch({ user, appDefinition: 'tiny' });
    assert.equal(answer.status, 552);
    assert.deepEqual(answer.json, { code: 552, reason: 'app definition tiny is at maxInstances (1)' });
    assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] });
  });

  it('refuses with 553 when the user is at sessionsPerUser, before creating anything', async () => {
    const user = newUser();
    await stack.resources.sessions.create({
      metadata: { name: 'already-running', labels: { [LABELS.user]: userLabelValue(user) } },
      spec: { user, appDefinition: 'python-latest' },
    });
    await serviceSeesSession(stack.service, user, 'already-running');
    const answer = await launch({ user, appDefinition: 'python-latest' });
    assert.equal(answer.status, 553);
    assert.deepEqual(answer.json, { code: 553, reason: 'user is at the limit of 1 concurrent session(s)' });
    const { workspaces, sessions } = await ofUser(user);
    assert.deepEqual(workspaces, []);
    assert.deepEqual(
      sessions.map((s) => s.metadata.name),
      ['already-running'],
    );
  });

  it('launches an ephemeral session without a workspace', async () => {
    const user = newUser();
    const answer = launch({ user, appDefinition: 'python-latest', ephemeral: true });
    const name = await operatorFillsStatus(stack.resources, (_n, spec) => spec.user === user);
    assert.equal((await answer).status, 200);
    const { workspaces, sessions } = await ofUser(user);
    assert.deepEqual(workspaces, []);
    assert.equal(sessions[0]?.metadata.name, name);
    assert.equal(sessions[0]?.spec.workspace, undefined);
    assert.ok(isDnsLabel(name) && name.startsWith('session-python-latest-'));
  });

  it('answers 400 for an ephemeral launch of an app definition with workspace-mounting sidecars', async () => {
    const user = newUser();
    const answer = await launch({ user, appDefinition: 'with-sidecar', ephemeral: true });
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.json, {
      code: 400,
      reason: 'the app definition has workspace-mounting sidecars: use a workspace-backed launch',
    });
    const viaSession = await call(stack.service.url, 'POST', '/service/session', {
      body: { appId, user, appDefinition: 'with-sidecar' },
    });
    assert.equal(viaSession.status, 400);
    assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] });
  });

  it('answers 473 for an unknown app definition and 475 for a workspace of another app definition', async () => {
    const user = newUser();
    assert.equal((await launch({ user, appDefinition: 'cobol-latest' })).status, 473);
    const created = await call(stack.service.url, 'POST', '/service/workspace', {
      body: { appId, user, appDefinition: 'java-17-latest' },
    });
    const name = (created.json as { name: string }).name;
    const answer = await launch({ user, appDefinition: 'python-latest', workspaceName: name });
    assert.equal(answer.status, 475);
    assert.deepEqual(answer.json, { code: 475, reason: 'the workspace exists with another app definition' });
  });

  it("refuses a launch on another user's workspace with 403 and an invalid workspace name with 471", async () => {
    const owner = newUser();
    const created = await call(stack.service.url, 'POST', '/service/workspace', { body: { appId, user: owner } });
    const name = (created.json as { name: string }).name;
    const thief = newUser();
    assert.equal((await launch({ user: thief, appDefinition: 'python-latest', workspaceName: name })).status, 403);
    const invalid = await launch({ user: thief, appDefinition: 'python-latest', workspaceName: 'Not_A_Name' });
    assert.equal(invalid.status, 471);
    assert.deepEqual(await ofUser(thief), { workspaces: [], sessions: [] });
  });

  it('separate steps: create workspace, start session on it, list, activity, stop, delete workspace', async () => {
    const user = newUser();
    const created = await call(stack.service.url, 'POST', '/service/workspace', {
      body: { appId, user, appDefinition: 'python-latest', label: 'Step by step' },
    });
    assert.equal(created.status, 200);
    const workspace = created.json as Record<string, unknown>;
    assert.deepEqual(Object.keys(workspace).sort(), [
      'active',
      'appDefinition',
      'creationTimestamp',
      'label',
      'name',
      'user',
    ]);
    assert.equal(workspace.active, false);
    const name = workspace.name as string;

    const unknown = await call(stack.service.url, 'POST', '/service/session', {
      body: { appId, user, appDefinition: 'python-latest', workspaceName: 'ws-does-not-exist' },
    });
    assert.equal(unknown.status, 471);

    const start = call(stack.service.url, 'POST', '/service/session', {
      body: { appId, user, appDefinition: 'python-latest', workspaceName: name },
    });
    const sessionName = await operatorFillsStatus(stack.resources, (_n, spec) => spec.workspace === name);
    assert.equal((await start).text, `https://ide.example.test/${sessionName}/`);

    const workspaces = await call(stack.service.url, 'GET', `/service/workspace/${appId}/${encodeURIComponent(user)}`);
    assert.deepEqual(
      (workspaces.json as { name: string; active: boolean }[]).map((w) => [w.name, w.active]),
      [[name, true]],
    );
    const sessions = await call(stack.service.url, 'GET', `/service/session/${appId}/${encodeURIComponent(user)}`);
    const item = (sessions.json as Record<string, unknown>[])[0]!;
    assert.deepEqual(
      { ...item, creationTimestamp: undefined },
      {
        name: sessionName,
        workspace: name,
        appDefinition: 'python-latest',
        user,
        url: `https://ide.example.test/${sessionName}/`,
        phase: 'Running',
        startStrategy: 'lazy',
        creationTimestamp: undefined,
      },
    );

    const token = activityToken((await stack.resources.sessions.get(sessionName)).spec.sessionSecret!, sessionName);
    const before = Date.now();
    const noSecret = await call(stack.service.url, 'PATCH', '/service/session', { body: { appId, sessionName } });
    assert.equal(noSecret.status, 401, 'anonymous mode, hardened: activity needs the activity token');
    const wrongSecret = await call(stack.service.url, 'PATCH', '/service/session', {
      body: { appId, sessionName },
      headers: { 'x-activity-token': 'guess' },
    });
    assert.equal(wrongSecret.status, 403);
    const activity = await call(stack.service.url, 'PATCH', '/service/session', {
      body: { appId, sessionName },
      headers: { 'x-activity-token': token },
    });
    assert.equal(activity.status, 200);
    assert.equal(activity.json, true);
    const lastActivity = (await stack.resources.sessions.get(sessionName)).status?.lastActivity;
    assert.ok(lastActivity && Date.parse(lastActivity) >= before - 1000, String(lastActivity));

    const otherUser = await call(stack.service.url, 'DELETE', '/service/session', {
      body: { appId, user: newUser(), sessionName },
    });
    assert.equal(otherUser.status, 403);
    const stopped = await call(stack.service.url, 'DELETE', '/service/session', { body: { appId, user, sessionName } });
    assert.equal(stopped.json, true);
    const again = await call(stack.service.url, 'DELETE', '/service/session', { body: { appId, user, sessionName } });
    assert.equal(again.status, 200);
    assert.equal(again.json, true, 'true also when already gone');

    const deleted = await call(stack.service.url, 'DELETE', '/service/workspace', {
      body: { appId, user, workspaceName: name },
    });
    assert.equal(deleted.json, true);
    await eventually(async () => assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] }));
  });

  it('deleting a workspace ends its session', async () => {
    const user = newUser();
    const answer = launch({ user, appDefinition: 'python-latest', workspaceName: 'ws-to-delete' });
    await operatorFillsStatus(stack.resources, (_n, spec) => spec.user === user);
    assert.equal((await answer).status, 200);
    const deleted = await call(stack.service.url, 'DELETE', '/service/workspace', {
      body: { appId, user, workspaceName: 'ws-to-delete' },
    });
    assert.equal(deleted.json, true);
    await eventually(async () => assert.deepEqual(await ofUser(user), { workspaces: [], sessions: [] }));
  });

  it('counts launches in the duration histogram by app definition, outcome and start strategy', async () => {
    const metrics = await call(stack.service.url, 'GET', '/q/metrics');
    assert.match(
      metrics.text,
      /ide_cloud_launch_duration_seconds_count\{app_definition="python-latest",outcome="success",start_strategy="lazy"\} \d+/,
    );
    assert.match(
      metrics.text,
      /ide_cloud_launch_duration_seconds_count\{app_definition="python-latest",outcome="timeout",start_strategy="none"\} \d+/,
    );
    assert.match(
      metrics.text,
      /ide_cloud_launch_duration_seconds_count\{app_definition="python-latest",outcome="reused",start_strategy="lazy"\} \d+/,
    );
    assert.match(metrics.text, /ide_cloud_http_requests_total\{method="POST",route="\/service",status="200"\} \d+/);
    assert.match(metrics.text, /ide_cloud_sessions\{app_definition="[a-z0-9-]+",phase="Running"\} \d+/);
    assert.match(metrics.text, /ide_cloud_pool_instances\{app_definition="python-latest",state="desired"\} 0/);
  });
});

// The clients in the field, as they write their requests: every JSON body in the envelope they put
// around it (`kind`, the model's name in lowerCamelCase, and `serviceUrl`), with fields this service
// does not know, and the spec's activity request without any header. Every endpoint of the spec, with
// the real operator on the local control plane, answers what the spec says.
import assert from 'node:assert/strict';
import { sessionNameFor } from '../../server/src/model/names.js';
import { eventually } from '../support/kube.js';
import { sessionUrlPattern } from '../support/landing.js';
import { provideVolume } from '../support/operator.js';
import { BASE_APP, ADMIN_API_TOKEN, SERVICE_AUTH_TOKEN, call, type Answer } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const user = 'field-client@example.com';
/** A value only ever sent in fields the service does not know: it must never reach a log. */
const STRANGER_VALUE = 'stranger-value-7c1e';

describe('clients in the field: envelope, unknown fields, the spec activity request', function () {
  const stack = useStack('svc-compat', {
    apps: [BASE_APP],
    operator: { eagerStart: false, sessionsPerUser: 1 },
    service: { sessionsPerUser: 1 },
  });
  this.timeout(180_000);

  /** A body as a field client sends it: its kind, the base URL it was configured with, and extras. */
  function envelope(kind: string, body: Record<string, unknown>): Record<string, unknown> {
    return { kind, serviceUrl: stack.service.url, ...body, clientVersion: '1.3.0', trace: { id: STRANGER_VALUE } };
  }

  function send(method: string, path: string, kind: string, body: Record<string, unknown>, admin = false) {
    const headers: Record<string, string> = admin ? { 'x-admin-api-token': ADMIN_API_TOKEN } : {};
    return call(stack.service.url, method, path, { body: envelope(kind, body), headers });
  }

  function assertError(answer: Answer, code: number): void {
    assert.equal(answer.status, code, answer.text);
    assert.equal((answer.json as { code: number }).code, code);
    assert.equal(typeof (answer.json as { reason: unknown }).reason, 'string');
  }

  it('pings and lists app definitions', async () => {
    assert.equal((await call(stack.service.url, 'GET', `/service/${appId}`)).json, true);
    const definitions = await call(stack.service.url, 'GET', `/service/appdefinition/${appId}`);
    assert.deepEqual(
      (definitions.json as { name: string }[]).map((d) => d.name),
      ['python-latest'],
    );
  });

  it('creates, lists, launches, relaunches (same URL), reports activity, stops and deletes', async () => {
    const created = await send('POST', '/service/workspace', 'workspaceCreationRequest', {
      appId,
      user,
      appDefinition: 'python-latest',
      label: 'Exercise 1',
    });
    assert.equal(created.status, 200, created.text);
    const workspace = (created.json as { name: string; user: string; label: string }).name;
    assert.equal((created.json as { user: string }).user, user);
    await provideVolume(stack.kc, stack.namespace, workspace);
    const workspaces = await call(stack.service.url, 'GET', `/service/workspace/${appId}/${encodeURIComponent(user)}`);
    assert.deepEqual(
      (workspaces.json as { name: string; label: string }[]).map((w) => [w.name, w.label]),
      [[workspace, 'Exercise 1']],
    );

    const launch = {
      appId,
      user,
      appDefinition: 'python-latest',
      workspaceName: workspace,
      timeout: 2,
      env: { fromMap: { IDE: 'true' }, fromFiles: [STRANGER_VALUE] },
    };
    const first = await send('POST', '/service', 'launchRequest', launch);
    assert.equal(first.status, 200, first.text);
    const sessionName = sessionNameFor(workspace);
    assert.match(first.text, sessionUrlPattern(sessionName));
    const again = await send('POST', '/service', 'launchRequest', launch);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.text, first.text, 'the same workspace answers the same URL');
    assert.deepEqual((await stack.resources.sessions.get(sessionName)).spec.envVars, { IDE: 'true' });

    const sessions = await call(stack.service.url, 'GET', `/service/session/${appId}/${encodeURIComponent(user)}`);
    assert.deepEqual(
      (sessions.json as { name: string; url: string; workspace: string }[]).map((s) => [s.name, s.url, s.workspace]),
      [[sessionName, first.text, workspace]],
    );

    // Exactly the spec's SessionActivityRequest, as the IDE clients send it: no header of any kind.
    const before = Date.now();
    const activity = await call(stack.service.url, 'PATCH', '/service/session', {
      body: { appId, sessionName },
    });
    assert.equal(activity.status, 200, activity.text);
    assert.equal(activity.json, true);
    const enveloped = await send('PATCH', '/service/session', 'sessionActivityRequest', { appId, sessionName });
    assert.equal(enveloped.json, true, enveloped.text);
    const lastActivity = (await stack.resources.sessions.get(sessionName)).status?.lastActivity;
    assert.ok(lastActivity && Date.parse(lastActivity) >= before - 1000, String(lastActivity));

    // The session type has no config store and the cluster no metrics API: the documented errors.
    assertError(
      await send('POST', `/service/session/${sessionName}/config`, 'sessionSetConfigValueRequest', {
        appId,
        key: 'editor.fontSize',
        value: '14',
      }),
      580,
    );
    assertError(await call(stack.service.url, 'GET', `/service/session/performance/${appId}/${sessionName}`), 521);

    const stopped = await send('DELETE', '/service/session', 'sessionStopRequest', { appId, user, sessionName });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.json, true);
    await eventually(async () => assert.equal(await stack.resources.sessions.find(sessionName), undefined), 60_000);

    const started = await send('POST', '/service/session', 'sessionStartRequest', {
      appId,
      user,
      appDefinition: 'python-latest',
      workspaceName: workspace,
      timeout: 2,
    });
    assert.equal(started.status, 200, started.text);
    // A new session of the same workspace: the same name, a new key (the stopped session's URL opens nothing).
    assert.match(started.text, sessionUrlPattern(sessionName));
    assert.notEqual(started.text, first.text);

    const deleted = await send('DELETE', '/service/workspace', 'workspaceDeletionRequest', {
      appId,
      user,
      workspaceName: workspace,
    });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.json, true);
    await eventually(async () => {
      assert.equal(await stack.resources.workspaces.find(workspace), undefined);
      assert.equal(await stack.resources.sessions.find(sessionName), undefined);
    }, 60_000);
  });

  it('answers 470 for another appId and 473 for an unknown app definition', async () => {
    const launch = { appId, user: 'errors@example.com', appDefinition: 'python-latest', ephemeral: true };
    assertError(await send('POST', '/service', 'launchRequest', { ...launch, appId: 'not-the-token' }), 470);
    assertError(await send('POST', '/service', 'launchRequest', { ...launch, appDefinition: 'no-such-app' }), 473);
    assertError(
      await send('POST', '/service/workspace', 'workspaceCreationRequest', {
        appId,
        user,
        appDefinition: 'no-such-app',
      }),
      473,
    );
    assertError(await call(stack.service.url, 'GET', `/service/appdefinition/not-the-token`), 470);
  });

  it('refuses a kind that names another model, with a reason, and writes nothing', async () => {
    const user = 'wrong-kind@example.com';
    const answer = await send('POST', '/service/workspace', 'sessionStopRequest', { appId, user });
    assertError(answer, 400);
    assert.deepEqual((answer.json as { details: unknown }).details, [
      {
        path: 'kind',
        message: "kind 'sessionStopRequest' names another model; this endpoint takes 'workspaceCreationRequest'",
      },
    ]);
    const workspaces = await call(stack.service.url, 'GET', `/service/workspace/${appId}/${encodeURIComponent(user)}`);
    assert.deepEqual(workspaces.json, []);
  });

  it('scales an app definition through the admin calls with an enveloped body', async () => {
    const ping = await call(stack.service.url, 'GET', `/service/admin/${appId}`, {
      headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
    });
    assert.equal(ping.json, true, ping.text);
    const listed = await call(stack.service.url, 'GET', '/service/admin/appdefinition', {
      headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
    });
    assert.equal(listed.status, 200, listed.text);
    const patched = await send(
      'PATCH',
      '/service/admin/appdefinition/python-latest',
      'appDefinitionUpdateRequest',
      { appId, minInstances: 0, maxInstances: 20 },
      true,
    );
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.json, { appDefinitionName: 'python-latest', minInstances: 0, maxInstances: 20 });
    const read = await call(stack.service.url, 'GET', '/service/admin/appdefinition/python-latest', {
      headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
    });
    assert.deepEqual(read.json, patched.json);
  });

  it('logs the names of the ignored fields at debug level, never their values', () => {
    const ignored = stack.service.logs.filter((line) => line.includes('unknown request fields ignored'));
    assert.ok(ignored.length > 0, 'the ignored fields are logged');
    assert.ok(ignored.some((line) => line.includes('"clientVersion"') && line.includes('"env.fromFiles"')));
    assert.deepEqual(
      stack.service.logs.filter((line) => line.includes(STRANGER_VALUE)),
      [],
    );
  });
});

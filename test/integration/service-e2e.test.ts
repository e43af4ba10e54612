// The service with the real operator on the local control plane (pods run through kwok): the launch
// answers the URL the operator reports once the session pod is Ready, end to end.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { ACTIVITY_TOKEN_ENV } from '../../server/src/model/activity-token.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { sessionNameFor } from '../../server/src/model/names.js';
import { eventually } from '../support/kube.js';
import { sessionUrlPattern } from '../support/landing.js';
import { provideVolume } from '../support/operator.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;

describe('service end to end with the operator', function () {
  const stack = useStack('svc-e2e', {
    apps: [BASE_APP],
    operator: { eagerStart: false, sessionsPerUser: 1 },
    service: { sessionsPerUser: 1, activityRequiresToken: true },
  });
  this.timeout(180_000);

  it('launches an ephemeral session and answers the operator URL; stop ends it', async () => {
    const user = 'e2e-ephemeral@example.com';
    const answer = await call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', ephemeral: true, timeout: 2 },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.text, /^http:\/\/ide\.localtest\.me\/session-python-latest-[a-z0-9-]+\/[0-9a-f]{32}\/$/);
    const sessions = await call(stack.service.url, 'GET', `/service/session/${appId}/${encodeURIComponent(user)}`);
    const [item] = sessions.json as { name: string; phase: string; url: string; startStrategy: string }[];
    assert.equal(item?.phase, 'Running');
    assert.equal(item?.url, answer.text);
    assert.equal(item?.startStrategy, 'lazy');

    // The IDE reports activity with the token the operator put into its container (anonymous mode,
    // hardened with service.activity.requireToken).
    // The container references it in the session's Secret (issue 15, item 7), not in plain text.
    const core = stack.kc.makeApiClient(k8s.CoreV1Api);
    const pods = await core.listNamespacedPod({
      namespace: stack.namespace,
      labelSelector: `${LABELS.session}=${item.name}`,
    });
    const ide = pods.items[0]?.spec?.containers.find((c) => c.name === 'python-latest');
    const ref = ide?.env?.find((e) => e.name === ACTIVITY_TOKEN_ENV)?.valueFrom?.secretKeyRef;
    assert.ok(ref?.name && ref.key, 'the IDE container carries its activity token');
    const secret = await core.readNamespacedSecret({ name: ref.name, namespace: stack.namespace });
    const token = Buffer.from(secret.data?.[ref.key] ?? '', 'base64').toString('utf8');
    assert.ok(token, 'the session Secret holds the activity token');
    const refused = await call(stack.service.url, 'PATCH', '/service/session', {
      body: { appId, sessionName: item.name },
      headers: { 'x-activity-token': 'f'.repeat(64) },
    });
    assert.equal(refused.status, 403, refused.text);
    const activity = await call(stack.service.url, 'PATCH', '/service/session', {
      body: { appId, sessionName: item.name },
      headers: { 'x-activity-token': token },
    });
    assert.equal(activity.status, 200, activity.text);
    assert.ok((await stack.resources.sessions.get(item.name)).status?.lastActivity);

    const stopped = await call(stack.service.url, 'DELETE', '/service/session', {
      body: { appId, user, sessionName: item.name },
    });
    assert.equal(stopped.json, true);
    await eventually(async () => assert.equal(await stack.resources.sessions.find(item.name), undefined), 60_000);
  });

  it('launches on a named workspace, answers the same URL the second time, and refuses a second session (553)', async () => {
    const user = 'e2e-workspace@example.com';
    await provideVolume(stack.kc, stack.namespace, 'ws-e2e-stable');
    const body = { appId, user, appDefinition: 'python-latest', workspaceName: 'ws-e2e-stable', timeout: 2 };
    const first = await call(stack.service.url, 'POST', '/service', { body });
    assert.equal(first.status, 200, first.text);
    assert.match(first.text, sessionUrlPattern(sessionNameFor('ws-e2e-stable')));
    const second = await call(stack.service.url, 'POST', '/service', { body });
    assert.equal(second.text, first.text);

    const other = await call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', ephemeral: true },
    });
    assert.equal(other.status, 553);

    const deleted = await call(stack.service.url, 'DELETE', '/service/workspace', {
      body: { appId, user, workspaceName: 'ws-e2e-stable' },
    });
    assert.equal(deleted.json, true);
    await eventually(async () => {
      assert.equal(await stack.resources.workspaces.find('ws-e2e-stable'), undefined);
      assert.equal(await stack.resources.sessions.find(sessionNameFor('ws-e2e-stable')), undefined);
    }, 60_000);
  });
});

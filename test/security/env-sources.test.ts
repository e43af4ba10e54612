// Attack 1 of issue 15: naming any Secret or ConfigMap of the namespace in env.fromSecrets /
// env.fromConfigMaps had the operator copy it into the caller's session (the chart's own tokens
// included). Only objects marked for session use may be named: the service refuses the others before
// writing anything, and the operator refuses them in a Session made directly with kubectl.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { SESSION_ENV_LABEL } from '../../server/src/model/session-env.js';
import { eventually } from '../support/kube.js';
import { createSession, lazySessionPod } from '../support/operator.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const ADMIN_TOKEN_VALUE = 'installation-admin-token-77aa';
const MARKED_VALUE = 'course-platform-token-19cd';

describe('security: env sources marked for session use (1)', function () {
  const stack = useStack('sec-env', {
    apps: [BASE_APP],
    setUp: async ({ core, namespace }) => {
      const secret = (name: string, labels: Record<string, string>, data: Record<string, string>) =>
        core.createNamespacedSecret({ namespace, body: { metadata: { name, labels }, stringData: data } });
      await secret('course-token', { [SESSION_ENV_LABEL]: 'true' }, { PLATFORM_TOKEN: MARKED_VALUE });
      await secret('unmarked', {}, { PLATFORM_TOKEN: ADMIN_TOKEN_VALUE });
      // The chart's tokens, even if someone marked them: the installation's own objects are never given out.
      await secret(
        'rel-ide-cloud-tokens',
        { 'app.kubernetes.io/name': 'ide-cloud', [SESSION_ENV_LABEL]: 'true' },
        { 'admin-api-token': ADMIN_TOKEN_VALUE },
      );
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'plain' }, data: { A: 'b' } } });
    },
    operator: { eagerStart: false, sessionsPerUser: 5 },
    operatorLogs: true,
    service: { sessionsPerUser: 5 },
  });
  this.timeout(120_000);

  const launch = (user: string, env: Record<string, string[]>) =>
    call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', ephemeral: true, timeout: 1, env },
    });

  it('the service refuses an unmarked, missing or installation object with 400 and writes nothing', async () => {
    const cases: [Record<string, string[]>, RegExp][] = [
      [{ fromSecrets: ['unmarked'] }, /secret unmarked is not marked for session use/],
      [{ fromSecrets: ['rel-ide-cloud-tokens'] }, /secret rel-ide-cloud-tokens belongs to the installation/],
      [{ fromSecrets: ['no-such-secret'] }, /secret no-such-secret does not exist/],
      [{ fromConfigMaps: ['plain'] }, /config map plain is not marked for session use/],
    ];
    for (const [env, reason] of cases) {
      const answer = await launch('mallory@example.com', env);
      assert.equal(answer.status, 400, answer.text);
      assert.match((answer.json as { reason: string }).reason, reason);
      assert.ok(!answer.text.includes(ADMIN_TOKEN_VALUE));
    }
    assert.deepEqual(await stack.resources.sessions.list(), [], 'no session was written');
    assert.deepEqual(await stack.resources.workspaces.list(), [], 'no workspace was written');
  });

  it('the operator fails a Session made directly that names the installation tokens, and mounts nothing', async () => {
    await createSession(stack.resources, 'direct-mallory', {
      user: 'mallory@example.com',
      appDefinition: 'python-latest',
      envVarsFromSecrets: ['course-token', 'rel-ide-cloud-tokens'],
    });
    const failed = await eventually(async () => {
      const session = await stack.resources.sessions.get('direct-mallory');
      assert.equal(session.status?.phase, 'Failed');
      return session;
    }, 30_000);
    assert.equal(failed.status?.error?.code, 400);
    assert.match(failed.status?.error?.reason ?? '', /secret rel-ide-cloud-tokens belongs to the installation/);
    const apps = stack.kc.makeApiClient(k8s.AppsV1Api);
    const selector = { namespace: stack.namespace, labelSelector: 'ide-cloud.io/session=direct-mallory' };
    assert.deepEqual((await stack.core.listNamespacedPod(selector)).items, []);
    assert.deepEqual((await apps.listNamespacedReplicaSet(selector)).items, []);
    assert.deepEqual((await apps.listNamespacedDeployment(selector)).items, []);
    assert.ok(!stack.operatorLogs.join('').includes(ADMIN_TOKEN_VALUE));
  });

  it('a marked secret is given to the session', async () => {
    const answer = await launch('student@example.com', { fromSecrets: ['course-token'] });
    assert.equal(answer.status, 200, answer.text);
    const [session] = (await stack.resources.sessions.list()).filter((s) => s.spec.user === 'student@example.com');
    const pod = await lazySessionPod(stack.core, stack.namespace, session!.metadata.name);
    const envFrom = pod.spec?.containers.flatMap((c) => c.envFrom ?? []) ?? [];
    assert.ok(envFrom.some((e) => e.secretRef?.name === 'course-token'));
  });
});

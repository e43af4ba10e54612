// Attack 7 of issue 15: a lazy session's values (GIT_URI with its credentials, PLATFORM_TOKEN, the
// activity token, the auth proxy's cookie secret) were in plain text in its Deployment and Pod spec,
// which anyone with the built-in `view` role reads. They now live in a Secret owned by the Session,
// created before the session's workload (now its pod, made by the operator) and referenced from it; `view`
// cannot read Secrets.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { ACTIVITY_TOKEN_ENV, activityToken } from '../../server/src/model/activity-token.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, lazySessionPod, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

const GIT_TOKEN = 'git-credential-5f1e9a';
const GIT_URI = `https://student:${GIT_TOKEN}@git.example.org/course/ex1.git`;
const PLATFORM_TOKEN = 'platform-token-7c2d41';
const SESSION_SECRET = 'cookie-secret-0b93e6d2a4c8f1e7';
const SESSION = 'lazy-victim';

describe('security: a lazy session keeps its values in a Secret it owns (7)', function () {
  const stack = useStack('sec-lazy', {
    apps: [appDefinitionSpec('python-latest')],
    operator: { eagerStart: false },
    operatorLogs: true,
  });
  this.timeout(120_000);
  const secrets = () => [GIT_TOKEN, PLATFORM_TOKEN, SESSION_SECRET, activityToken(SESSION_SECRET, SESSION)];

  before(async () => {
    await createSession(stack.resources, SESSION, {
      user: 'victim@example.com',
      appDefinition: 'python-latest',
      sessionSecret: SESSION_SECRET,
      envVars: { GIT_URI, PLATFORM_TOKEN, GIT_USER: 'victim' },
    });
    await waitForSession(stack.resources, SESSION, running);
  });

  it('its Pods carry no value in plain text', async () => {
    const pods = await eventually(async () => {
      const list = await stack.core.listNamespacedPod({
        namespace: stack.namespace,
        labelSelector: `ide-cloud.io/session=${SESSION}`,
      });
      assert.ok(list.items.length > 0, 'the session has a pod');
      return list.items;
    });
    // What a holder of `view` reads: the whole Pod objects.
    const readable = JSON.stringify(pods);
    for (const value of secrets()) assert.ok(!readable.includes(value), 'a session value is in plain text');
    for (const pod of pods) {
      const [ide, proxy] = pod.spec!.containers;
      const env = Object.fromEntries((ide!.env ?? []).map((e) => [e.name, e]));
      for (const name of ['GIT_URI', 'PLATFORM_TOKEN', ACTIVITY_TOKEN_ENV]) {
        assert.equal(env[name]?.value, undefined, `${name} has no literal value`);
        assert.equal(env[name]?.valueFrom?.secretKeyRef?.name, `${SESSION}-env`, `${name} comes from the Secret`);
      }
      // The proxies' cookie key is the installation's (one sign-in serves all sessions), by reference.
      const cookie = (proxy!.env ?? []).find((e) => e.name === 'OAUTH2_PROXY_COOKIE_SECRET');
      assert.equal(cookie?.value, undefined);
      const ref = cookie?.valueFrom?.secretKeyRef;
      assert.deepEqual([ref?.name, ref?.key], ['ide-cloud-auth-proxy', 'cookie-secret']);
    }
  });

  it('the values are in a Secret owned by the Session, created before the pod', async () => {
    const session = await stack.resources.sessions.get(SESSION);
    const secret = await stack.core.readNamespacedSecret({ name: `${SESSION}-env`, namespace: stack.namespace });
    const decoded = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    assert.equal(decoded.GIT_URI, GIT_URI);
    assert.equal(decoded.PLATFORM_TOKEN, PLATFORM_TOKEN);
    assert.equal(decoded[ACTIVITY_TOKEN_ENV], activityToken(SESSION_SECRET, SESSION));
    const owner = secret.metadata?.ownerReferences?.find((o) => o.kind === 'Session');
    assert.equal(owner?.uid, session.metadata.uid);
    assert.equal(owner?.controller, true);
    const pod = await lazySessionPod(stack.core, stack.namespace, SESSION);
    assert.ok(secret.metadata!.creationTimestamp! <= pod.metadata!.creationTimestamp!);
    for (const value of secrets()) assert.ok(!stack.operatorLogs.join('').includes(value), 'a value reached the logs');
  });

  it('the built-in view role reads the Pods but not the Secret', async () => {
    await stack.kc.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: stack.namespace,
      body: {
        metadata: { name: 'viewer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'viewer@example.com' }],
      },
    });
    const can = async (verb: string, group: string, resource: string) =>
      (
        await stack.kc.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
          body: {
            spec: {
              user: 'viewer@example.com',
              resourceAttributes: { verb, group, resource, namespace: stack.namespace },
            },
          },
        })
      ).status?.allowed ?? false;
    await eventually(async () => assert.equal(await can('list', '', 'pods'), true));
    assert.equal(await can('get', '', 'secrets'), false);
  });

  it('the Secret goes with the Session', async () => {
    await stack.resources.sessions.delete(SESSION);
    await eventually(async () => {
      const gone = await stack.core.readNamespacedSecret({ name: `${SESSION}-env`, namespace: stack.namespace }).then(
        () => false,
        () => true,
      );
      assert.ok(gone, 'the Secret is still there');
    }, 60_000);
  });
});

// Issue 27, item 2: session pods ran without a security context (root allowed, privilege escalation,
// the runtime's capabilities, no seccomp profile). The API server's Pod Security admission (on by
// default) is the judge here: in a namespace that enforces the "restricted" profile, the pods the
// operator makes (a warm instance and a lazy session, each with its authentication proxy, and their
// sidecars) are admitted, and the pod of an app definition that opts out (`podSecurity: baseline`) is
// refused, as it should be there. The real-node suites show the IDE working under the profile.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, lazySessionPods, waitForSession } from '../support/operator.js';
import { SessionCondition, SessionFailureReason } from '../../server/src/model/session.js';
import { useStack } from '../support/stack.js';

describe('security: session pods meet the restricted Pod Security profile (27.2)', function () {
  this.timeout(300_000);

  /**
   * The admission's refusals, for messages: why the namespace's ReplicaSets (warm instances,
   * sidecars) could not make their pods, and the sessions whose own pod was refused.
   */
  const refusals = async () => [
    ...(await stack.apps.listNamespacedReplicaSet({ namespace: stack.namespace })).items.flatMap((rs) =>
      (rs.status?.conditions ?? [])
        .filter((c) => c.type === 'ReplicaFailure' && c.status === 'True')
        .map((c) => `${rs.metadata!.name}: ${c.message}`),
    ),
    ...(await stack.resources.sessions.list())
      .filter((s) => s.status?.phase === 'Failed')
      .map((s) => `${s.metadata.name}: ${s.status?.error?.reason}`),
  ];

  const stack = useStack('sec-podsec', {
    // A warm pool of one with a sidecar; a lazy app whose sidecar mounts the workspace (an emptyDir
    // without a claim); and an app whose IDE image must start as root, which says so.
    apps: [
      appDefinitionSpec('pooled', {
        minInstances: 1,
        sidecars: [{ name: 'cache', image: 'example/cache:1', port: 6379, mountWorkspace: false }],
      }),
      appDefinitionSpec('lazy', {
        options: {},
        sidecars: [{ name: 'db', image: 'example/db:1', port: 5432, mountWorkspace: true }],
      }),
      appDefinitionSpec('rooted', { options: {}, podSecurity: 'baseline' }),
    ],
    setUp: async ({ core, namespace }) => {
      await core.patchNamespace(
        {
          name: namespace,
          body: {
            metadata: {
              labels: {
                'pod-security.kubernetes.io/enforce': 'restricted',
                'pod-security.kubernetes.io/enforce-version': 'latest',
              },
            },
          },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
    operator: {
      eagerStart: true,
      sessionsPerUser: 5,
      sessionIssuer: 'https://login.example.org/realms/ide-cloud',
    },
  });

  it('admits the pods of warm instances, lazy sessions, their proxies and sidecars', async () => {
    await createSession(stack.resources, 'lazy-1', { user: 'alice@example.com', appDefinition: 'lazy' });
    const pods = await eventually(async () => {
      const items = (await stack.core.listNamespacedPod({ namespace: stack.namespace })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      const names = items.map((p) => p.metadata!.labels!.app!).sort();
      assert.equal(items.length, 4, `pods: ${names.join(' ')}; refused: ${(await refusals()).join('; ')}`);
      return items;
    }, 60_000);
    const containers = pods.flatMap((p) => p.spec!.containers.map((c) => c.name)).sort();
    assert.deepEqual(containers, ['auth-proxy', 'auth-proxy', 'cache', 'db', 'lazy', 'pooled']);
    assert.deepEqual(await refusals(), []);
  });

  it('refuses the pod of an app definition that opts out (podSecurity: baseline), naming the rule', async () => {
    const session = await createSession(stack.resources, 'rooted-1', {
      user: 'bob@example.com',
      appDefinition: 'rooted',
    });
    // The operator makes the session's pod itself: the refusal fails the start at once, naming the rule.
    const failed = await waitForSession(stack.resources, session.metadata.name, (s) => s.status?.phase === 'Failed');
    const ready = failed.status?.conditions?.find((c) => c.type === SessionCondition.ready);
    assert.equal(ready?.reason, SessionFailureReason.podRefused);
    const refused = failed.status!.error!.reason;
    assert.deepEqual(await lazySessionPods(stack.core, stack.namespace, session.metadata.name), []);
    assert.match(refused, /violates PodSecurity "restricted:latest"/);
    assert.match(refused, /runAsNonRoot/);
    assert.doesNotMatch(refused, /auth-proxy/, 'the proxy is restricted whatever the IDE says');
  });
});

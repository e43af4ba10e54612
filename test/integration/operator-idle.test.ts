// The idle sweep stops each session on its own: one session whose stop the API server refuses (a
// ValidatingAdmissionPolicy denies its stop-reason annotation) does not keep the other idle sessions
// running, and what is logged of the refusal is its status and reason, never the API's message.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { ANNOTATIONS, GROUP as API_GROUP, VERSION } from '../../server/src/model/api-group.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'c-latest';
const REFUSE_LABEL = 'ide-cloud.io/test-refuse-stop';
const REFUSAL = 'this session refuses to be stopped (test policy)';

describe('operator: the idle sweep stops each session on its own', function () {
  const stack = useStack('op-idle', {
    // No warning window: idle stops come at once (the warning has its own suite, operator-stop-warning).
    apps: [appDefinitionSpec(APP, { timeout: 1, stopWarningSeconds: 0 })],
    setUp: async ({ kc, namespace, cleanUp }) => {
      const policy = `ide-cloud-test-refuse-stop-${namespace}`;
      const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
      cleanUp(async () => {
        await admission.deleteValidatingAdmissionPolicyBinding({ name: policy }).catch(() => undefined);
        await admission.deleteValidatingAdmissionPolicy({ name: policy }).catch(() => undefined);
      });
      // Sessions of this namespace labelled REFUSE_LABEL cannot get the stop-reason annotation.
      await admission.createValidatingAdmissionPolicy({
        body: {
          metadata: { name: policy },
          spec: {
            failurePolicy: 'Fail',
            matchConstraints: {
              resourceRules: [
                { apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['UPDATE'], resources: ['sessions'] },
              ],
            },
            validations: [
              {
                expression:
                  `!(has(object.metadata.labels) && '${REFUSE_LABEL}' in object.metadata.labels) || ` +
                  `!(has(object.metadata.annotations) && '${ANNOTATIONS.stopReason}' in object.metadata.annotations)`,
                message: REFUSAL,
                reason: 'Forbidden',
              },
            ],
          },
        },
      });
      await admission.createValidatingAdmissionPolicyBinding({
        body: {
          metadata: { name: policy },
          spec: {
            policyName: policy,
            validationActions: ['Deny'],
            matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } },
          },
        },
      });
    },
    operator: { eagerStart: false, activityIntervalMs: 300 },
    operatorLogs: true,
  });
  this.timeout(180_000);

  it('a session whose stop is refused is logged and kept; the other idle sessions are still stopped', async () => {
    // The refused session first: the sweep meets it before the others (the cache lists in creation order).
    const names = ['idle-a-refused', 'idle-b', 'idle-c', 'idle-d'];
    for (const n of names) await createSession(stack.resources, n, { user: `${n}@example.com`, appDefinition: APP });
    await stack.resources.sessions.mergePatch('idle-a-refused', { metadata: { labels: { [REFUSE_LABEL]: 'true' } } });
    await Promise.all(names.map((n) => waitForSession(stack.resources, n, running)));

    // The policy is in force once the API server refuses the annotation (a dry run changes nothing).
    const custom = stack.kc.makeApiClient(k8s.CustomObjectsApi);
    await eventually(
      async () => {
        const refused = await custom
          .patchNamespacedCustomObject(
            {
              group: API_GROUP,
              version: VERSION,
              namespace: stack.namespace,
              plural: 'sessions',
              name: 'idle-a-refused',
              dryRun: 'All',
              body: { metadata: { annotations: { [ANNOTATIONS.stopReason]: 'probe' } } },
            },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
          )
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        assert.ok(refused instanceof k8s.ApiException, 'the policy is not in force yet');
      },
      30_000,
      200,
    );

    // All four report their last activity two minutes ago (timeout: 1 minute), as PATCH /service/session would.
    const idleSince = new Date(Date.now() - 120_000).toISOString();
    for (const n of names) await stack.resources.sessions.patchStatus(n, { lastActivity: idleSince });

    await eventually(
      async () => {
        for (const n of names.slice(1))
          assert.equal(await stack.resources.sessions.find(n), undefined, `${n} still there`);
      },
      30_000,
      200,
    );
    const refused = await stack.resources.sessions.get('idle-a-refused');
    assert.ok(!refused.metadata.deletionTimestamp, 'the refused session was not deleted');
    assert.equal(refused.metadata.annotations?.[ANNOTATIONS.stopReason], undefined);

    const failures = stack.operatorLogs
      .map((line) => JSON.parse(line) as { msg: string; session?: string; err?: Record<string, unknown> })
      .filter((l) => l.msg.startsWith('could not stop session'));
    assert.ok(failures.length > 0, 'the refusal is logged');
    for (const f of failures) {
      assert.equal(f.session, 'idle-a-refused');
      assert.ok(f.err && [403, 422].includes(f.err.kubernetesStatus as number), JSON.stringify(f.err));
      assert.deepEqual(Object.keys(f.err).sort(), ['kubernetesReason', 'kubernetesStatus']);
    }
    assert.ok(!stack.operatorLogs.some((line) => line.includes(REFUSAL)), "the API's message never reaches the logs");
  });
});

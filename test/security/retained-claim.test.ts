// A claim kept by reclaim policy Retain holds its user's work: a later workspace of the same name
// gets it only when it is the same user's (issue 27, item 9). Another user's workspace of that name
// is refused (Ready False, ClaimOfAnotherUser) and its session fails with 403 before any pod mounts
// the claim; the owner's new workspace of the name gets the work back.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Workspace } from '../../server/src/model/workspace.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'python-latest';
const NAME = 'thesis';
const OWNER = 'alice@example.com';
const OTHER = 'mallory@example.com';

describe('security: a claim kept by reclaim policy Retain goes only to the same user', function () {
  const stack = useStack('sec-retain', {
    apps: [appDefinitionSpec(APP, { minInstances: 0, maxInstances: 10 })],
    operator: { workspaceReclaimPolicy: 'Retain' },
  });
  this.timeout(180_000);

  const createWorkspace = (user: string) =>
    stack.resources.workspaces.create({
      metadata: { name: NAME, labels: { [LABELS.user]: userLabelValue(user) } },
      spec: { user, appDefinition: APP },
    });
  const gone = (read: () => Promise<unknown>) =>
    eventually(
      async () =>
        assert.equal(
          await read().then(
            () => 'there',
            () => 'gone',
          ),
          'gone',
        ),
      60_000,
    );
  const readyOf = (w: Workspace) => w.status?.conditions?.find((c) => c.type === 'Ready');

  it("refuses the kept claim to another user's workspace of the same name, and gives it back to its user", async () => {
    // The owner's workspace makes its claim; the workspace goes, the claim stays (Retain).
    await createWorkspace(OWNER);
    await eventually(
      async () => assert.equal((await stack.resources.workspaces.get(NAME)).status?.claimName, NAME),
      60_000,
    );
    const kept = await stack.core.readNamespacedPersistentVolumeClaim({ name: NAME, namespace: stack.namespace });
    await stack.resources.workspaces.delete(NAME);
    await gone(() => stack.resources.workspaces.get(NAME));
    assert.equal(
      (await stack.core.readNamespacedPersistentVolumeClaim({ name: NAME, namespace: stack.namespace })).metadata?.uid,
      kept.metadata?.uid,
    );

    // Another user takes the name and launches on it.
    await createWorkspace(OTHER);
    await createSession(stack.resources, 'intruder', { user: OTHER, appDefinition: APP, workspace: NAME });
    const refused = await eventually(async () => {
      const w = await stack.resources.workspaces.get(NAME);
      assert.equal(readyOf(w)?.reason, 'ClaimOfAnotherUser', JSON.stringify(w.status));
      return w;
    }, 60_000);
    assert.equal(refused.status?.claimName, undefined, 'the workspace names no claim');
    assert.equal(readyOf(refused)?.status, 'False');
    assert.doesNotMatch(JSON.stringify(refused.status), /alice/, 'the refusal does not tell whose work it is');
    const session = await waitForSession(stack.resources, 'intruder', (s) => s.status?.phase === 'Failed', 60_000);
    assert.equal(session.status?.error?.code, 403, JSON.stringify(session.status?.error));
    // The pod specs that could mount it: the pods themselves, and the templates that make pods.
    const specs = [
      ...(await stack.core.listNamespacedPod({ namespace: stack.namespace })).items.map(
        (p) => [p.metadata, p.spec] as const,
      ),
      ...[
        ...(await stack.apps.listNamespacedReplicaSet({ namespace: stack.namespace })).items,
        ...(await stack.apps.listNamespacedDeployment({ namespace: stack.namespace })).items,
      ].map((d) => [d.metadata, d.spec?.template?.spec] as const),
    ];
    const mounting = specs
      .filter(([, spec]) => spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === NAME))
      .map(([metadata]) => ({ metadata }));
    assert.deepEqual(
      mounting.map((d) => d.metadata?.name),
      [],
      'no pod of the other user mounts the kept claim',
    );
    assert.equal(
      (await stack.core.readNamespacedPersistentVolumeClaim({ name: NAME, namespace: stack.namespace })).metadata?.uid,
      kept.metadata?.uid,
    );

    // The other user's workspace goes; the owner's new one of the name gets the work back.
    await stack.resources.sessions.delete('intruder');
    await stack.resources.workspaces.delete(NAME);
    await gone(() => stack.resources.workspaces.get(NAME));
    await createWorkspace(OWNER);
    const back = await eventually(async () => {
      const w = await stack.resources.workspaces.get(NAME);
      assert.equal(w.status?.phase, 'Bound', JSON.stringify(w.status));
      return w;
    }, 60_000);
    assert.equal(back.status?.claimName, NAME);
    assert.equal(
      (await stack.core.readNamespacedPersistentVolumeClaim({ name: NAME, namespace: stack.namespace })).metadata?.uid,
      kept.metadata?.uid,
    );
  });

  it('labels a claim made before claims named their user, so that, kept, it goes back to that user', async () => {
    const legacy = 'legacy';
    await stack.resources.workspaces.create({
      metadata: { name: legacy, labels: { [LABELS.user]: userLabelValue(OWNER) } },
      spec: { user: OWNER, appDefinition: APP },
    });
    await eventually(
      async () => assert.equal((await stack.resources.workspaces.get(legacy)).status?.claimName, legacy),
      60_000,
    );
    // As an operator before the label made it: the user label removed by hand.
    await stack.core.patchNamespacedPersistentVolumeClaim(
      {
        name: legacy,
        namespace: stack.namespace,
        body: [{ op: 'remove', path: `/metadata/labels/${LABELS.user.replace('/', '~1')}` }],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    // The upgraded operator starts: it visits every workspace.
    await stack.restartOperator();
    await eventually(async () => {
      const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name: legacy, namespace: stack.namespace });
      assert.equal(claim.metadata?.labels?.[LABELS.user], userLabelValue(OWNER));
    }, 60_000);
    await stack.resources.workspaces.delete(legacy);
    await gone(() => stack.resources.workspaces.get(legacy));
    await stack.resources.workspaces.create({
      metadata: { name: legacy, labels: { [LABELS.user]: userLabelValue(OWNER) } },
      spec: { user: OWNER, appDefinition: APP },
    });
    await eventually(async () => {
      const w = await stack.resources.workspaces.get(legacy);
      assert.equal(w.status?.phase, 'Bound', JSON.stringify(w.status));
      assert.equal(w.status?.claimName, legacy);
    }, 60_000);
  });
});

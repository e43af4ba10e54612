import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../src/model/api-group.js';
import { COMPONENT } from '../../src/operator/manifests.js';
import { deploymentIndexers, INDEX } from '../../src/operator/runtime/cache.js';

const freeKeys = deploymentIndexers[INDEX.freeInstance]!;

function deployment(labels: Record<string, string>, deleting = false): k8s.V1Deployment {
  return { metadata: { name: 'd', labels, ...(deleting ? { deletionTimestamp: new Date() } : {}) } };
}

const instance = { [LABELS.component]: COMPONENT.poolInstance, [LABELS.appDefinition]: 'java' };

describe('the free warm instances index, what a reservation chooses from', () => {
  it("a live instance no session holds, under its app definition's label value", () => {
    assert.deepEqual(freeKeys(deployment(instance)), ['java']);
  });

  it('not one a session holds, one being deleted, nor any other Deployment', () => {
    assert.deepEqual(freeKeys(deployment({ ...instance, [LABELS.session]: 's' })), []);
    assert.deepEqual(freeKeys(deployment(instance, true)), []);
    assert.deepEqual(freeKeys(deployment({ [LABELS.appDefinition]: 'java', [LABELS.session]: 's' })), []);
    assert.deepEqual(freeKeys(deployment({ [LABELS.appDefinition]: 'java' })), []);
  });

  it('keeps the label index beside it', () => {
    assert.ok(deploymentIndexers[INDEX.label]!(deployment(instance)).length > 0);
  });
});

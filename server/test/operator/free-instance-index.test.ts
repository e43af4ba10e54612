import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../src/model/api-group.js';
import { COMPONENT } from '../../src/operator/manifests.js';
import { INDEX, reservationIndexers } from '../../src/operator/runtime/cache.js';

const freeKeys = reservationIndexers[INDEX.freeInstance]!;

function reservation(labels: Record<string, string>, deleting = false): k8s.V1Lease {
  return { metadata: { name: 'r', labels, ...(deleting ? { deletionTimestamp: new Date() } : {}) } };
}

const instance = { [LABELS.component]: COMPONENT.poolInstance, [LABELS.appDefinition]: 'java' };

describe('the free warm instances index, what a reservation chooses from', () => {
  it("a reservation that holds no session, under its app definition's label value", () => {
    assert.deepEqual(freeKeys(reservation(instance)), ['java']);
  });

  it('not one that holds a session, nor one being deleted', () => {
    assert.deepEqual(freeKeys(reservation({ ...instance, [LABELS.session]: 's' })), []);
    assert.deepEqual(freeKeys(reservation(instance, true)), []);
  });

  it('keeps the label index beside it', () => {
    assert.ok(reservationIndexers[INDEX.label]!(reservation(instance)).length > 0);
  });
});

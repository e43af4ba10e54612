import assert from 'node:assert/strict';
import { setCondition } from '../../src/model/conditions.js';

describe('setCondition', () => {
  const t0 = new Date('2026-01-01T00:00:00Z');
  const t1 = new Date('2026-01-01T00:01:00Z');

  it('adds a condition with the current time', () => {
    const list = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0);
    assert.deepEqual(list, [
      { type: 'Ready', status: 'False', reason: 'Starting', lastTransitionTime: t0.toISOString() },
    ]);
  });

  it('keeps lastTransitionTime while the status stays, moves it when the status changes', () => {
    const first = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Starting' }, t0);
    const same = setCondition(first, { type: 'Ready', status: 'False', reason: 'Waiting', message: 'pod pending' }, t1);
    assert.equal(same[0]!.lastTransitionTime, t0.toISOString());
    assert.equal(same[0]!.reason, 'Waiting');
    const changed = setCondition(same, { type: 'Ready', status: 'True', reason: 'PodReady' }, t1);
    assert.equal(changed[0]!.lastTransitionTime, t1.toISOString());
    assert.equal(changed.length, 1);
  });

  it('leaves other conditions and the input untouched', () => {
    const input = setCondition(undefined, { type: 'Reserved', status: 'True', reason: 'InstanceReserved' }, t0);
    const output = setCondition(input, { type: 'Ready', status: 'Unknown', reason: 'Pending' }, t1);
    assert.equal(input.length, 1);
    assert.deepEqual(
      output.map((c) => c.type),
      ['Reserved', 'Ready'],
    );
  });
});

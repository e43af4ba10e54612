import assert from 'node:assert/strict';
import { queueText, stepOf } from '../../src/landing/messages.js';

describe('landing page: the queue message of a launch waiting for a start slot', () => {
  it('says where the launch stands and about how long, in words', () => {
    assert.equal(
      queueText({ position: 7, estimatedWaitSeconds: 4 }),
      'Many IDEs are starting right now. You are number 7 in line for yours, about 4 seconds to go; please keep this page open.',
    );
    assert.equal(
      queueText({ position: 1, estimatedWaitSeconds: 1 }),
      'Many IDEs are starting right now. You are next in line for yours, about a second to go; please keep this page open.',
    );
    assert.match(
      queueText({ position: 90, estimatedWaitSeconds: 61 }),
      /number 90 in line for yours, about 2 minutes to go/,
    );
    assert.match(queueText({ position: 30, estimatedWaitSeconds: 60 }), /about a minute to go/);
  });

  it('without an estimate, only the place', () => {
    assert.equal(
      queueText({ position: 3 }),
      'Many IDEs are starting right now. You are number 3 in line for yours; please keep this page open.',
    );
  });

  it('a queued session shows as starting on the progress bar', () => {
    assert.equal(stepOf({ phase: 'Starting', queue: { position: 2, estimatedWaitSeconds: 1 } }), 'starting');
  });
});

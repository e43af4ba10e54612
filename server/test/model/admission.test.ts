import assert from 'node:assert/strict';
import {
  byCreation,
  estimatedWaitSeconds,
  gateIndexers,
  mayWaitAtGate,
  mayWaitAtGateIn,
  placeIn,
  placeAt,
  queuedMessage,
  queueOf,
} from '../../src/model/admission.js';
import { setCondition } from '../../src/model/conditions.js';
import {
  SESSION_ADMITTED_CONDITION,
  SessionAdmittedReason,
  SessionCondition,
  SessionReadyReason,
  type Session,
} from '../../src/model/session.js';

import { observedInformer } from './observed-informer.js';

const RATE = { perSecond: 0.5, burst: 4 };

function session(
  name: string,
  created: string,
  admitted?: 'True' | 'False',
  extra: { deleting?: boolean; failed?: boolean } = {},
): Session {
  let conditions = admitted
    ? setCondition(undefined, {
        type: SESSION_ADMITTED_CONDITION,
        status: admitted,
        reason: admitted === 'True' ? SessionAdmittedReason.admitted : SessionAdmittedReason.queued,
        message: queuedMessage(RATE),
      })
    : undefined;
  if (extra.failed) {
    conditions = setCondition(conditions, {
      type: SessionCondition.ready,
      status: 'False',
      reason: SessionReadyReason.failed,
    });
  }
  return {
    metadata: {
      name,
      creationTimestamp: created,
      ...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:09Z' } : {}),
    },
    spec: { user: name, appDefinition: 'python' },
    status: {
      phase: 'Starting',
      ...(conditions ? { conditions } : {}),
      ...(admitted === 'False' ? { lazyStartRate: RATE } : {}),
    },
  };
}

describe('model: the lazy-start queue', () => {
  it('the estimate reads the rate from the status, whatever the condition message says', () => {
    const queued = session('q', '2026-01-01T00:00:01Z', 'False');
    assert.deepEqual(placeAt(3, queued), { position: 3, estimatedWaitSeconds: 6 });
    queued.status!.conditions![0]!.message = 'reworded';
    assert.deepEqual(placeAt(3, queued), { position: 3, estimatedWaitSeconds: 6 });
    delete queued.status!.lazyStartRate;
    assert.deepEqual(placeAt(3, queued), { position: 3 });
  });

  it('orders by creation time, then name (creation times have whole seconds)', () => {
    const sorted = [
      session('b', '2026-01-01T00:00:02Z'),
      session('c', '2026-01-01T00:00:01Z'),
      session('a', '2026-01-01T00:00:02Z'),
    ].sort(byCreation);
    assert.deepEqual(
      sorted.map((s) => s.metadata.name),
      ['c', 'a', 'b'],
    );
  });

  it('places a queued session behind the earlier ones that may wait: queued or undecided, not admitted, deleting or failed', () => {
    const sessions = [
      session('late', '2026-01-01T00:00:05Z', 'False'),
      session('past', '2026-01-01T00:00:00Z', 'True'),
      session('early', '2026-01-01T00:00:01Z', 'False'),
      session('deleted', '2026-01-01T00:00:02Z', 'False', { deleting: true }),
      session('failed', '2026-01-01T00:00:02Z', 'False', { failed: true }),
      session('new', '2026-01-01T00:00:03Z'),
      session('middle', '2026-01-01T00:00:03Z', 'False'),
    ];
    const queue = queueOf(sessions);
    assert.deepEqual(
      queue.map((s) => s.metadata.name),
      ['early', 'middle', 'new', 'late'],
    );
    assert.deepEqual(placeIn(queue, sessions[0]!), { position: 4, estimatedWaitSeconds: 8 });
    assert.deepEqual(placeIn(queue, sessions[2]!), { position: 1, estimatedWaitSeconds: 2 });
    // Not queued itself: no place (admitted; undecided).
    assert.equal(placeIn(queue, sessions[1]!), undefined);
    assert.equal(placeIn(queue, sessions[5]!), undefined);
  });

  it('estimates the wait from the position and the rate, in whole seconds rounded up', () => {
    assert.equal(estimatedWaitSeconds(1, { perSecond: 2, burst: 2 }), 1);
    assert.equal(estimatedWaitSeconds(7, { perSecond: 2, burst: 2 }), 4);
    assert.equal(estimatedWaitSeconds(3, { perSecond: 0.1, burst: 1 }), 30);
  });

  it('its index holds the sessions that may wait, and a session leaves it once admitted', () => {
    const sessions = [
      session('queued', '2026-01-01T00:00:01Z', 'False'),
      session('undecided', '2026-01-01T00:00:02Z'),
      session('admitted', '2026-01-01T00:00:03Z', 'True'),
      session('deleting', '2026-01-01T00:00:04Z', 'False', { deleting: true }),
      session('failed', '2026-01-01T00:00:05Z', 'False', { failed: true }),
    ];
    const cache = observedInformer(sessions, gateIndexers);
    const names = () =>
      mayWaitAtGateIn(cache)
        .map((s) => s.metadata.name)
        .sort();
    assert.deepEqual(
      names(),
      sessions.filter(mayWaitAtGate).map((s) => s.metadata.name),
    );
    assert.deepEqual(names(), ['queued', 'undecided']);
    cache.observe({
      ...session('queued', '2026-01-01T00:00:01Z', 'True'),
      metadata: { name: 'queued', resourceVersion: '2' },
    });
    assert.deepEqual(names(), ['undecided']);
  });
});

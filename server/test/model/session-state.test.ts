import assert from 'node:assert/strict';
import { ANNOTATIONS } from '../../src/model/api-group.js';
import { setCondition } from '../../src/model/conditions.js';

import {
  countReservedInstances,
  isActiveSession,
  isSessionFailed,
  isSessionReady,
  isSessionStopping,
  SessionCondition,
  SessionFailureReason,
  SessionReadyReason,
  sessionPhase,
  type Session,
  type SessionStatus,
} from '../../src/model/session.js';

function session(status?: SessionStatus, deleting = false): Session {
  return {
    metadata: { name: 's', ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: { user: 'u', appDefinition: 'a' },
    ...(status ? { status } : {}),
  };
}

const ready = (status: 'True' | 'False' | 'Unknown', reason: string) =>
  setCondition(undefined, { type: SessionCondition.ready, status, reason });

describe('session state from conditions', () => {
  it('reads Ready from the conditions, whatever the phase says', () => {
    assert.equal(isSessionReady(session({ phase: 'Starting', url: 'u', conditions: ready('True', 'PodReady') })), true);
    assert.equal(
      isSessionReady(session({ phase: 'Running', url: 'u', conditions: ready('False', 'PodNotReady') })),
      false,
    );
    assert.equal(isSessionReady(session({ conditions: ready('True', 'PodReady') })), false, 'no URL yet');
    assert.equal(isSessionFailed(session({ phase: 'Running', conditions: ready('False', 'Failed') })), true);
    assert.equal(isSessionStopping(session({ conditions: ready('False', 'Stopping') })), true);
  });

  it('reads the phase only of a status without a Ready condition', () => {
    assert.equal(isSessionReady(session({ phase: 'Running', url: 'u' })), true);
    assert.equal(isSessionFailed(session({ phase: 'Failed' })), true);
    assert.equal(isSessionStopping(session({ phase: 'Stopping' })), true);
    assert.equal(isSessionFailed(session()), false);
  });

  it('counts as active what is neither deleted, failed nor stopping', () => {
    assert.equal(isActiveSession(session({ conditions: ready('Unknown', 'Pending') })), true);
    assert.equal(isActiveSession(session({ conditions: ready('False', 'PodNotReady') })), true);
    assert.equal(isActiveSession(session({ conditions: ready('False', 'Failed') })), false);
    assert.equal(isActiveSession(session({ conditions: ready('False', 'Stopping') })), false);
    assert.equal(isActiveSession(session(undefined, true)), false);
  });

  it('derives the phase from the Ready condition and the decision, keeping a phase only without Ready', () => {
    const phase = (status: 'True' | 'False' | 'Unknown', reason: string, startStrategy?: 'lazy') =>
      sessionPhase({ conditions: ready(status, reason), ...(startStrategy ? { startStrategy } : {}) });
    assert.equal(phase('Unknown', SessionReadyReason.pending), 'Pending');
    assert.equal(phase('Unknown', SessionReadyReason.pending, 'lazy'), 'Starting', 'decided, not ready yet');
    for (const reason of [
      SessionReadyReason.podNotReady,
      SessionReadyReason.routeNotServed,
      SessionReadyReason.userNotAdmitted,
    ]) {
      assert.equal(phase('False', reason, 'lazy'), 'Starting', reason);
    }
    assert.equal(phase('True', SessionReadyReason.podReady, 'lazy'), 'Running');
    assert.equal(phase('False', SessionReadyReason.failed), 'Failed');
    assert.equal(phase('False', SessionFailureReason.imagePullFailed, 'lazy'), 'Failed');
    assert.equal(phase('False', SessionReadyReason.stopping, 'lazy'), 'Stopping');
    assert.equal(sessionPhase({ phase: 'Running' }), 'Running', 'no Ready condition: the phase as written');
    assert.equal(sessionPhase({}), undefined);
  });
});

describe('countReservedInstances', () => {
  const on = (appDefinition: string, status: SessionStatus, deleting = false): Session => ({
    ...session(status, deleting),
    spec: { user: 'u', appDefinition },
  });
  it('counts the active sessions on a warm instance, by app definition', () => {
    const counted = countReservedInstances([
      on('a', { startStrategy: 'eager', instanceId: '1' }),
      on('a', { startStrategy: 'eager', instanceId: '2', conditions: ready('True', 'PodReady'), url: 'u' }),
      on('b', { startStrategy: 'eager', instanceId: '1' }),
      on('b', { startStrategy: 'lazy-fallback' }),
      on('b', { startStrategy: 'eager', instanceId: '2', conditions: ready('False', 'Failed') }),
      on('b', { startStrategy: 'eager', instanceId: '3', conditions: ready('False', 'Stopping') }),
      on('b', { startStrategy: 'eager', instanceId: '4' }, true),
      on('c', { startStrategy: 'lazy' }),
      // Decided, its status not written yet: the annotation tells.
      {
        ...on('c', {}),
        metadata: { name: 'annotated', annotations: { [ANNOTATIONS.startStrategy]: 'eager' } },
      },
    ]);
    assert.deepEqual(
      [...counted],
      [
        ['a', 2],
        ['b', 1],
        ['c', 1],
      ],
    );
  });
});

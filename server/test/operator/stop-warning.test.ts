// The warning rule before an idle or lifetime stop, as pure functions: when the window opens, what a
// warning counts for, how long it holds the stop, and how activity the IDE reported moves it.
import assert from 'node:assert/strict';
import { DEFAULT_STOP_WARNING_SECONDS, stopWarningSeconds } from '../../src/model/app-definition.js';
import { nextStop, stopStep, type PlannedStop } from '../../src/operator/session/activity.js';

const MINUTE = 60_000;

describe('operator: the warning before a stop', () => {
  const t0 = Date.parse('2026-01-01T12:00:00Z');
  const idle: PlannedStop = { kind: 'Idle', reason: 'Idle', dueTime: t0 + 10 * MINUTE, limitMinutes: 10 };
  const window = 2 * MINUTE;

  it('does nothing before the window, warns in it with the time left, then waits out the window', () => {
    assert.deepEqual(stopStep(idle, window, undefined, t0 + 7 * MINUTE), { step: 'none' });
    assert.deepEqual(stopStep(idle, window, undefined, t0 + 8 * MINUTE), { step: 'warn', secondsLeft: 120 });
    const warnedAt = t0 + 8 * MINUTE;
    assert.deepEqual(stopStep(idle, window, warnedAt, t0 + 9 * MINUTE), { step: 'wait' });
    assert.deepEqual(stopStep(idle, window, warnedAt, t0 + 10 * MINUTE), { step: 'wait' }, 'due only once past');
    assert.deepEqual(stopStep(idle, window, warnedAt, t0 + 10 * MINUTE + 1), { step: 'stop' });
  });

  it('a late warning (the operator was down) still gives the whole window', () => {
    const late = t0 + 15 * MINUTE;
    assert.deepEqual(stopStep(idle, window, undefined, late), { step: 'warn', secondsLeft: 120 });
    assert.deepEqual(stopStep(idle, window, late, late + MINUTE), { step: 'wait' });
    assert.deepEqual(stopStep(idle, window, late, late + window), { step: 'stop' });
  });

  it('a warning older than the window (activity moved the stop since) warns again', () => {
    const moved = { ...idle, dueTime: idle.dueTime + 5 * MINUTE };
    const warnedAt = t0 + 8 * MINUTE;
    assert.deepEqual(stopStep(moved, window, warnedAt, t0 + 10 * MINUTE), { step: 'none' });
    assert.deepEqual(stopStep(moved, window, warnedAt, t0 + 13 * MINUTE), { step: 'warn', secondsLeft: 120 });
  });

  it('without a window it stops once due, as before', () => {
    assert.deepEqual(stopStep(idle, 0, undefined, t0 + 10 * MINUTE), { step: 'wait' });
    assert.deepEqual(stopStep(idle, 0, undefined, t0 + 11 * MINUTE), { step: 'stop' });
  });

  it('activity the IDE reported to its bridge moves the idle stop, never the lifetime', () => {
    const session = {
      metadata: { name: 's', creationTimestamp: new Date(t0).toISOString() },
      status: { lastActivity: new Date(t0 + MINUTE).toISOString() },
    };
    const base = { session, timeoutMinutes: 10, maxLifetimeMinutes: 0, idleCheck: true, now: new Date(t0) };
    assert.equal(nextStop(base)?.dueTime, t0 + 11 * MINUTE);
    assert.equal(nextStop({ ...base, bridgeActivity: t0 + 5 * MINUTE })?.dueTime, t0 + 15 * MINUTE);
    assert.equal(nextStop({ ...base, bridgeActivity: t0 })?.dueTime, t0 + 11 * MINUTE, 'the later of the two');
    const hard = nextStop({ ...base, maxLifetimeMinutes: 12, bridgeActivity: t0 + 5 * MINUTE });
    assert.deepEqual([hard?.kind, hard?.dueTime], ['MaxLifetime', t0 + 12 * MINUTE]);
  });

  it('the window: the field, else notifyAfter for idle stops, else the default; never longer than the limit', () => {
    assert.equal(stopWarningSeconds({ stopWarningSeconds: 30 }, 'Idle', 10), 30);
    assert.equal(stopWarningSeconds({ stopWarningSeconds: 0 }, 'MaxLifetime', 10), 0);
    assert.equal(stopWarningSeconds({}, 'Idle', 10), DEFAULT_STOP_WARNING_SECONDS);
    assert.equal(stopWarningSeconds({ monitor: { activityTracker: { notifyAfter: 7 } } }, 'Idle', 10), 180);
    const notify = { monitor: { activityTracker: { notifyAfter: 7 } } };
    assert.equal(stopWarningSeconds(notify, 'MaxLifetime', 60), DEFAULT_STOP_WARNING_SECONDS);
    assert.equal(stopWarningSeconds({}, 'Idle', 1), 60, 'a one-minute timeout is warned at its start');
  });
});

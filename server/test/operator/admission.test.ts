import assert from 'node:assert/strict';
import { queuedMessage } from '../../src/model/admission.js';
import { setCondition } from '../../src/model/conditions.js';
import { SESSION_ADMITTED_CONDITION, SessionAdmittedReason, type Session } from '../../src/model/session.js';
import { Delay } from '../../src/operator/runtime/outcome.js';
import { LazyStartGate, startDeadlineOf, TokenBucket, type GateEntry } from '../../src/operator/session/admission.js';

/** A clock the test moves by hand (milliseconds). */
function fakeClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, set: (t: number) => void (now = t), advance: (ms: number) => void (now += ms) };
}

const entries = (count: number): GateEntry[] =>
  Array.from({ length: count }, (_, i) => ({ name: `s${String(i).padStart(2, '0')}`, uid: `u${i}`, decided: true }));

describe('lazy-start admission: token bucket', () => {
  it('starts full, refills at its rate, holds at most its burst', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 2, burst: 3 }, clock.now);
    assert.equal(bucket.available(), 3);
    bucket.take(3);
    assert.equal(bucket.available(), 0);
    clock.advance(250);
    assert.equal(bucket.available(), 0.5);
    clock.advance(10_000);
    assert.equal(bucket.available(), 3);
  });

  it('tells when a number of tokens will have come, counting those held', () => {
    const clock = fakeClock();
    const bucket = new TokenBucket({ perSecond: 4, burst: 2 }, clock.now);
    assert.equal(bucket.msUntil(2), 0);
    bucket.take(2);
    assert.equal(bucket.msUntil(1), 250);
    // Beyond the burst: the fifth in line waits for five tokens, the four before it taking theirs.
    assert.equal(bucket.msUntil(5), 1250);
    clock.advance(125);
    assert.equal(bucket.msUntil(1), 125);
  });
});

describe('lazy-start admission: the gate', () => {
  /**
   * Runs the gate the way the work queue does: each session's pass comes at the time it asked for
   * (or when it is woken), the earliest first; passes of the same moment come in `passOrder`.
   */
  function simulate(
    gate: LazyStartGate,
    clock: ReturnType<typeof fakeClock>,
    queue: GateEntry[],
    woken: string[],
    passOrder: GateEntry[] = queue,
  ): Map<string, number> {
    const admittedAt = new Map<string, number>();
    const due = new Map(passOrder.map((e) => [e.name, clock.now()]));
    for (let step = 0; step < 10_000 && due.size > 0; step++) {
      const [name, at] = [...due].reduce((a, b) => (b[1] < a[1] ? b : a));
      clock.set(Math.max(clock.now(), at));
      due.delete(name);
      const entry = queue.find((e) => e.name === name)!;
      const waiting = queue.filter((e) => !admittedAt.has(e.name));
      const decision = gate.decide(entry, waiting);
      if (decision.admitted) admittedAt.set(name, decision.at);
      else due.set(name, clock.now() + decision.retryAfterMs);
      for (const w of woken.splice(0)) if (!admittedAt.has(w)) due.set(w, clock.now());
    }
    return admittedAt;
  }

  it('admits in creation order and never faster than the rate allows, without idling', () => {
    const clock = fakeClock();
    const woken: string[] = [];
    const rate = { perSecond: 2, burst: 2 };
    const gate = new LazyStartGate(rate, (n) => woken.push(n), clock.now);
    const queue = entries(12);
    const start = clock.now();
    // The passes come in reverse creation order: the gate must still grant in creation order.
    const admittedAt = simulate(gate, clock, queue, woken, [...queue].reverse());
    assert.equal(admittedAt.size, 12);
    const times = queue.map((e) => admittedAt.get(e.name)!);
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! >= times[i - 1]!, `s${i} admitted before s${i - 1}`);
    // The token bucket's rule: within any window, at most burst + rate × its length.
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        assert.ok(j - i + 1 <= rate.burst + (rate.perSecond * (times[j]! - times[i]!)) / 1000 + 1e-9, `${i}..${j}`);
      }
    }
    // And it keeps up: the last of twelve at (12 - burst) / rate seconds (simulated time).
    assert.equal(times[11]! - start, 5000);
  });

  it('a later session that comes first grants the earlier ones their tokens first, and wakes them', () => {
    const clock = fakeClock();
    const woken: string[] = [];
    const gate = new LazyStartGate({ perSecond: 1, burst: 3 }, (n) => woken.push(n), clock.now);
    const queue = entries(5);
    const third = gate.decide(queue[2]!, queue);
    assert.deepEqual(third, { admitted: true, at: clock.now() });
    assert.deepEqual(woken, ['s00', 's01']);
    // The earlier ones pass on their grant; the fourth waits for a token.
    assert.equal(gate.decide(queue[0]!, queue).admitted, true);
    assert.deepEqual(gate.decide(queue[3]!, queue), { admitted: false, retryAfterMs: 1000 });
    // The fifth is second in line now: two tokens' time.
    assert.deepEqual(gate.decide(queue[4]!, queue), { admitted: false, retryAfterMs: 2000 });
  });

  it('waits behind a session whose start strategy is not decided yet, without taking a token', () => {
    const clock = fakeClock();
    const gate = new LazyStartGate({ perSecond: 1, burst: 1 }, () => undefined, clock.now);
    const queue = entries(2);
    queue[0]!.decided = false;
    assert.deepEqual(gate.decide(queue[1]!, queue), { admitted: false, retryAfterMs: Delay.admissionUndecided });
    // It decided (lazy): the token is still there for it.
    queue[0]!.decided = true;
    assert.equal(gate.decide(queue[0]!, queue).admitted, true);
  });

  it('a session that leaves the queue (deleted) frees its place, and its grant is dropped', () => {
    const clock = fakeClock();
    const gate = new LazyStartGate({ perSecond: 1, burst: 1 }, () => undefined, clock.now);
    const queue = entries(3);
    assert.equal(gate.decide(queue[0]!, queue).admitted, true);
    assert.deepEqual(gate.decide(queue[2]!, queue.slice(1)), { admitted: false, retryAfterMs: 2000 });
    // The second is deleted: the third is next, one token away.
    const left = [queue[2]!];
    assert.deepEqual(gate.decide(queue[2]!, left), { admitted: false, retryAfterMs: 1000 });
    clock.advance(1000);
    assert.equal(gate.decide(queue[2]!, left).admitted, true);
  });
});

describe('lazy-start admission: the start deadline counts from the admission', () => {
  const created = '2026-01-01T00:00:00Z';
  const session = (status?: 'True' | 'False', at = '2026-01-01T00:05:00.000Z'): Session => ({
    metadata: { name: 's', creationTimestamp: created },
    spec: { user: 'u', appDefinition: 'a' },
    status: status
      ? {
          conditions: setCondition(
            undefined,
            {
              type: SESSION_ADMITTED_CONDITION,
              status,
              reason: status === 'True' ? SessionAdmittedReason.admitted : SessionAdmittedReason.queued,
              message: queuedMessage({ perSecond: 1, burst: 1 }),
            },
            new Date(at),
          ),
        }
      : {},
  });

  it('none while queued; from the admission once admitted; from the creation when it never met the gate', () => {
    assert.equal(startDeadlineOf(session('False'), 180), undefined);
    assert.equal(startDeadlineOf(session('True'), 180), Date.parse('2026-01-01T00:08:00Z'));
    assert.equal(startDeadlineOf(session(), 180), Date.parse('2026-01-01T00:03:00Z'));
  });
});

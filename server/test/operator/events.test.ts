// Event aggregation as client-go's recorder does it: the correlator on a fake clock, and the
// recorder's writes (create, then patches of the count) through a fake Events API.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import {
  COMBINED_PREFIX,
  EVENT_CORRELATION,
  EventCorrelator,
  type EventOccurrence,
} from '../../src/operator/runtime/event-correlator.js';
import { EventRecorder, type EventsApi } from '../../src/operator/runtime/events.js';

function correlatorAt(clock: { now: number }, options: { burst?: number } = {}) {
  let n = 0;
  return new EventCorrelator({ now: () => clock.now, newName: (name) => `${name}.${n++}`, ...options });
}

const occurrence = (extra: Partial<EventOccurrence> = {}): EventOccurrence => ({
  objectKey: 'uid-1',
  objectName: 's1',
  type: 'Warning',
  reason: 'InjectionFailed',
  message: 'data injection failed',
  ...extra,
});

describe('operator events: correlation (client-go EventCorrelator)', () => {
  it('counts a repeat within the window on the same Event, and starts a new one after it', () => {
    const clock = { now: 1_000_000 };
    const c = correlatorAt(clock);
    const first = c.correlate(occurrence())!;
    clock.now += 60_000;
    const second = c.correlate(occurrence())!;
    assert.equal(second, first, 'the same Event');
    assert.equal(second.count, 2);
    assert.equal(second.firstTimestamp, 1_000_000);
    assert.equal(second.lastTimestamp, 1_060_000);
    clock.now += EVENT_CORRELATION.windowMs + 1;
    const third = c.correlate(occurrence())!;
    assert.notEqual(third.name, first.name, 'past the window: a new Event');
    assert.equal(third.count, 1);
  });

  it('keeps Events of another message, reason, type or object apart', () => {
    const c = correlatorAt({ now: 0 });
    const names = new Set(
      [
        occurrence(),
        occurrence({ message: 'other' }),
        occurrence({ reason: 'Failed' }),
        occurrence({ type: 'Normal' }),
        occurrence({ objectKey: 'uid-2' }),
      ].map((o) => c.correlate(o)!.name),
    );
    assert.equal(names.size, 5);
  });

  it('combines similar occurrences with many different messages into one Event', () => {
    const c = correlatorAt({ now: 0 });
    const events = Array.from({ length: 12 }, (_, i) => c.correlate(occurrence({ message: `attempt ${i}` }))!);
    // Nine Events of their own, then one combined Event that every further message counts on.
    assert.equal(new Set(events.slice(0, 9).map((e) => e.name)).size, 9);
    const combined = events[9]!;
    assert.equal(events[10], combined);
    assert.equal(events[11], combined);
    assert.equal(combined.count, 3);
    assert.equal(combined.message, `${COMBINED_PREFIX}attempt 11`);
  });

  it('gives each object a budget of writes: past it an occurrence is counted, not written, until the budget refills', () => {
    const clock = { now: 0 };
    const c = correlatorAt(clock, { burst: 3 });
    const written = Array.from({ length: 5 }, () => c.correlate(occurrence()));
    assert.deepEqual(
      written.map((e) => e !== undefined),
      [true, true, true, false, false],
    );
    // Another object has its own budget.
    assert.ok(c.correlate(occurrence({ objectKey: 'uid-2' })));
    clock.now += EVENT_CORRELATION.refillMs;
    const next = c.correlate(occurrence());
    assert.ok(next, 'one more write after the refill time');
    assert.equal(next.count, 6, 'the occurrences not written are in the count');
    assert.equal(c.correlate(occurrence()), undefined);
  });
});

/** A fake Events API: records each call; `hold` keeps calls waiting until released. */
function fakeApi() {
  const calls: { verb: 'create' | 'patch'; name: string; count: number; message: string }[] = [];
  const stored = new Map<string, number>();
  let held: (() => void)[] | undefined;
  const gate = () => (held ? new Promise<void>((r) => held!.push(r)) : Promise.resolve());
  const api: EventsApi = {
    async createNamespacedEvent({ body }) {
      await gate();
      const name = body.metadata!.name!;
      calls.push({ verb: 'create', name, count: body.count!, message: body.message! });
      if (stored.has(name)) throw new k8s.ApiException(409, 'AlreadyExists', {}, {});
      stored.set(name, body.count!);
      return body;
    },
    async patchNamespacedEvent({ name, body }) {
      await gate();
      const patch = body as { count: number; message: string };
      calls.push({ verb: 'patch', name, count: patch.count, message: patch.message });
      if (!stored.has(name)) throw new k8s.ApiException(404, 'NotFound', {}, {});
      stored.set(name, patch.count);
      return {} as k8s.CoreV1Event;
    },
  };
  return {
    api,
    calls,
    stored,
    hold: () => (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const r of waiting) r();
    },
    heldCount: () => held?.length ?? 0,
  };
}

const session = { apiVersion: 'ide.cloud/v1', kind: 'Session', metadata: { name: 's1', namespace: 'ns', uid: 'u1' } };
const silent = pino({ level: 'silent' });

describe('operator events: the recorder', () => {
  it('creates an Event once and patches its count for each repeat', async () => {
    const fake = fakeApi();
    const recorder = new EventRecorder(fake.api, 'test', silent);
    recorder.record(session, 'Warning', 'NotReady', 'the IDE pod is not ready');
    await recorder.flush(5000);
    recorder.record(session, 'Warning', 'NotReady', 'the IDE pod is not ready');
    recorder.record(session, 'Normal', 'Ready', 'ready');
    await recorder.flush(5000);
    assert.deepEqual(
      fake.calls.map((c) => [c.verb, c.count]),
      [
        ['create', 1],
        ['patch', 2],
        ['create', 1],
      ],
    );
    assert.equal(fake.calls[1]!.name, fake.calls[0]!.name);
  });

  it('writes in the order recorded, one at a time, and a repeat waiting behind its create costs no write of its own', async () => {
    const fake = fakeApi();
    const recorder = new EventRecorder(fake.api, 'test', silent);
    fake.hold();
    recorder.record(session, 'Normal', 'StopWarning', 'warm instance 1 reserved');
    recorder.record(session, 'Warning', 'NotReady', 'route added');
    recorder.record(session, 'Warning', 'NotReady', 'route added');
    recorder.record(session, 'Normal', 'Ready', 'ready');
    assert.equal(fake.heldCount(), 1, 'one write at a time');
    fake.release();
    await recorder.flush(5000);
    assert.deepEqual(
      fake.calls.map((c) => [c.verb, c.message, c.count]),
      [
        ['create', 'warm instance 1 reserved', 1],
        ['create', 'route added', 2],
        ['create', 'ready', 1],
      ],
    );
    const names = fake.calls.map((c) => c.name);
    assert.deepEqual([...names].sort(), names, 'names sort in the order recorded');
  });

  it('creates again an Event that is gone (expired) when its repeat is patched', async () => {
    const fake = fakeApi();
    const recorder = new EventRecorder(fake.api, 'test', silent);
    recorder.record(session, 'Normal', 'Stopped', 'stopped');
    await recorder.flush(5000);
    fake.stored.clear();
    recorder.record(session, 'Normal', 'Stopped', 'stopped');
    await recorder.flush(5000);
    assert.deepEqual(
      fake.calls.map((c) => [c.verb, c.count]),
      [
        ['create', 1],
        ['patch', 2],
        ['create', 2],
      ],
    );
  });

  it('holds at most maxQueued writes waiting; more are dropped', async () => {
    const fake = fakeApi();
    const recorder = new EventRecorder(fake.api, 'test', silent, { maxQueued: 2 });
    fake.hold();
    for (let i = 0; i < 5; i++) recorder.record(session, 'Warning', 'Failed', `failure ${i}`);
    fake.release();
    await recorder.flush(5000);
    // The first is being written when the others come; two wait; two are dropped.
    assert.deepEqual(
      fake.calls.map((c) => c.message),
      ['failure 0', 'failure 1', 'failure 2'],
    );
  });

  it('a flush that times out drops the writes still waiting', async () => {
    const fake = fakeApi();
    const recorder = new EventRecorder(fake.api, 'test', silent);
    fake.hold();
    for (let i = 0; i < 3; i++) recorder.record(session, 'Warning', 'Failed', `failure ${i}`);
    await recorder.flush(10);
    fake.release();
    await recorder.flush(5000);
    assert.deepEqual(
      fake.calls.map((c) => c.message),
      ['failure 0'],
    );
  });
});

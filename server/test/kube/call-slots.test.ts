// The limit on a process's API calls in flight (server/src/kube/call-slots.ts): order, limit, and a
// wait that ends with its call's deadline.
import assert from 'node:assert/strict';
import { CallSlots } from '../../src/kube/call-slots.js';

/** Settles pending promise callbacks. */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('kube client: calls in flight', () => {
  it('lets `limit` calls go at once; the others go in order of issue as slots are released', async () => {
    const slots = new CallSlots(2);
    const started: number[] = [];
    for (let i = 0; i < 5; i++) void slots.acquire().then(() => started.push(i));
    await settled();
    assert.deepEqual(started, [0, 1]);
    assert.deepEqual(slots.counts, { inFlight: 2, waiting: 3 });
    slots.release();
    await settled();
    assert.deepEqual(started, [0, 1, 2]);
    slots.release();
    slots.release();
    await settled();
    assert.deepEqual(started, [0, 1, 2, 3, 4]);
    assert.deepEqual(slots.counts, { inFlight: 2, waiting: 0 });
    slots.release();
    slots.release();
    assert.deepEqual(slots.counts, { inFlight: 0, waiting: 0 });
  });

  it('ends a wait with the reason of its signal, and the call behind it takes the slot', async () => {
    const slots = new CallSlots(1);
    await slots.acquire();
    const deadline = new AbortController();
    const timedOut = slots.acquire(deadline.signal);
    const next = slots.acquire();
    deadline.abort(new DOMException('deadline passed', 'TimeoutError'));
    await assert.rejects(timedOut, { name: 'TimeoutError' });
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 1 });
    slots.release();
    await next;
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 0 });
  });

  it('leaves the waiting calls alone when the signal of a call aborts after its turn came', async () => {
    const slots = new CallSlots(1);
    await slots.acquire();
    const deadline = new AbortController();
    const first = slots.acquire(deadline.signal);
    const second = slots.acquire();
    slots.release();
    await first;
    deadline.abort(new Error('late'));
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 1 });
    slots.release();
    await second;
  });

  it('refuses at once a call whose deadline has passed, even with a slot free', async () => {
    const slots = new CallSlots(1);
    await assert.rejects(slots.acquire(AbortSignal.abort(new Error('gone'))), /gone/);
    assert.deepEqual(slots.counts, { inFlight: 0, waiting: 0 });
  });

  it('refuses a limit below one', () => {
    assert.throws(() => new CallSlots(0), /at least 1/);
  });
});

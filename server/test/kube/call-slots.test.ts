// The limit on a process's API calls in flight (server/src/kube/call-slots.ts): order, limit, a
// wait that ends with its call's deadline, and the calls ahead; and through a configured client
// (kube/client.ts), a call ahead's turn and its marker kept off the wire.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { CallSlots } from '../../src/kube/call-slots.js';
import { boundedRequests, callsAhead } from '../../src/kube/client.js';
import { eventually } from '../../../test/support/kube.js';

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

  it('takes a free slot at once without waiting (tryAcquire), and none when all are taken or waited for', async () => {
    const slots = new CallSlots(1);
    assert.equal(slots.tryAcquire(), true);
    assert.equal(slots.tryAcquire(), false);
    const next = slots.acquire();
    slots.release();
    await next;
    assert.equal(slots.tryAcquire(), false, 'the released slot went to the waiting call');
    slots.release();
    assert.equal(slots.tryAcquire(), true);
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 0 });
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

  it('lets a call ahead go before the calls waiting in order of issue, and calls ahead in their order', async () => {
    const slots = new CallSlots(1);
    await slots.acquire();
    const started: string[] = [];
    for (const [name, ahead] of [
      ['first', false],
      ['second', false],
      ['ahead', true],
      ['later ahead', true],
    ] as const) {
      void slots.acquire(undefined, { ahead }).then(() => started.push(name));
    }
    for (let i = 0; i < 4; i++) {
      slots.release();
      await settled();
    }
    assert.deepEqual(started, ['ahead', 'later ahead', 'first', 'second']);
  });

  it('skips a call ahead whose deadline passed while it waited, and does not count it', async () => {
    const slots = new CallSlots(1);
    await slots.acquire();
    const deadline = new AbortController();
    const abandoned = slots.acquire(deadline.signal, { ahead: true });
    const next = slots.acquire();
    deadline.abort(new Error('deadline passed'));
    await assert.rejects(abandoned, /deadline passed/);
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 1 });
    slots.release();
    await next;
    assert.deepEqual(slots.counts, { inFlight: 1, waiting: 0 });
    slots.release();
    assert.deepEqual(slots.counts, { inFlight: 0, waiting: 0 });
  });

  it('through a generated client: a call ahead is sent before the calls queued before it, without its marker', async () => {
    const seen: { path: string; headers: http.IncomingHttpHeaders }[] = [];
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const server = http.createServer((request, response) => {
      seen.push({ path: request.url ?? '', headers: request.headers });
      const answer = () => response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      if (seen.length === 1) void firstHeld.then(answer);
      else answer();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      // A generated client on the bounded library, as configureClient makes them: the options of a call
      // go through its middleware before the library sends it.
      const api = new k8s.CustomObjectsApi(
        k8s.createConfiguration({
          baseServer: new k8s.ServerConfiguration(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {}),
          httpApi: boundedRequests(1),
        }),
      );
      const get = (name: string, options?: ReturnType<typeof callsAhead>) =>
        api.getNamespacedCustomObject({ group: 'g', version: 'v1', namespace: 'n', plural: 'p', name }, options);
      const held = get('held');
      await eventually(() => assert.equal(seen.length, 1), 5000, 5);
      // Issued in this order while the one slot is held; each reaches its wait within the turn.
      const queued = [get('queued-1'), get('queued-2'), get('ahead', callsAhead())];
      await new Promise((resolve) => setImmediate(resolve));
      releaseFirst();
      await Promise.all([held, ...queued]);
      assert.deepEqual(
        seen.map((s) => s.path.split('/').at(-1)),
        ['held', 'ahead', 'queued-1', 'queued-2'],
      );
      assert.ok(
        seen.every((s) => Object.keys(s.headers).every((h) => !h.includes('ahead'))),
        'the marker of a call ahead never reaches the API server',
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('refuses a limit below one', () => {
    assert.throws(() => new CallSlots(0), /at least 1/);
  });
});

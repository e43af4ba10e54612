import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/operator/runtime/work-queue.js';

async function until(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('deadline passed');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('operator work queue', () => {
  it('de-duplicates keys and never runs one key on two workers at once', async () => {
    const seen: string[] = [];
    let active = 0;
    let maxActive = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(
      async (key) => {
        active++;
        maxActive = Math.max(maxActive, active);
        seen.push(key);
        if (seen.length === 1) await gate;
        active--;
      },
      { workers: 4 },
    );
    q.start();
    q.add('a');
    await until(() => seen.length === 1);
    q.add('a'); // while 'a' runs: runs again afterwards, once
    q.add('a');
    release();
    await until(() => seen.length === 2);
    await new Promise((r) => setTimeout(r, 30));
    await q.stop();
    assert.deepEqual(seen, ['a', 'a']);
    assert.equal(maxActive, 1);
  });

  it('retries a failing key with backoff and honours requeueAfterMs', async () => {
    let calls = 0;
    const q = new WorkQueue(
      async () => {
        calls++;
        if (calls === 1) throw new Error('boom');
        if (calls === 2) return { requeueAfterMs: 10 };
        return undefined;
      },
      { workers: 1, baseBackoffMs: 10 },
    );
    q.start();
    q.add('k');
    await until(() => calls === 3);
    await q.stop();
    assert.equal(calls, 3);
  });

  it('a sooner requeue replaces a later one of the same key, a later one leaves the sooner', async () => {
    // A pass that waits long (a start deadline), woken by an event into a pass that asks to look
    // again shortly: the short wait wins.
    const visits: string[] = [];
    const answers = [{ requeueAfterMs: 60_000 }, { requeueAfterMs: 20 }];
    const q = new WorkQueue(
      async (key) => {
        visits.push(key);
        return key === 'k' ? answers[visits.filter((v) => v === 'k').length - 1] : undefined;
      },
      { workers: 1 },
    );
    q.start();
    q.add('k');
    await until(() => visits.length === 1);
    q.add('k');
    await until(() => visits.filter((v) => v === 'k').length === 3, 1000);
    q.addAfter('later', 20);
    q.addAfter('later', 60_000);
    await until(() => visits.includes('later'), 1000);
    await q.stop();
  });
});

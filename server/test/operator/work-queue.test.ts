import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/operator/runtime/work-queue.js';
import { ArrivalOrder, wakeSessions } from '../../src/operator/session/watches.js';
import type { Session } from '../../src/model/session.js';
import { LABELS } from '../../src/model/api-group.js';
import { COMPONENT } from '../../src/operator/manifests.js';

async function until(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('deadline passed');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The caches wakeSessions listens to, each made by `informer` from its name. */
function wakeCaches(informer: (name: string) => object): Parameters<typeof wakeSessions>[0] {
  const names = ['sessions', 'deployments', 'reservations', 'replicaSets', 'configStores', 'pods'];
  return Object.fromEntries(names.map((name) => [name, informer(name)])) as unknown as Parameters<
    typeof wakeSessions
  >[0];
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

  it("a wake its own pass may have caused is judged when the pass ends: its own write's copy runs no pass, anything else does", async () => {
    const seen: string[] = [];
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(
      async (key) => {
        seen.push(key);
        await gate;
      },
      { workers: 2 },
    );
    q.start();
    q.add('a');
    await until(() => seen.length === 1);
    let own = false;
    // While 'a' runs: known own only once the pass has its answer (asked at its end, not now).
    q.addUnlessOwn('a', () => own);
    own = true;
    release();
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(seen, ['a'], 'its own write: no other pass');
    gate = new Promise<void>((r) => (release = r));
    q.add('a');
    await until(() => seen.length === 2);
    q.addUnlessOwn('a', () => true);
    q.addUnlessOwn('a', () => false);
    release();
    await until(() => seen.length === 3);
    assert.deepEqual(seen, ['a', 'a', 'a'], 'one change not its own: one more pass');
    // Not being processed: at once.
    q.addUnlessOwn('b', () => true);
    await until(() => seen.length === 4);
    release();
    await q.stop();
    assert.deepEqual(seen, ['a', 'a', 'a', 'b']);
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

  it('with a rank, takes the lowest first and equal ranks in order of adding; a session queue ranks by arrival', async () => {
    const arrivals = new ArrivalOrder();
    for (const name of ['old', 'older-twin', 'middle', 'new']) arrivals.see(name);
    arrivals.see('old'); // seen again: keeps its place
    arrivals.see('gone');
    arrivals.forget('gone');
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue(
      async (key) => {
        seen.push(key);
        if (key === 'busy') await gate;
      },
      { workers: 1, rank: (key) => (key === 'busy' ? -1 : arrivals.rank(key)) },
    );
    q.start();
    q.add('busy');
    await until(() => seen.length === 1);
    // Added newest first while the one worker is busy: they run oldest first; one never seen (or
    // forgotten) after every session seen.
    for (const key of ['gone', 'new', 'middle', 'old', 'older-twin']) q.add(key);
    release();
    await until(() => seen.length === 6);
    await q.stop();
    assert.deepEqual(seen, ['busy', 'old', 'older-twin', 'middle', 'new', 'gone']);
  });

  it('ranks a session by when the session watch first showed it, and forgets it when it is deleted', () => {
    type Handler = (type: string, object: unknown) => void;
    const handlers = new Map<string, Handler>();
    const informer = (name: string) => ({
      on: (handler: Handler) => void handlers.set(name, handler),
      get: () => undefined,
    });
    const cache = wakeCaches(informer);
    const added: string[] = [];
    const arrivals = new ArrivalOrder();
    const queue = { add: (key: string) => added.push(key), addUnlessOwn: (key: string) => added.push(`own? ${key}`) };
    wakeSessions(cache, queue, { forget: () => undefined }, arrivals);
    const session = (name: string) => ({ metadata: { name, uid: `uid-${name}` } }) as Session;
    const emit = handlers.get('sessions')!;
    emit('ADDED', session('first'));
    emit('ADDED', session('second'));
    emit('MODIFIED', session('first'));
    assert.ok(arrivals.rank('first') < arrivals.rank('second'), 'a change keeps the first sight');
    emit('DELETED', session('first'));
    assert.equal(arrivals.rank('first'), Number.MAX_SAFE_INTEGER);
    emit('ADDED', session('first'));
    assert.ok(arrivals.rank('first') > arrivals.rank('second'), 'a session of the name made again is new');
    assert.deepEqual(added, ['first', 'second', 'first', 'first', 'first']);
  });

  it("a change of a session or of its instance that its own pass may have written is judged by the write's answer, by the change's version", () => {
    type Handler = (type: string, object: unknown, ownWrite: boolean, previous?: unknown) => void;
    const handlers = new Map<string, Handler>();
    const observed: string[] = [];
    const informer = (name: string) => ({
      on: (handler: Handler) => void handlers.set(name, handler),
      get: () => undefined,
      observed: (object: string, version: string) => observed.includes(`${name} ${object} ${version}`),
    });
    const cache = wakeCaches(informer);
    const added: string[] = [];
    const checks: [string, () => boolean][] = [];
    const queue = {
      add: (key: string) => added.push(key),
      addUnlessOwn: (key: string, own: () => boolean) => checks.push([key, own]),
    };
    wakeSessions(cache, queue, { forget: () => undefined }, new ArrivalOrder());
    const session = (rv: string) =>
      ({ metadata: { name: 's', uid: 'uid-s', resourceVersion: rv }, spec: {}, status: { phase: rv } }) as Session;
    handlers.get('sessions')!('MODIFIED', session('5'), false, session('4'));
    const reservation = { metadata: { name: 'app-pool-1', resourceVersion: '7', labels: { [LABELS.session]: 's' } } };
    handlers.get('reservations')!('MODIFIED', reservation, false, reservation);
    // Without the version it replaced (the cache was newer, or a first sight): a wake at once.
    handlers.get('sessions')!('MODIFIED', session('6'), false);
    assert.deepEqual(added, ['s']);
    assert.deepEqual(
      checks.map(([key, own]) => [key, own()]),
      [
        ['s', false],
        ['s', false],
      ],
    );
    observed.push('sessions s 5', 'reservations app-pool-1 7');
    assert.deepEqual(
      checks.map(([key, own]) => [key, own()]),
      [
        ['s', true],
        ['s', true],
      ],
    );
  });

  it("wakes a lazy session on every change of its own pod (or an earlier operator's ReplicaSet), served or not; a warm instance's pod only while it starts", () => {
    type Handler = (type: string, object: unknown) => void;
    const handlers = new Map<string, Handler>();
    const served = { metadata: { name: 'warm-1' }, status: { url: 'https://x/warm-1/' } } as unknown as Session;
    const starting = { metadata: { name: 'warm-2' }, status: {} } as unknown as Session;
    const sessions = new Map([
      ['warm-1', served],
      ['warm-2', starting],
    ]);
    const instance = (name: string) => ({
      metadata: { name, uid: `uid-${name}`, labels: { [LABELS.component]: COMPONENT.poolInstance } },
    });
    const instances = new Map([
      ['app-pool-1', instance('app-pool-1')],
      ['app-pool-2', instance('app-pool-2')],
    ]);
    // Each instance's reservation names the session that holds it.
    const reservation = (name: string, session: string) => ({
      metadata: { name, labels: { [LABELS.session]: session }, ownerReferences: [{ uid: `uid-${name}` }] },
    });
    const reservations = new Map([
      ['app-pool-1', reservation('app-pool-1', 'warm-1')],
      ['app-pool-2', reservation('app-pool-2', 'warm-2')],
    ]);
    const informer = (name: string, get: (key: string) => unknown = () => undefined) => ({
      on: (handler: Handler) => void handlers.set(name, handler),
      get,
    });
    const cache = {
      sessions: informer('sessions', (n) => sessions.get(n)),
      deployments: informer('deployments', (n) => instances.get(n)),
      reservations: informer('reservations', (n) => reservations.get(n)),
      replicaSets: informer('replicaSets'),
      configStores: informer('configStores'),
      pods: informer('pods'),
    } as unknown as Parameters<typeof wakeSessions>[0];
    const added: string[] = [];
    const queue = { add: (key: string) => added.push(key), addUnlessOwn: (key: string) => added.push(`own? ${key}`) };
    wakeSessions(cache, queue, { forget: () => undefined }, new ArrivalOrder());
    const labelled = (labels: Record<string, string>) => ({ metadata: { labels } });
    handlers.get('replicaSets')!('MODIFIED', labelled({ [LABELS.session]: 'lazy-1' }));
    handlers.get('pods')!('MODIFIED', labelled({ [LABELS.session]: 'lazy-1' }));
    handlers.get('pods')!('MODIFIED', labelled({ [LABELS.poolInstance]: 'app-pool-1' }));
    handlers.get('pods')!('MODIFIED', labelled({ [LABELS.poolInstance]: 'app-pool-2' }));
    assert.deepEqual(added, ['lazy-1', 'lazy-1', 'warm-2']);
  });
});

// The shared informer (server/src/kube/informer.ts) on the real kube-apiserver: what the operator's
// and the service's caches rely on.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { Informer, type IndexFunc, type WatchEventType } from '../../server/src/kube/informer.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { startKubeWriteProxy, type KubeWriteProxy } from '../support/kube-write-proxy.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';

describe('informer on the real kube-apiserver', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let namespace: string;
  let core: k8s.CoreV1Api;
  /** Between the informers and the API server: it records their lists and watches of the collection. */
  let proxy: KubeWriteProxy;
  let proxied: k8s.KubeConfig;
  const informers: Informer[] = [];
  const collection = () => `/api/v1/namespaces/${namespace}/configmaps`;
  /** The watch requests the informers made so far (a list is the same GET without `watch=true`). */
  const watches = () => proxy.writes.filter((r) => new URLSearchParams(r.query).get('watch') === 'true');
  const lists = () => proxy.writes.filter((r) => !new URLSearchParams(r.query).has('watch'));

  const configMaps = (
    rewatchIntervalMs = 60_000,
    transform?: (c: k8s.V1ConfigMap) => k8s.V1ConfigMap,
    indexers?: Record<string, IndexFunc<k8s.V1ConfigMap>>,
  ) => {
    const informer = new Informer<k8s.V1ConfigMap>(proxied, {
      transform,
      indexers,
      path: collection(),
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace,
      labelSelector: 'informer-test=yes',
      rewatchIntervalMs,
    });
    const events: [WatchEventType, string, string | undefined][] = [];
    informer.on((type, o) => events.push([type, o.metadata!.name!, o.data?.value]));
    informers.push(informer as unknown as Informer);
    return { informer, events };
  };
  const create = (name: string, value: string) =>
    core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name, labels: { 'informer-test': 'yes' } }, data: { value } },
    });
  const update = (name: string, value: string) =>
    core.patchNamespacedConfigMap(
      { name, namespace, body: { data: { value } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'informer');
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    proxy = await startKubeWriteProxy(cluster.kc, (method, path) => method === 'GET' && path === collection());
    proxied = new k8s.KubeConfig();
    proxied.loadFromFile(proxy.kubeconfig);
  });
  afterEach(async () => {
    await Promise.all(informers.splice(0).map((i) => i.stop()));
    await core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: 'informer-test=yes' });
  });
  after(async () => {
    await proxy?.close();
    await deleteTestNamespace(cluster.kc, namespace);
  });

  it('fills its cache from the first list, then follows changes; managedFields are not kept', async () => {
    await create('a', '1');
    const { informer, events } = configMaps();
    informer.start();
    await informer.waitForSync();
    assert.equal(informer.get('a')?.data?.value, '1');
    assert.equal(informer.get('a')?.metadata?.managedFields, undefined);
    await create('b', '2');
    await update('a', '3');
    await core.deleteNamespacedConfigMap({ name: 'b', namespace });
    await eventually(() => assert.equal(events.filter(([t]) => t === 'DELETED').length, 1));
    assert.deepEqual(events, [
      ['ADDED', 'a', '1'],
      ['ADDED', 'b', '2'],
      ['MODIFIED', 'a', '3'],
      ['DELETED', 'b', '2'],
    ]);
    assert.deepEqual(
      informer.list().map((c) => c.metadata!.name),
      ['a'],
    );
  });

  it('renews its watch without reporting unchanged objects again, and misses no change between renewals', async () => {
    await create('a', '1');
    const { informer, events } = configMaps(300);
    const [listsBefore, watchesBefore] = [lists().length, watches().length];
    informer.start();
    await informer.waitForSync();
    // Renewals seen at the API server: a watch, then two more, each from the version the last one reached.
    await eventually(
      () => assert.ok(watches().length >= watchesBefore + 3, `${watches().length - watchesBefore} watches, not 3`),
      10_000,
    );
    const written = await update('a', '2');
    await eventually(() => assert.equal(informer.get('a')?.data?.value, '2'));
    // Two more renewals after the change: a renewed watch that reported it again would show here.
    const watchesAtChange = watches().length;
    await eventually(
      () => assert.ok(watches().length >= watchesAtChange + 2, `${watches().length - watchesAtChange} renewals, not 2`),
      10_000,
    );
    assert.deepEqual(events, [
      ['ADDED', 'a', '1'],
      ['MODIFIED', 'a', '2'],
    ]);
    assert.equal(lists().length, listsBefore + 1, 'renewals resume the watch, they do not list again');
    const resumedFrom = new URLSearchParams(watches().at(-1)!.query).get('resourceVersion');
    assert.ok(
      BigInt(resumedFrom ?? '0') >= BigInt(written.metadata!.resourceVersion!),
      `the last renewal resumed from ${resumedFrom}, not before the change (${written.metadata!.resourceVersion})`,
    );
  });

  it('after a dropped connection lists again and reports what changed meanwhile, deletions included', async () => {
    await create('a', '1');
    await create('b', '1');
    const { informer, events } = configMaps();
    informer.start();
    await informer.waitForSync();
    await informer.stop(); // nothing is watched now
    await core.deleteNamespacedConfigMap({ name: 'a', namespace });
    await update('b', '2');
    events.length = 0;
    informer.start();
    informer.dropConnection();
    await eventually(() => assert.equal(informer.get('b')?.data?.value, '2'));
    await eventually(() => assert.equal(informer.get('a'), undefined));
    assert.deepEqual(events.map(([t, n]) => `${t} ${n}`).sort(), ['DELETED a', 'MODIFIED b']);
  });

  it('observe() shows a write at once and never goes back to an older version', async () => {
    await create('a', '1');
    const { informer } = configMaps();
    informer.start();
    await informer.waitForSync();
    const older = structuredClone(informer.get('a')!);
    const written = await update('a', '2');
    informer.observe(written);
    assert.equal(informer.get('a')?.data?.value, '2', 'the write is visible before its watch event');
    informer.observe(older);
    assert.equal(informer.get('a')?.data?.value, '2', 'an older object does not replace a newer one');
    await core.deleteNamespacedConfigMap({ name: 'a', namespace });
    await eventually(() => assert.equal(informer.get('a'), undefined));
    informer.observe(written);
    assert.equal(informer.get('a'), undefined, 'a write answered before the deletion does not bring it back');
  });

  it("tells its listeners which events bring a write this process observed: never another writer's, nor a read's", async () => {
    await create('own', '0');
    const { informer } = configMaps();
    // Per MODIFIED event of 'own', in order: its ownWrite, and the versions observed when it came.
    const heard: { ownWrite: boolean; observedThen: Set<string> }[] = [];
    const observed = new Set<string>();
    informer.on((type, o, ownWrite) => {
      if (type === 'MODIFIED' && o.metadata?.name === 'own') heard.push({ ownWrite, observedThen: new Set(observed) });
    });
    informer.start();
    await informer.waitForSync();
    // The watch delivers each change in order: the k-th event is the k-th write's. Some observed, some
    // another writer's (not observed), in a row, so that an event of another writer can come while
    // the cache holds a newer write of this process (what the listener then gets).
    const writes: { version: string; observed: boolean }[] = [];
    const write = async (mine: boolean) => {
      const answer = await update('own', String(writes.length + 1));
      const version = answer.metadata!.resourceVersion!;
      if (mine) {
        informer.observe(answer);
        observed.add(version);
      }
      writes.push({ version, observed: mine });
    };
    for (const mine of [true, false, true, true, false, true, true]) await write(mine);
    await eventually(() => assert.equal(heard.length, writes.length));
    // An answer usually comes before its event; on a loaded machine a few more writes may be needed.
    for (let more = 0; more < 20 && !heard.some((h) => h.ownWrite); more++) {
      await write(true);
      await eventually(() => assert.equal(heard.length, writes.length));
    }
    writes.forEach(({ version, observed: mine }, k) => {
      // A write observed before its event came is the process's own; one observed only after (its
      // event was faster than its answer) or never is not: a wake too many, never one too few.
      const expected = mine && heard[k]!.observedThen.has(version);
      assert.equal(heard[k]!.ownWrite, expected, `event ${k + 1} (${version}, ${mine ? 'observed' : "another's"})`);
    });
    assert.ok(
      heard.some((h) => h.ownWrite),
      'at least one answer came before its event',
    );
    // A read through find() is not a write: the object's events are nobody's own.
    await create('read', 'x');
    const found = await informer.find('read', (name) => core.readNamespacedConfigMap({ name, namespace }));
    assert.equal(found?.data?.value, 'x');
    const ofRead: boolean[] = [];
    informer.on((_type, o, ownWrite) => {
      if (o.metadata?.name === 'read') ofRead.push(ownWrite);
    });
    await update('read', 'y');
    await eventually(() => assert.ok(informer.get('read')?.data?.value === 'y'));
    assert.ok(ofRead.length > 0 && ofRead.every((own) => !own), 'no event of an object only read is its own');
  });

  it('tells its listeners the version a change replaced: watched, relisted, and none when the cache held a newer one', async () => {
    await create('a', '1');
    await create('b', '1');
    const { informer } = configMaps();
    const changes: string[] = [];
    informer.on((type, o, _own, previous) =>
      changes.push(`${type} ${o.metadata!.name} ${previous?.data?.value ?? '-'}>${o.data?.value}`),
    );
    informer.start();
    await informer.waitForSync();
    await update('a', '2');
    await eventually(() => assert.ok(changes.includes('MODIFIED a 1>2')));
    // Relisted after a dropped connection: the change against what the cache held.
    await informer.stop();
    await update('b', '2');
    informer.start();
    informer.dropConnection();
    await eventually(() => assert.ok(changes.includes('MODIFIED b 1>2'), changes.join(', ')));
    // A write's answer observed before the event of the change ahead of it: that event finds the
    // cache newer and tells no previous version (what came between is not known). Each event may
    // also come before the answer (a loaded machine): then it tells the version it replaced.
    await update('a', '3');
    informer.observe(await update('a', '4'));
    await eventually(() => assert.ok(changes.filter((c) => c.startsWith('MODIFIED a')).length >= 3));
    const ofA = changes.filter((c) => c.startsWith('MODIFIED a')).join(', ');
    assert.ok(
      [
        'MODIFIED a 1>2, MODIFIED a 2>3, MODIFIED a 3>4',
        'MODIFIED a 1>2, MODIFIED a 2>3, MODIFIED a 4>4',
        'MODIFIED a 1>2, MODIFIED a ->4, MODIFIED a 4>4',
      ].includes(ofA),
      ofA,
    );
  });

  it('keeps what its transform returns, for listed, watched and observed objects alike', async () => {
    await create('a', '1');
    const { informer, events } = configMaps(60_000, (c) => ({ ...c, data: { kept: 'only this' } }));
    informer.start();
    await informer.waitForSync();
    await create('b', '2');
    await eventually(() => assert.ok(informer.get('b'), 'b not in the cache yet'));
    informer.observe(await update('a', '3'));
    for (const name of ['a', 'b']) assert.deepEqual(informer.get(name)?.data, { kept: 'only this' });
    assert.ok(
      events.every(([, , value]) => value === undefined),
      'listeners get the transformed objects',
    );
  });

  it('keeps its indexes as objects come, change and go, through observe(), a list after a dropped connection, and a cached object changed in place', async () => {
    await create('a', '1');
    await create('b', '1');
    const { informer } = configMaps(60_000, undefined, { value: (c) => (c.data?.value ? [c.data.value] : []) });
    const under = (key: string) =>
      informer
        .byIndex('value', key)
        .map((c) => c.metadata!.name)
        .sort();
    informer.start();
    await informer.waitForSync();
    assert.deepEqual(under('1'), ['a', 'b'], 'listed');
    // A reader that changes a cached object in place (it should not) does not strand it under its old key.
    informer.get('b')!.data!.value = 'changed in place';
    await create('c', '2');
    await update('a', '2');
    await eventually(() => assert.deepEqual(under('2'), ['a', 'c'], 'watched'));
    assert.deepEqual(under('1'), ['b'], 'a changed object leaves its old key');
    informer.observe(await update('c', '3'));
    assert.deepEqual([under('2'), under('3')], [['a'], ['c']], 'observed');
    await core.deleteNamespacedConfigMap({ name: 'c', namespace });
    await eventually(() => assert.deepEqual(under('3'), [], 'deleted'));
    await informer.stop();
    await core.deleteNamespacedConfigMap({ name: 'b', namespace });
    await update('a', '4');
    informer.start();
    informer.dropConnection();
    await eventually(() => assert.deepEqual([under('1'), under('2'), under('4')], [[], [], ['a']], 'listed again'));
    assert.throws(() => informer.byIndex('name', 'a'), /no index name/);
  });
});

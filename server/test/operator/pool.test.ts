import type * as k8s from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import {
  planPool,
  poolStatus,
  reservationCandidates,
  type CandidateState,
  type PoolInstanceState,
} from '../../src/operator/pool/plan.js';

const free = (id: number, generation = 1, ready = true): PoolInstanceState => ({
  id,
  generation,
  reserved: false,
  released: false,
  ready,
});
const reserved = (id: number, generation = 1): PoolInstanceState => ({
  id,
  generation,
  reserved: true,
  released: false,
  ready: true,
});
const released = (id: number, generation = 1): PoolInstanceState => ({
  id,
  generation,
  reserved: false,
  released: true,
  ready: true,
});

describe('operator pool arithmetic (the pool table)', () => {
  it('creates the missing instances 1..minInstances', () => {
    assert.deepEqual(planPool({ minInstances: 3, generation: 1, instances: [free(2)] }), {
      create: [1, 3],
      delete: [],
      recreate: [],
      returnToPool: [],
    });
  });

  it('an ended reservation above minInstances is deleted', () => {
    assert.deepEqual(planPool({ minInstances: 1, generation: 1, instances: [free(1), released(2)] }).delete, [2]);
  });

  it('an ended reservation of an older generation is recreated', () => {
    const plan = planPool({ minInstances: 2, generation: 2, instances: [free(1, 2), released(2, 1)] });
    assert.deepEqual(plan.recreate, [2]);
    assert.deepEqual(plan.returnToPool, []);
  });

  it('otherwise an ended reservation returns to the pool', () => {
    assert.deepEqual(planPool({ minInstances: 2, generation: 1, instances: [free(1), released(2)] }).returnToPool, [2]);
  });

  it('reserved instances are never touched, even above minInstances or outdated', () => {
    assert.deepEqual(planPool({ minInstances: 0, generation: 5, instances: [reserved(1, 1), reserved(4, 5)] }), {
      create: [],
      delete: [],
      recreate: [],
      returnToPool: [],
    });
  });

  it('minInstances lowered deletes free excess instances; 0 empties the pool', () => {
    assert.deepEqual(
      planPool({ minInstances: 1, generation: 1, instances: [free(1), free(2), free(3)] }).delete,
      [2, 3],
    );
    assert.deepEqual(planPool({ minInstances: 0, generation: 1, instances: [free(1), free(2)] }).delete, [1, 2]);
  });

  it('free outdated instances are recreated', () => {
    assert.deepEqual(planPool({ minInstances: 2, generation: 3, instances: [free(1, 2), free(2, 3)] }).recreate, [1]);
  });

  it('counts the ready instances, free or reserved, but not the released ones on their way back', () => {
    assert.deepEqual(poolStatus(4, [free(1), free(2, 1, false), reserved(3), released(4)], false).pool, {
      desired: 4,
      ready: 2,
    });
  });

  it('is Ready when every free instance is ready and nothing changes: a reservation of a ready one changes nothing', () => {
    const before = poolStatus(2, [free(1), free(2)], false);
    assert.equal(before.ready.status, 'True');
    assert.deepEqual(poolStatus(2, [free(1), reserved(2)], false), before);
    assert.deepEqual(poolStatus(2, [reserved(1), reserved(2)], false), before);
    // A reserved instance still starting is its session's business, not the pool's.
    assert.equal(poolStatus(2, [free(1), { ...reserved(2), ready: false }], false).ready.status, 'True');
  });

  it('is not Ready while a free instance starts, or while the pass creates, deletes or returns one', () => {
    const starting = poolStatus(3, [free(1), free(2, 1, false), free(3, 1, false)], false).ready;
    assert.deepEqual(starting, {
      status: 'False',
      reason: 'InstancesStarting',
      message: 'free instances starting: 2',
    });
    assert.equal(poolStatus(1, [free(1)], true).ready.reason, 'PoolChanging');
  });

  type Candidate = { id: number; state: CandidateState };
  const state = (c: Candidate) => c.state;
  const ids = (candidates: Iterable<Candidate>) => [...candidates].map((c) => c.id);
  const ready = (id: number): Candidate => ({ id, state: 'ready' });

  it('tries the ready instances first, then those starting, and never one of no use', () => {
    const free: Candidate[] = [
      { id: 3, state: 'starting' },
      { id: 1, state: undefined },
      ready(2),
      { id: 5, state: 'starting' },
      ready(4),
    ];
    for (const name of ['a', 'b', 'c', 'session-1', 'session-2']) {
      const order = ids(reservationCandidates(free, name, state));
      assert.deepEqual(order.slice(0, 2).sort(), [2, 4], name);
      assert.deepEqual(order.slice(2).sort(), [3, 5], name);
    }
    assert.deepEqual(ids(reservationCandidates([{ id: 1, state: undefined }], 'a', state)), []);
    assert.deepEqual(ids(reservationCandidates([], 'any', state)), []);
  });

  it('rotates the candidates by the session name, as the pool always did, and spreads sessions over them', () => {
    // The rotation the pool used before it shared model/names.ts' stringHash32: h * 31 + c, unsigned.
    const earlierHash = (value: string) => {
      let h = 0;
      for (let i = 0; i < value.length; i++) h = (h * 31 + value.charCodeAt(i)) >>> 0;
      return h;
    };
    const free = [1, 2, 3, 4, 5].map(ready);
    const firsts = new Set<number>();
    for (let n = 0; n < 200; n++) {
      const name = `ws-python-latest-user${n}-session-with-a-longer-name-${n * 7919}`;
      const offset = earlierHash(name) % free.length;
      const order = ids(reservationCandidates(free, name, state));
      assert.deepEqual(
        order,
        [...free.slice(offset), ...free.slice(0, offset)].map((i) => i.id),
      );
      firsts.add(order[0]!);
    }
    assert.equal(firsts.size, free.length, 'every instance is the first choice of some session');
  });

  it('tries last the instances another reservation of this process is writing, keeping the rotation', () => {
    const free = [1, 2, 3, 4, 5].map(ready);
    for (let n = 0; n < 50; n++) {
      const name = `session-${n}`;
      const rotated = ids(reservationCandidates(free, name, state));
      const busy = new Set([rotated[0], rotated[2]]);
      assert.deepEqual(ids(reservationCandidates(free, name, state, (i) => busy.has(i.id))), [
        rotated[1],
        rotated[3],
        rotated[4],
        rotated[0],
        rotated[2],
      ]);
    }
    assert.deepEqual(
      ids(reservationCandidates(free, 'any', state, () => true)),
      ids(reservationCandidates(free, 'any', state)),
      'all busy: the rotation as it is',
    );
  });

  it('looks no further than the candidate taken', () => {
    const free = Array.from({ length: 1000 }, (_, i) => ready(i + 1));
    let looked = 0;
    const counted = (c: Candidate) => (looked++, c.state);
    const first = reservationCandidates(free, 'session-1', counted).next();
    assert.equal(first.done, false);
    assert.equal(looked, 1);
  });

  it('gives each instance once, even one another reservation of this process starts claiming after it was tried', () => {
    const free = [1, 2, 3].map(ready);
    const busy = new Set<number>();
    const order: number[] = [];
    for (const candidate of reservationCandidates(free, 'session-1', state, (c) => busy.has(c.id))) {
      order.push(candidate.id);
      busy.add(candidate.id);
    }
    assert.deepEqual([...order].sort(), [1, 2, 3]);
  });
});

describe('pool instances built by an older operator', () => {
  const deployment = (annotations: Record<string, string>) => ({
    metadata: {
      name: 'python-latest-1',
      labels: { 'ide-cloud.io/instance-id': '1' },
      annotations: { 'ide-cloud.io/app-definition-generation': '3', ...annotations },
    },
  });

  it('read as outdated (recreated when free, never reserved) without the current instance template', async () => {
    const { instanceOf } = await import('../../src/operator/pool/instances.js');
    const { INSTANCE_TEMPLATE, INSTANCE_TEMPLATE_ANNOTATION } = await import('../../src/operator/manifests.js');
    assert.equal(
      instanceOf(deployment({ [INSTANCE_TEMPLATE_ANNOTATION]: INSTANCE_TEMPLATE }), undefined).generation,
      3,
    );
    const old = instanceOf(deployment({}), undefined);
    assert.equal(old.generation, -1);
    const plan = planPool({ minInstances: 1, generation: 3, instances: [{ ...free(1), generation: old.generation }] });
    assert.deepEqual(plan.recreate, [1]);
  });
});

describe('the reservation of a warm instance', () => {
  const deployment = (labels: Record<string, string> = {}, owners: k8s.V1OwnerReference[] = []) => ({
    metadata: {
      name: 'python-latest-1',
      uid: 'deployment-uid',
      labels: { 'ide-cloud.io/instance-id': '1', ...labels },
      ownerReferences: owners,
    },
  });
  const lease = (labels: Record<string, string>, holder?: string, owner = 'deployment-uid'): k8s.V1Lease => ({
    metadata: {
      name: 'python-latest-1',
      labels,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'python-latest-1', uid: owner }],
    },
    spec: holder ? { holderIdentity: holder } : {},
  });

  it('is read from its Lease: the session by name and uid, the new workspace', async () => {
    const { instanceOf } = await import('../../src/operator/pool/instances.js');
    const i = instanceOf(
      deployment(),
      lease({ 'ide-cloud.io/session': 's-1', 'ide-cloud.io/workspace': 'w-1' }, 'session-uid'),
    );
    assert.deepEqual(i.reservedBy, { name: 's-1', uid: 'session-uid' });
    assert.equal(i.workspace, 'w-1');
    const free = instanceOf(deployment(), lease({}));
    assert.equal(free.reservedBy, undefined);
    assert.equal(free.workspace, undefined);
  });

  it("without a Lease, an older operator's reservation on the Deployment holds", async () => {
    const { instanceOf } = await import('../../src/operator/pool/instances.js');
    const owner = { apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name: 's-1', uid: 'session-uid' };
    const i = instanceOf(deployment({ 'ide-cloud.io/session': 's-1' }, [owner]), undefined);
    assert.deepEqual(i.reservedBy, { name: 's-1', uid: 'session-uid' });
    assert.equal(i.reservation, undefined);
  });

  it("an older operator's reservation on the Deployment holds beside a free Lease; no reservation at all is lost", async () => {
    const { instanceOf } = await import('../../src/operator/pool/instances.js');
    const owner = { apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name: 's-1', uid: 'session-uid' };
    const held = instanceOf(deployment({ 'ide-cloud.io/session': 's-1' }, [owner]), lease({}));
    assert.deepEqual(held.reservedBy, { name: 's-1', uid: 'session-uid' });
    assert.equal(held.lost, undefined);
    assert.equal(instanceOf(deployment(), lease({})).lost, undefined);
    assert.equal(instanceOf(deployment(), undefined).lost, true);
  });

  it("a Lease left by an earlier Deployment of the name is not the instance's", async () => {
    const { reservationOf } = await import('../../src/operator/pool/instances.js');
    const current = lease({}, undefined);
    const stale = lease({ 'ide-cloud.io/session': 's-0' }, 'old-session', 'earlier-deployment-uid');
    assert.equal(reservationOf({ get: () => current }, deployment()), current);
    assert.equal(reservationOf({ get: () => stale }, deployment()), undefined);
  });
});

// A warm instance's reservation (a Lease of its name), as the pool makes and deletes it: deleted first,
// on the version the pass read, so an instance a launch claimed meanwhile is kept, Deployment and all;
// made from an older operator's reservation on the Deployment; one left by an earlier Deployment of
// the name replaced.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { AppDefinition } from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { instanceReservation, poolInstanceDeployment } from '../../src/operator/manifests.js';
import { instanceOf, isFreeReadyInstance, PoolInstances, type PoolDeps } from '../../src/operator/pool/instances.js';
import { labelIndexers, reservationIndexers } from '../../src/operator/runtime/cache.js';
import type { Session } from '../../src/model/session.js';
import { indexedCache } from './cache-fakes.js';
import { RetryLater } from '../../src/operator/runtime/outcome.js';

const config = parseOperatorConfig({ namespace: 'ns' });
const appDefinition = {
  metadata: { name: 'java', uid: 'app-uid', generation: 2 },
  spec: { name: 'java', image: 'java:1', port: 3000, ingressname: 'sessions', minInstances: 1 },
} as unknown as AppDefinition;

function instance() {
  const d = poolInstanceDeployment(appDefinition, 2, 'ns', config, 'java-pool-2-work');
  d.metadata!.uid = 'deployment-uid';
  d.metadata!.resourceVersion = '40';
  const lease = instanceReservation(appDefinition, 2, 'ns', d.metadata!);
  lease.metadata!.resourceVersion = '41';
  return instanceOf(d, lease);
}

function pool(leaseDelete: () => Promise<unknown>, calls: string[]) {
  return new PoolInstances({
    namespace: 'ns',
    config,
    leases: {
      deleteNamespacedLease: async (p: { body: k8s.V1DeleteOptions }) => {
        calls.push(`delete lease at ${p.body.preconditions?.resourceVersion}`);
        return leaseDelete();
      },
    },
    apps: {
      deleteNamespacedDeployment: async (p: { body: k8s.V1DeleteOptions }) =>
        void calls.push(`delete deployment at ${p.body.preconditions?.resourceVersion}`),
    },
    core: {
      deleteNamespacedSecret: async () => void calls.push('delete secret'),
      deleteNamespacedService: async () => void calls.push('delete service'),
    },
    secrets: { forget: () => undefined },
  } as unknown as PoolDeps);
}

describe('a warm instance deleted by the pool', () => {
  it('loses its reservation first, then its Deployment, each on the version read', async () => {
    const calls: string[] = [];
    await pool(async () => ({}), calls).delete(appDefinition, instance(), false);
    assert.deepEqual(calls.slice(0, 2), ['delete lease at 41', 'delete deployment at 40']);
  });

  it('is kept, Deployment and all, when a launch claimed it since the pass read it (409)', async () => {
    const calls: string[] = [];
    const conflict = Object.assign(new Error('conflict'), { code: 409 });
    await assert.rejects(
      pool(() => Promise.reject(conflict), calls).delete(appDefinition, instance(), false),
      RetryLater,
    );
    assert.deepEqual(calls, ['delete lease at 41']);
  });
});

describe("a warm instance's reservation made by the pool", () => {
  function withReservations(stale: k8s.V1Lease | undefined, written: k8s.V1Lease[]) {
    return new PoolInstances({
      namespace: 'ns',
      config,
      reservations: { get: () => stale, observe: () => undefined },
      leases: {
        createNamespacedLease: async ({ body }: { body: k8s.V1Lease }) => (written.push(body), body),
        replaceNamespacedLease: async ({ body }: { body: k8s.V1Lease }) => (written.push(body), body),
      },
    } as unknown as PoolDeps);
  }
  const deployment = (labels: Record<string, string> = {}, owners: k8s.V1OwnerReference[] = []) => {
    const d = poolInstanceDeployment(appDefinition, 2, 'ns', config, 'java-pool-2-work');
    d.metadata!.uid = 'deployment-uid';
    d.metadata!.labels = { ...d.metadata!.labels, ...labels };
    d.metadata!.ownerReferences = [...(d.metadata!.ownerReferences ?? []), ...owners];
    return d;
  };

  it("takes over an older operator's reservation on the Deployment: the session by name and uid, its new workspace", async () => {
    const written: k8s.V1Lease[] = [];
    const owner = { apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name: 's-1', uid: 'session-uid' };
    const older = instanceOf(
      deployment({ 'ide-cloud.io/session': 's-1', 'ide-cloud.io/workspace': 'w-1' }, [owner]),
      undefined,
    );
    await withReservations(undefined, written).ensureReservation(appDefinition, older);
    assert.equal(written.length, 1);
    const lease = written[0]!;
    assert.equal(lease.metadata?.labels?.['ide-cloud.io/session'], 's-1');
    assert.equal(lease.metadata?.labels?.['ide-cloud.io/workspace'], 'w-1');
    assert.equal(lease.spec?.holderIdentity, 'session-uid');
    assert.deepEqual(
      lease.metadata?.ownerReferences?.map((o) => o.uid),
      ['deployment-uid'],
      'owned by its Deployment',
    );
  });

  it("makes a free Lease hold the session an older operator's last claim on the Deployment names, on the version read", async () => {
    const written: k8s.V1Lease[] = [];
    const owner = { apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name: 's-1', uid: 'session-uid' };
    const d = deployment({ 'ide-cloud.io/session': 's-1' }, [owner]);
    const free = instanceReservation(appDefinition, 2, 'ns', d.metadata!);
    free.metadata!.resourceVersion = '9';
    const older = instanceOf(d, free);
    assert.equal(older.reservedBy?.name, 's-1', 'the older claim holds beside the free Lease');
    // The cache has moved on (a claim landed before the older claim's event): the write goes on the
    // version the decision read, so the API server refuses it rather than overwrite that claim.
    const claimed = structuredClone(free);
    claimed.metadata!.resourceVersion = '10';
    claimed.metadata!.labels!['ide-cloud.io/session'] = 's-2';
    await withReservations(claimed, written).ensureReservation(appDefinition, older);
    assert.equal(written.length, 1);
    assert.equal(written[0]!.metadata?.resourceVersion, '9');
    assert.equal(written[0]!.metadata?.labels?.['ide-cloud.io/session'], 's-1');
    assert.equal(written[0]!.spec?.holderIdentity, 'session-uid');
    // Held already: nothing to write.
    await withReservations(written[0], written).ensureReservation(appDefinition, instanceOf(d, written[0]));
    assert.equal(written.length, 1);
  });

  it('replaces one left by an earlier Deployment of the name, on the version read', async () => {
    const written: k8s.V1Lease[] = [];
    const stale = instanceReservation(appDefinition, 2, 'ns', { name: 'java-pool-2', uid: 'earlier-uid' });
    stale.metadata!.labels!['ide-cloud.io/session'] = 's-0';
    stale.metadata!.resourceVersion = '7';
    const owner = { apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name: 's-1', uid: 'session-uid' };
    const older = instanceOf(deployment({ 'ide-cloud.io/session': 's-1' }, [owner]), undefined);
    await withReservations(stale, written).ensureReservation(appDefinition, older);
    const lease = written[0]!;
    assert.equal(lease.metadata?.resourceVersion, '7', 'on the version read');
    assert.equal(lease.metadata?.labels?.['ide-cloud.io/session'], 's-1');
    assert.deepEqual(
      lease.metadata?.ownerReferences?.map((o) => o.uid),
      ['deployment-uid'],
    );
  });

  it('makes no free one for an instance that lost its reservation: it is reset first, as a returned one', async () => {
    const written: k8s.V1Lease[] = [];
    const lost = instanceOf(deployment(), undefined);
    assert.equal(lost.lost, true);
    assert.equal(lost.reservedBy, undefined);
    await withReservations(undefined, written).ensureReservation(appDefinition, lost);
    assert.deepEqual(written, []);
    const { planPool } = await import('../../src/operator/pool/plan.js');
    const plan = planPool({
      minInstances: 2,
      generation: 2,
      instances: [{ id: 2, generation: 2, reserved: false, released: true, ready: true }],
    });
    assert.deepEqual(plan.returnToPool, [2]);
  });
});

describe('the warm instances a session or a new workspace holds', () => {
  const owner = (name: string, uid: string) => ({ apiVersion: 'ide.cloud/v1beta10', kind: 'Session', name, uid });
  /** Instance `id`: its Deployment (an older operator's claim in `older`), and its Lease (`lease` labels, holder). */
  function world(
    rows: { id: number; older?: [string, string, string?]; lease?: [string, string, string?] | 'free' }[],
  ) {
    const deployments: k8s.V1Deployment[] = [];
    const leases: k8s.V1Lease[] = [];
    for (const { id, older, lease } of rows) {
      const d = poolInstanceDeployment(appDefinition, id, 'ns', config, `java-pool-${id}-work`);
      d.metadata!.uid = `deployment-${id}`;
      d.status = { readyReplicas: 1, updatedReplicas: 1, replicas: 1, observedGeneration: 0 };
      if (older) {
        const [session, uid, workspace] = older;
        d.metadata!.labels = {
          ...d.metadata!.labels,
          'ide-cloud.io/session': session,
          ...(workspace ? { 'ide-cloud.io/workspace': workspace } : {}),
        };
        d.metadata!.ownerReferences = [...(d.metadata!.ownerReferences ?? []), owner(session, uid)];
      }
      deployments.push(d);
      if (!lease) continue;
      const l = instanceReservation(appDefinition, id, 'ns', d.metadata!);
      if (lease !== 'free') {
        const [session, uid, workspace] = lease;
        l.metadata!.labels = {
          ...l.metadata!.labels,
          'ide-cloud.io/session': session,
          ...(workspace ? { 'ide-cloud.io/workspace': workspace } : {}),
        };
        l.spec = { holderIdentity: uid };
      }
      leases.push(l);
    }
    const pool = new PoolInstances({
      namespace: 'ns',
      config,
      deployments: indexedCache(() => deployments, labelIndexers),
      reservations: indexedCache(() => leases, reservationIndexers),
    } as unknown as PoolDeps);
    return { pool, deployments, leases };
  }
  const session = (name: string, uid: string) => ({ metadata: { name, uid } }) as Session;

  it('finds an instance an older operator claimed on its Deployment, beside a free Lease, once, as the Deployment says', () => {
    const { pool, deployments, leases } = world([
      { id: 1, older: ['s-1', 'uid-1', 'w-1'], lease: 'free' },
      { id: 2, lease: 'free' },
    ]);
    assert.deepEqual(
      [pool.findReservation('java', session('s-1', 'uid-1'))].map((i) => i?.name),
      ['java-pool-1'],
    );
    assert.deepEqual(
      pool.reservedFor('w-1').map((i) => [i.name, i.reservedBy?.name]),
      [['java-pool-1', 's-1']],
    );
    // Nor is it free to a reader of the reservations.
    assert.equal(isFreeReadyInstance(deployments[0]!, leases[0], 'java'), false);
    assert.equal(isFreeReadyInstance(deployments[1]!, leases[1], 'java'), true);
  });

  it('gives the session and workspace of an older claim on the Deployment, never those of a Lease beside it', () => {
    const { pool } = world([
      { id: 1, older: ['s-b', 'uid-b', 'w-b'], lease: ['s-a', 'uid-a', 'w-a'] },
      { id: 2, lease: ['s-c', 'uid-c', 'w-c'] },
    ]);
    assert.equal(pool.findReservation('java', session('s-a', 'uid-a')), undefined);
    assert.deepEqual(pool.reservedFor('w-a'), []);
    const b = pool.findReservation('java', session('s-b', 'uid-b'));
    assert.deepEqual([b?.name, b?.reservedBy, b?.workspace], ['java-pool-1', { name: 's-b', uid: 'uid-b' }, 'w-b']);
    assert.deepEqual(
      pool.reservedFor('w-b').map((i) => i.name),
      ['java-pool-1'],
    );
    // An instance a Lease alone holds is found by it.
    assert.equal(pool.findReservation('java', session('s-c', 'uid-c'))?.name, 'java-pool-2');
    assert.deepEqual(
      pool.reservedFor('w-c').map((i) => i.name),
      ['java-pool-2'],
    );
  });
});

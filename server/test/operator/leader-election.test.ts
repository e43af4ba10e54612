// The Lease logic of the leader election, against an in-memory Lease store that answers as the API
// server does (404 when absent, 409 on a stale resourceVersion). The election between real operator
// processes is tested in test/integration/operator-leader.test.ts.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { LeaderElector } from '../../src/operator/runtime/leader-election.js';

interface StoredLease {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: { holderIdentity?: string | null; renewTime?: string; leaseDurationSeconds?: number };
}

function apiError(code: number): k8s.ApiException<unknown> {
  return new k8s.ApiException(code, 'refused', JSON.stringify({ code }), {});
}

class FakeLeases {
  lease?: StoredLease;
  version = 0;
  /** While set, every call waits on it (an API server that does not answer). */
  hang?: Promise<void>;

  private async pause(): Promise<void> {
    if (this.hang) await this.hang;
  }

  getNamespacedCustomObject = async () => {
    await this.pause();
    if (!this.lease) throw apiError(404);
    return structuredClone(this.lease);
  };

  createNamespacedCustomObject = async ({ body }: { body: StoredLease }) => {
    await this.pause();
    if (this.lease) throw apiError(409);
    this.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } };
    return this.lease;
  };

  replaceNamespacedCustomObject = async ({ body }: { body: StoredLease }) => {
    await this.pause();
    if (!this.lease) throw apiError(404);
    if (body.metadata.resourceVersion !== this.lease.metadata.resourceVersion) throw apiError(409);
    this.lease = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } };
    return this.lease;
  };
}

function elector(api: FakeLeases, identity: string, leaseDurationMs = 60_000) {
  const events: string[] = [];
  const e = new LeaderElector(
    api as unknown as k8s.CustomObjectsApi,
    {
      namespace: 'ide',
      name: 'ide-cloud-operator',
      identity,
      leaseDurationMs,
      renewIntervalMs: 50,
      onStartedLeading: () => void events.push('started'),
      onStoppedLeading: () => void events.push('stopped'),
    },
    pino({ level: 'silent' }),
  );
  return { e, events };
}

describe('leader election (Lease logic)', () => {
  it('takes an absent Lease on the first attempt: start resolves leading, with no wait', async () => {
    const api = new FakeLeases();
    const { e, events } = elector(api, 'a');
    await e.start();
    assert.ok(e.isLeader);
    assert.deepEqual(events, ['started']);
    assert.equal(api.lease?.spec?.holderIdentity, 'a');
    await e.stop();
  });

  it('a second candidate does not lead while the holder renews; a released Lease is taken at once', async () => {
    const api = new FakeLeases();
    const a = elector(api, 'a');
    const b = elector(api, 'b');
    await a.e.start();
    await b.e.start();
    assert.ok(a.e.isLeader);
    assert.ok(!b.e.isLeader);
    await a.e.stop();
    assert.equal(api.lease?.spec?.holderIdentity ?? null, null, 'released');
    const c = elector(api, 'c');
    await c.e.start();
    assert.ok(c.e.isLeader, 'a free Lease is taken on the first attempt');
    await Promise.all([b.e.stop(), c.e.stop()]);
  });

  it('a leader whose API calls hang stops leading by its renew deadline, without waiting for them', async () => {
    const api = new FakeLeases();
    const { e, events } = elector(api, 'a', 600);
    await e.start();
    assert.ok(e.isLeader);
    let answer!: () => void;
    api.hang = new Promise((resolve) => (answer = resolve));
    await new Promise<void>((resolve) => {
      const check = () => (e.isLeader ? setTimeout(check, 10) : resolve());
      check();
    });
    // Stepped down while its renewal still hangs (the renew deadline is two thirds of the lease).
    assert.deepEqual(events, ['started', 'stopped']);
    answer();
    await e.stop({ releaseLease: false });
  });
});

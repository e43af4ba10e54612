import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound, describeFailure } from '../../kube/client.js';
import type { Logger } from './logger.js';

const group = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

interface Lease {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** MicroTime as the API server writes it: RFC 3339 with microseconds. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * Leader election with a coordination.k8s.io Lease, as client-go does it: the holder renews the
 * lease every renew interval; a candidate takes it over when the renew time is older than the lease
 * duration; every write carries the resourceVersion read, so two candidates never both win. Leases
 * are sent as plain objects (CustomObjectsApi) to keep MicroTime exact.
 */
export class LeaderElector {
  private timer?: NodeJS.Timeout;
  private leading = false;
  private lastRenew = 0;
  private stopped = false;
  private tick?: Promise<void>;

  constructor(
    private readonly api: Pick<
      k8s.CustomObjectsApi,
      'getNamespacedCustomObject' | 'createNamespacedCustomObject' | 'patchNamespacedCustomObject'
    >,
    private readonly options: {
      namespace: string;
      name: string;
      identity: string;
      leaseDurationMs: number;
      renewIntervalMs: number;
      onStartedLeading: () => void | Promise<void>;
      onStoppedLeading: () => void | Promise<void>;
    },
    private readonly log: Logger,
  ) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    const loop = () => {
      if (this.stopped) return;
      this.tick = this.attempt().finally(() => {
        if (!this.stopped) this.timer = setTimeout(loop, this.options.renewIntervalMs);
      });
    };
    loop();
  }

  /** Stops campaigning; a leader releases the lease so a standby takes over at once. */
  async stop(options: { releaseLease?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.tick;
    if (this.leading) {
      this.leading = false;
      await this.options.onStoppedLeading();
      if (options.releaseLease ?? true) await this.release().catch(() => undefined);
    }
  }

  private base() {
    return { ...group, namespace: this.options.namespace };
  }

  private async attempt(): Promise<void> {
    try {
      const acquired = await this.tryAcquireOrRenew();
      if (acquired) this.lastRenew = Date.now();
      if (acquired && !this.leading) {
        this.leading = true;
        this.log.info('became leader');
        await this.options.onStartedLeading();
      }
      if (!acquired && this.leading) await this.lose('lease held by another candidate');
    } catch (error) {
      this.log.warn({ err: describeFailure(error) }, 'leader election attempt failed');
      if (this.leading && Date.now() - this.lastRenew > this.options.leaseDurationMs)
        await this.lose('could not renew');
    }
  }

  private async lose(why: string): Promise<void> {
    this.leading = false;
    this.log.warn({ why }, 'stopped leading');
    await this.options.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const { name, identity } = this.options;
    const durationSeconds = Math.max(1, Math.ceil(this.options.leaseDurationMs / 1000));
    let lease: Lease | undefined;
    try {
      lease = (await this.api.getNamespacedCustomObject({ ...this.base(), name })) as Lease;
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    if (!lease) {
      try {
        await this.api.createNamespacedCustomObject({
          ...this.base(),
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace: this.options.namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: 0,
            },
          },
        });
        return true;
      } catch (error) {
        if (isConflict(error)) return false;
        throw error;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const renewed = spec.renewTime ? new Date(spec.renewTime).getTime() : 0;
    const expired = !holder || now.getTime() - renewed > (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== identity && !expired) return false;
    const next = {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
      acquireTime: holder === identity ? spec.acquireTime : microTime(now),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
    };
    try {
      await this.api.patchNamespacedCustomObject(
        { ...this.base(), name, body: { metadata: { resourceVersion: lease.metadata.resourceVersion }, spec: next } },
        mergePatch,
      );
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  private async release(): Promise<void> {
    const lease = (await this.api.getNamespacedCustomObject({ ...this.base(), name: this.options.name })) as Lease;
    if (lease.spec?.holderIdentity !== this.options.identity) return;
    await this.api.patchNamespacedCustomObject(
      {
        ...this.base(),
        name: this.options.name,
        body: { metadata: { resourceVersion: lease.metadata.resourceVersion }, spec: { holderIdentity: null } },
      },
      mergePatch,
    );
  }
}

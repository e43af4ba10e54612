import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound, describeFailure } from '../../kube/client.js';
import type { Logger } from './logger.js';

const group = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
/** The field manager of the leader's Lease writes: they tell themselves from a warm instance's reservation (a Lease too). */
export const LEADER_ELECTION_MANAGER = 'ide-cloud-leader-election';

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

/** Share of the lease duration within which a leader must renew, else it stops leading (client-go: 10 s of 15 s). */
const RENEW_DEADLINE_SHARE = 2 / 3;

/**
 * Leader election with a coordination.k8s.io Lease, as client-go does it: the holder renews the
 * lease every renew interval; a candidate takes it over when the renew time is older than the lease
 * duration; every write is an update carrying the resourceVersion read, so two candidates never both
 * win. A free Lease (none yet, or released) is taken on the first attempt, at start. A leader that
 * could not renew within the renew deadline (two thirds of the lease duration, counted from the
 * renewal it last wrote) stops leading, even while an API call hangs, before any candidate may take
 * the Lease over. Leases are sent as plain objects (CustomObjectsApi) to keep MicroTime exact.
 */
export class LeaderElector {
  private timer?: NodeJS.Timeout;
  private deadline?: NodeJS.Timeout;
  private leading = false;
  private stopped = false;
  private tick?: Promise<void>;

  constructor(
    private readonly api: Pick<
      k8s.CustomObjectsApi,
      'getNamespacedCustomObject' | 'createNamespacedCustomObject' | 'replaceNamespacedCustomObject'
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

  /** Starts campaigning; resolves after the first attempt (a free Lease is taken then, no waiting). */
  start(): Promise<void> {
    const loop = () => {
      if (this.stopped) return Promise.resolve();
      this.tick = this.attempt().finally(() => {
        if (!this.stopped) this.timer = setTimeout(loop, this.options.renewIntervalMs);
      });
      return this.tick;
    };
    return loop();
  }

  /** Stops campaigning; a leader releases the lease so a standby takes over at once. */
  async stop(options: { releaseLease?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.tick;
    clearTimeout(this.deadline);
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
    // The renewal written is `now`: a candidate counts the lease duration from it, so the deadline does too.
    const now = new Date();
    try {
      const acquired = await this.tryAcquireOrRenew(now);
      if (acquired) this.armDeadline(now);
      if (acquired && !this.leading) {
        this.leading = true;
        this.log.info({ lease: this.options.name }, 'became leader');
        await this.options.onStartedLeading();
      }
      if (!acquired && this.leading) await this.lose('lease held by another candidate');
    } catch (error) {
      this.log.warn({ err: describeFailure(error) }, 'leader election attempt failed');
    }
  }

  /** A leader that has not renewed by the deadline stops leading, whatever its API calls are doing. */
  private armDeadline(renewed: Date): void {
    clearTimeout(this.deadline);
    const renewDeadlineMs = Math.max(
      this.options.renewIntervalMs,
      Math.floor(this.options.leaseDurationMs * RENEW_DEADLINE_SHARE),
    );
    const left = renewed.getTime() + renewDeadlineMs - Date.now();
    this.deadline = setTimeout(
      () => {
        if (this.leading && !this.stopped) void this.lose('could not renew before the renew deadline');
      },
      Math.max(0, left),
    );
  }

  private async lose(why: string): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    clearTimeout(this.deadline);
    this.log.warn({ why }, 'stopped leading');
    await this.options.onStoppedLeading();
  }

  private async tryAcquireOrRenew(now: Date): Promise<boolean> {
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
          fieldManager: LEADER_ELECTION_MANAGER,
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
      await this.api.replaceNamespacedCustomObject({
        ...this.base(),
        name,
        fieldManager: LEADER_ELECTION_MANAGER,
        body: { ...lease, spec: next },
      });
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  private async release(): Promise<void> {
    const lease = (await this.api.getNamespacedCustomObject({ ...this.base(), name: this.options.name })) as Lease;
    if (lease.spec?.holderIdentity !== this.options.identity) return;
    await this.api.replaceNamespacedCustomObject({
      ...this.base(),
      name: this.options.name,
      fieldManager: LEADER_ELECTION_MANAGER,
      body: { ...lease, spec: { ...lease.spec, holderIdentity: null } },
    });
  }
}

/**
 * Keeps `standbyClaims` empty claims bound for new workspaces that start lazily (standby/claims.ts).
 * Where the storage class binds a claim only for its first pod (WaitForFirstConsumer), a binder pod
 * that only mounts the claim makes the provisioner do its work ahead of any launch; it goes once the
 * claim is bound. One key for the whole set: claims → surplus deleted (unbound first, then newest) →
 * missing ones created → a binder for each unbound one → binders of claims bound, taken or gone deleted.
 */
import type * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import { LABELS } from '../../model/api-group.js';
import type { OperatorConfig } from '../config.js';
import { claimBinderName, claimBinderPod, COMPONENT, standbyClaimName, workClaim } from '../manifests.js';
import type { ClaimDeps } from '../pool/claims.js';
import type { Logger } from '../runtime/logger.js';
import { standbyClaims } from './claims.js';

/** The key of the standby set's work item (one for all of it). */
export const STANDBY_KEY = 'standby-claims';

export interface StandbyClaimState {
  name: string;
  bound: boolean;
  /** Creation time, ms since the epoch. */
  created: number;
}

export interface StandbyPlan {
  /** How many claims to create. */
  create: number;
  /** Claims to delete: more are kept than desired. */
  deleteClaims: string[];
  /** Kept claims not bound yet whose binder pod is missing. */
  bind: string[];
  /** Binder pods whose claim is bound, taken or gone. */
  deleteBinders: string[];
}

/** The standby set's arithmetic: what to create and delete for `desired` claims. */
export function planStandby(input: {
  desired: number;
  claims: readonly StandbyClaimState[];
  /** Names of the binder pods that exist. */
  binders: readonly string[];
}): StandbyPlan {
  // Bound ones are worth more (kept first), then the oldest (closest to bound).
  const ranked = [...input.claims].sort((a, b) => Number(b.bound) - Number(a.bound) || a.created - b.created);
  const kept = ranked.slice(0, input.desired);
  const unbound = kept.filter((c) => !c.bound).map((c) => c.name);
  const needed = new Set(unbound.map(claimBinderName));
  return {
    create: Math.max(0, input.desired - kept.length),
    deleteClaims: ranked.slice(input.desired).map((c) => c.name),
    bind: unbound.filter((name) => !input.binders.includes(claimBinderName(name))),
    deleteBinders: input.binders.filter((name) => !needed.has(name)),
  };
}

export interface StandbyReconcilerDeps {
  namespace: string;
  config: Pick<
    OperatorConfig,
    | 'standbyClaims'
    | 'claimBinderImage'
    | 'sessionNodeSelector'
    | 'sessionTolerations'
    | 'workspaceStorageSize'
    | 'workspaceStorageClass'
  >;
  claims: ClaimDeps['claims'];
  /** The pods IDE Cloud manages: the binders among them. */
  pods: Pick<Informer<k8s.V1Pod>, 'list'>;
  core: Pick<
    k8s.CoreV1Api,
    | 'createNamespacedPersistentVolumeClaim'
    | 'deleteNamespacedPersistentVolumeClaim'
    | 'createNamespacedPod'
    | 'deleteNamespacedPod'
  >;
  log: Logger;
}

export class StandbyClaimsReconciler {
  constructor(private readonly deps: StandbyReconcilerDeps) {}

  async reconcile(): Promise<void> {
    const { deps } = this;
    const claims = standbyClaims(deps.claims);
    const binders = deps.pods
      .list()
      .filter((p) => p.metadata?.labels?.[LABELS.component] === COMPONENT.claimBinder && !p.metadata.deletionTimestamp)
      .map((p) => p.metadata?.name ?? '');
    const plan = planStandby({
      desired: deps.config.standbyClaims,
      claims: claims.map((c) => ({
        name: c.metadata?.name ?? '',
        bound: c.status?.phase === 'Bound',
        created: new Date(c.metadata?.creationTimestamp ?? 0).getTime(),
      })),
      binders,
    });
    const byName = new Map(claims.map((c) => [c.metadata?.name ?? '', c]));
    const created = await Promise.all(Array.from({ length: plan.create }, () => this.createClaim()));
    await Promise.all([
      ...plan.deleteClaims.map((name) => this.deleteSurplus(byName.get(name)!)),
      ...plan.deleteBinders.map((name) =>
        this.ignoreMissing(deps.core.deleteNamespacedPod({ name, namespace: deps.namespace, gracePeriodSeconds: 0 })),
      ),
      ...[...plan.bind.map((name) => byName.get(name)!), ...created].map((claim) => this.createBinder(claim)),
    ]);
    if (plan.create || plan.deleteClaims.length || plan.bind.length || plan.deleteBinders.length) {
      deps.log.debug({ ...plan, bind: plan.bind.length + created.length }, 'standby claims');
    }
  }

  private async createClaim(): Promise<k8s.V1PersistentVolumeClaim> {
    const { deps } = this;
    const claim = await deps.core.createNamespacedPersistentVolumeClaim({
      namespace: deps.namespace,
      body: workClaim({
        name: standbyClaimName(),
        namespace: deps.namespace,
        labels: { [LABELS.component]: COMPONENT.standbyClaim },
        owners: [],
        config: deps.config,
      }),
    });
    deps.claims.observe(claim);
    return claim;
  }

  private async createBinder(claim: k8s.V1PersistentVolumeClaim): Promise<void> {
    const { deps } = this;
    try {
      await deps.core.createNamespacedPod({
        namespace: deps.namespace,
        body: claimBinderPod({ claim, namespace: deps.namespace, config: deps.config }),
      });
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }

  /** A surplus claim goes only as read: one a workspace took meanwhile (its patch changed it) stays. */
  private async deleteSurplus(claim: k8s.V1PersistentVolumeClaim): Promise<void> {
    const { uid, resourceVersion, name = '' } = claim.metadata ?? {};
    await this.ignoreMissing(
      this.deps.core.deleteNamespacedPersistentVolumeClaim({
        name,
        namespace: this.deps.namespace,
        body: { preconditions: { uid, resourceVersion } },
      }),
    ).catch((error: unknown) => {
      if (!isConflict(error)) throw error;
    });
  }

  private async ignoreMissing(request: Promise<unknown>): Promise<void> {
    await request.catch((error: unknown) => {
      if (!isNotFound(error)) throw error;
    });
  }
}

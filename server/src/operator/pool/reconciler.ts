import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import {
  AppDefinitionCondition,
  AppDefinitionReadyReason,
  effectiveMinInstances,
  type AppDefinition,
  type AppDefinitionStatus,
} from '../../model/app-definition.js';
import { findCondition, setCondition } from '../../model/conditions.js';
import { isActiveSession, type Session } from '../../model/session.js';
import { takesWarmClaim, type Workspace } from '../../model/workspace.js';
import type { OperatorConfig } from '../config.js';
import { sessionRoutesTo } from '../routes/ingress.js';
import type { RouteTable } from '../routes/routes.js';
import type { Logger } from '../runtime/logger.js';
import { Delay, settle, type Reconciled } from '../runtime/outcome.js';
import { writeStatusOnce } from '../runtime/status.js';
import type { PoolInstance, PoolInstances } from './instances.js';
import { planPool, poolStatus, type PoolInstanceState, type PoolPlan } from './plan.js';

/** Whether the session that reserved the instance still holds it: it exists (same uid) and is active. */
function sessionHolds(instance: PoolInstance, sessions: Pick<Informer<Session>, 'get'>): boolean {
  if (!instance.reservedBy) return false;
  const session = sessions.get(instance.reservedBy.name);
  return !!session && session.metadata.uid === instance.reservedBy.uid && isActiveSession(session);
}

export interface AppDefinitionReconcilerDeps {
  config: Pick<OperatorConfig, 'eagerStart'>;
  /** Caches: the app definitions, and the sessions that hold instances. */
  appDefinitions: Informer<AppDefinition>;
  sessions: Pick<Informer<Session>, 'get'>;
  /** Writes the status. */
  appDefinitionsApi: Pick<CustomResourceClient<'appDefinition'>, 'patchStatus'>;
  instances: Pick<
    PoolInstances,
    'list' | 'delete' | 'returnToPool' | 'create' | 'ensureReservation' | 'ensureClaim' | 'removeStaleClaims'
  >;
  /** The workspaces (cache): an ended session's new workspace takes its instance's claim first. */
  workspaces: Pick<Informer<Workspace>, 'get'>;
  /** The shared Ingresses (cache) and their writer: a released instance's last route is removed first. */
  ingresses: Pick<Informer<k8s.V1Ingress>, 'list'>;
  routes: RouteTable;
  log: Logger;
}

/**
 * Reconciles an AppDefinition's warm pool by the spec's pool table: fetch → gone? (the garbage
 * collector removes the instances it owns) → 1 read instances and their sessions → 2 plan →
 * 3 released instances' routes removed, then delete / recreate / return to pool / create → status
 * pool counts, written once.
 */
export class AppDefinitionReconciler {
  constructor(private readonly deps: AppDefinitionReconcilerDeps) {}

  async reconcile(name: string): Promise<Reconciled> {
    const { deps } = this;
    const cached = deps.appDefinitions.get(name);
    if (!cached || cached.metadata.deletionTimestamp) return;
    const appDefinition = cached;
    const generation = appDefinition.metadata.generation ?? 0;
    const status: AppDefinitionStatus = structuredClone(appDefinition.status ?? {});
    status.observedGeneration = generation;
    if (!findCondition(status.conditions, AppDefinitionCondition.ready)) {
      status.conditions = setCondition(status.conditions, {
        type: AppDefinitionCondition.ready,
        status: 'Unknown',
        reason: AppDefinitionReadyReason.pending,
        observedGeneration: generation,
      });
    }
    let result: Reconciled;
    try {
      const min = effectiveMinInstances(deps.config, appDefinition);
      // 1. Instances and the sessions holding them.
      const instances = deps.instances.list(name);
      const states: PoolInstanceState[] = instances.map((i) => {
        const reserved = sessionHolds(i, deps.sessions);
        // A lost reservation (pool/instances.ts): reset, as an ended session's instance is.
        const released = (!!i.reservedBy && !reserved) || !!i.lost;
        return { id: i.id, generation: i.generation, reserved, released, ready: i.ready };
      });
      // 2. Plan by the pool table.
      const plan = planPool({ minInstances: min, generation, instances: states });
      // 3. Act.
      const waiting = await this.act(appDefinition, instances, plan);
      const acted = plan.delete.length + plan.recreate.length + plan.returnToPool.length + plan.create.length > 0;
      const remaining = states.filter((s) => !plan.delete.includes(s.id) && !plan.recreate.includes(s.id));
      const { pool, ready } = poolStatus(min, remaining, acted);
      status.pool = pool;
      status.conditions = setCondition(status.conditions, {
        type: AppDefinitionCondition.ready,
        ...ready,
        observedGeneration: generation,
      });
      // Recreated instances are created on the next pass, once the old Deployment is gone.
      result = acted ? { requeueAfterMs: waiting > 0 ? Delay.claimHandover : Delay.poolChanging } : undefined;
    } catch (error) {
      result = settle(error, {
        warn: ({ message }) => deps.log.warn({ appDefinition: name, warning: message }, 'app definition warning'),
      });
    } finally {
      await writeStatusOnce({ api: deps.appDefinitionsApi, cache: deps.appDefinitions }, name, {
        previous: appDefinition.status,
        next: status,
      });
    }
    return result;
  }

  /**
   * The plan carried out: the route of a released instance's last session goes first, whoever else
   * removes it (its finalizer): else, after a crash between the two, that user's URL would lead into
   * the IDE of the next session to reserve the instance. Returns how many instances wait for their
   * claim's handover (claimSettled).
   */
  private async act(appDefinition: AppDefinition, instances: PoolInstance[], plan: PoolPlan): Promise<number> {
    const { deps } = this;
    const byId = new Map(instances.map((i) => [i.id, i]));
    for (const i of instances) {
      if (!(i.reservedBy || i.lost) || sessionHolds(i, deps.sessions)) continue;
      // Whose route a lost instance serves is unknown: every route to it goes.
      for (const { ingressName, entry } of sessionRoutesTo(deps.ingresses.list(), i.name, i.reservedBy?.name)) {
        await deps.routes.set(ingressName, entry, false);
      }
    }
    // An ended session's new workspace takes its instance's claim before the instance is deleted,
    // recreated or returned: else the student's work would go with the instance.
    const waiting = new Set(
      [...plan.delete, ...plan.recreate, ...plan.returnToPool].filter((id) => !this.claimSettled(byId.get(id)!)),
    );
    const ready = (ids: number[]) => ids.filter((id) => !waiting.has(id));
    for (const id of ready(plan.delete)) await deps.instances.delete(appDefinition, byId.get(id)!, false);
    for (const id of ready(plan.recreate)) await deps.instances.delete(appDefinition, byId.get(id)!, true);
    for (const id of ready(plan.returnToPool))
      await deps.instances.returnToPool(appDefinition, byId.get(id)!, new Date());
    for (const id of plan.create) await deps.instances.create(appDefinition, id);
    // As the pass left them (the cache has its writes): each instance's reservation and claim made,
    // the stale claims gone.
    const current = deps.instances.list(appDefinition.metadata.name);
    const gone = new Set([...plan.delete, ...plan.recreate]);
    for (const i of current) {
      if (gone.has(i.id)) continue;
      await deps.instances.ensureReservation(appDefinition, i);
      await deps.instances.ensureClaim(appDefinition, i);
    }
    await deps.instances.removeStaleClaims(current);
    return waiting.size;
  }

  /**
   * False while the instance's claim still waits for the new workspace its session served to take
   * it (the instance's reservation woke that workspace): until then the instance is neither deleted,
   * recreated nor returned. A workspace gone or being deleted takes nothing: the claim goes with the
   * instance.
   */
  private claimSettled(instance: PoolInstance): boolean {
    if (!instance.workspace || !instance.claimName) return true;
    const workspace = this.deps.workspaces.get(instance.workspace);
    return !workspace || !!workspace.metadata.deletionTimestamp || !takesWarmClaim(workspace);
  }
}

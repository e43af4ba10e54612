import { isNotFound } from '../../kube/client.js';
import { dataBridgeEnabled, type AppDefinition, type AppDefinitionStatus } from '../../model/app-definition.js';
import { setCondition } from '../../model/conditions.js';
import type { Session } from '../../model/session.js';
import { sameStatus, type OperatorContext } from '../context.js';
import { outcomeOf } from '../runtime/outcome.js';
import { createInstance, deleteInstance, listPoolInstances, returnToPool, type PoolInstance } from './instances.js';
import { planPool, poolStatus, type PoolInstanceState } from './plan.js';
import type { Reconciled } from '../session/reconciler.js';

/** Size of the warm pool the operator keeps: none with eager start off or without the data bridge. */
export function effectiveMinInstances(config: { eagerStart: boolean }, appDefinition: AppDefinition): number {
  return config.eagerStart && dataBridgeEnabled(appDefinition.spec) ? appDefinition.spec.minInstances : 0;
}

function sessionHolds(instance: PoolInstance, sessions: Map<string, Session>): boolean {
  if (!instance.reservedBy) return false;
  const session = sessions.get(instance.reservedBy.name);
  if (!session || session.metadata.uid !== instance.reservedBy.uid) return false;
  if (session.metadata.deletionTimestamp) return false;
  return session.status?.phase !== 'Failed' && session.status?.phase !== 'Stopping';
}

/**
 * Reconciles an AppDefinition's warm pool by the spec's pool table: fetch → gone? (the garbage
 * collector removes the instances it owns) → 1 read instances and their sessions → 2 plan →
 * 3 delete / recreate / return to pool / create → status pool counts, written once.
 */
export class AppDefinitionReconciler {
  constructor(private readonly ctx: OperatorContext) {}

  async reconcile(name: string): Promise<Reconciled> {
    const { ctx } = this;
    const cached = ctx.cache.appDefinitions.get(name);
    if (!cached || cached.metadata.deletionTimestamp) return;
    const appDefinition = cached;
    const generation = appDefinition.metadata.generation ?? 0;
    const status: AppDefinitionStatus = structuredClone(appDefinition.status ?? {});
    status.observedGeneration = generation;
    let result: Reconciled;
    try {
      const min = effectiveMinInstances(ctx.config, appDefinition);
      // 1. Instances and the sessions holding them.
      const instances = listPoolInstances(ctx, name);
      const sessions = new Map(ctx.cache.sessions.list().map((s) => [s.metadata.name, s]));
      const states: PoolInstanceState[] = instances.map((i) => {
        const reserved = sessionHolds(i, sessions);
        return { id: i.id, generation: i.generation, reserved, released: !!i.reservedBy && !reserved, ready: i.ready };
      });
      // 2. Plan by the pool table.
      const plan = planPool({ minInstances: min, generation, instances: states });
      const byId = new Map(instances.map((i) => [i.id, i]));
      // 3. Act.
      for (const id of plan.delete) await deleteInstance(ctx, appDefinition, byId.get(id)!, false);
      for (const id of plan.recreate) await deleteInstance(ctx, appDefinition, byId.get(id)!, true);
      for (const id of plan.returnToPool) await returnToPool(ctx, appDefinition, byId.get(id)!, new Date());
      for (const id of plan.create) await createInstance(ctx, appDefinition, id);
      const acted = plan.delete.length + plan.recreate.length + plan.returnToPool.length + plan.create.length > 0;
      status.pool = poolStatus(
        min,
        states.filter((s) => !plan.delete.includes(s.id) && !plan.recreate.includes(s.id)),
      );
      status.conditions = setCondition(status.conditions, {
        type: 'Ready',
        status: status.pool.ready >= Math.max(0, min - status.pool.reserved) && !acted ? 'True' : 'False',
        reason: acted
          ? 'PoolChanging'
          : status.pool.ready + status.pool.reserved >= min
            ? 'PoolReady'
            : 'InstancesStarting',
        message: `${status.pool.ready} ready, ${status.pool.reserved} reserved of ${min}`,
        observedGeneration: generation,
      });
      // Recreated instances are created on the next pass, once the old Deployment is gone.
      result = acted || plan.recreate.length > 0 ? { requeueAfterMs: 500 } : undefined;
    } catch (error) {
      const outcome = outcomeOf(error);
      if (outcome.kind === 'requeue') result = { requeueAfterMs: outcome.afterMs };
      else throw error;
    } finally {
      if (!sameStatus(status, appDefinition.status)) {
        const updated = await ctx.resources.appDefinitions.patchStatus(name, status).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
        if (updated) ctx.cache.appDefinitions.observe(updated);
      }
    }
    return result;
  }
}

import { LABELS } from '../../model/api-group.js';
import { isSessionFailed } from '../../model/session.js';
import { COMPONENT } from '../manifests.js';
import type { OperatorCache } from '../runtime/cache.js';
import type { WorkQueue } from '../runtime/work-queue.js';

/**
 * What wakes an AppDefinition's pool pass: the app definition itself; a session that ends or fails
 * (an instance to return to the pool, or a lazy session that no longer counts: at once); a change of
 * one of its warm instances, its Deployment or its reservation (`poolChanged`: one pass per burst).
 */
export function wakeAppDefinitions(
  cache: Pick<OperatorCache, 'appDefinitions' | 'sessions' | 'deployments' | 'reservations'>,
  queue: Pick<WorkQueue, 'add'>,
  poolChanged: (appDefinitionName: string) => void,
): void {
  cache.appDefinitions.on((_t, a) => queue.add(a.metadata.name));
  cache.sessions.on((type, s) => {
    if (type === 'DELETED' || s.metadata.deletionTimestamp || isSessionFailed(s)) queue.add(s.spec.appDefinition);
  });
  for (const instances of [cache.deployments, cache.reservations] as const) {
    instances.on((_t, o: { metadata?: { labels?: Record<string, string> } }) => {
      const labels = o.metadata?.labels ?? {};
      const app = labels[LABELS.appDefinition];
      if (labels[LABELS.component] === COMPONENT.poolInstance && app) poolChanged(app);
    });
  }
}

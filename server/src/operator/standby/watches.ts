import { LABELS } from '../../model/api-group.js';
import { COMPONENT } from '../manifests.js';
import type { OperatorCache } from '../runtime/cache.js';
import type { WorkQueue } from '../runtime/work-queue.js';
import { STANDBY_KEY } from './reconciler.js';

/**
 * What wakes the standby claims' one work item: the standby claims, the claims workspaces took from
 * them, and the binder pods; it is visited once at start.
 */
export function wakeStandbyClaims(cache: Pick<OperatorCache, 'claims' | 'pods'>, queue: Pick<WorkQueue, 'add'>): void {
  cache.claims.on((_t, claim) => {
    const labels = claim.metadata?.labels ?? {};
    if (labels[LABELS.component] === COMPONENT.standbyClaim || labels[LABELS.workspaceUid]) queue.add(STANDBY_KEY);
  });
  cache.pods.on((_t, pod) => {
    if (pod.metadata?.labels?.[LABELS.component] === COMPONENT.claimBinder) queue.add(STANDBY_KEY);
  });
  queue.add(STANDBY_KEY);
}

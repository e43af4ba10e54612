import { LABELS } from '../../model/api-group.js';
import type { OperatorCache } from '../runtime/cache.js';
import type { WorkQueue } from '../runtime/work-queue.js';

/**
 * What wakes a Workspace's pass: the workspace itself and, for a new workspace without its claim
 * yet, its session's decision and the warm instance it claimed (whose reservation names the workspace).
 */
export function wakeWorkspaces(
  cache: Pick<OperatorCache, 'workspaces' | 'sessions' | 'reservations'>,
  queue: Pick<WorkQueue, 'add'>,
): void {
  cache.workspaces.on((_t, w) => queue.add(w.metadata.name));
  const wakeClaimless = (workspace: string | undefined) => {
    const w = workspace ? cache.workspaces.get(workspace) : undefined;
    if (w && !w.status?.claimName) queue.add(w.metadata.name);
  };
  cache.sessions.on((_t, s) => wakeClaimless(s.spec.workspace));
  cache.reservations.on((_t, lease) => wakeClaimless(lease.metadata?.labels?.[LABELS.workspace]));
}

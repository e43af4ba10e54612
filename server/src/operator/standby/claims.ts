/**
 * Standby claims: empty claims the operator keeps bound (standby/reconciler.ts), so that a new
 * workspace whose first session starts lazily mounts storage that is there already instead of
 * waiting for the provisioner, much as a warm launch takes over a warm instance's claim.
 */
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.js';
import { LABELS } from '../../model/api-group.js';
import { stringHash32 } from '../../model/names.js';
import type { Workspace } from '../../model/workspace.js';
import { COMPONENT } from '../manifests.js';
import { INDEX, labelKey } from '../runtime/cache.js';
import { workspaceClaimPatch, type ClaimDeps } from '../pool/claims.js';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

type Claim = k8s.V1PersistentVolumeClaim;
type WorkspaceRef = Pick<Workspace, 'metadata'>;

/** The standby claims in the cache, none being deleted. */
export function standbyClaims(claims: ClaimDeps['claims']): Claim[] {
  return claims
    .list()
    .filter((c) => c.metadata?.labels?.[LABELS.component] === COMPONENT.standbyClaim && !c.metadata.deletionTimestamp);
}

/** The standby claim this workspace took (by its uid: a later workspace of the same name is another). */
export function claimTakenBy(claims: ClaimDeps['claims'], workspace: WorkspaceRef): string | undefined {
  const uid = workspace.metadata.uid;
  if (!uid) return undefined;
  return claims.byIndex(INDEX.label, labelKey(LABELS.workspaceUid, uid)).find((c) => !c.metadata?.deletionTimestamp)
    ?.metadata?.name;
}

/**
 * Takes a bound standby claim for a new workspace: one merge patch carrying the resourceVersion the
 * cache shows makes it the workspace's (owner, labels), so two workspaces never take one claim (the
 * loser's 409 moves it to the next). Candidates are rotated by the workspace's name, so concurrent
 * launches rarely aim at the same one. Returns the claim the workspace took before, if any; undefined
 * when none is bound and free.
 */
export async function takeStandbyClaim(
  deps: Pick<ClaimDeps, 'namespace' | 'config' | 'claims'> & {
    core: Pick<k8s.CoreV1Api, 'patchNamespacedPersistentVolumeClaim'>;
  },
  workspace: Workspace,
): Promise<string | undefined> {
  const taken = claimTakenBy(deps.claims, workspace);
  if (taken) return taken;
  const bound = standbyClaims(deps.claims).filter((c) => c.status?.phase === 'Bound');
  if (bound.length === 0) return undefined;
  const offset = (stringHash32(workspace.metadata.name) >>> 0) % bound.length;
  for (const claim of [...bound.slice(offset), ...bound.slice(0, offset)]) {
    const name = claim.metadata?.name ?? '';
    try {
      deps.claims.observe(
        await deps.core.patchNamespacedPersistentVolumeClaim(
          {
            name,
            namespace: deps.namespace,
            body: {
              metadata: {
                resourceVersion: claim.metadata?.resourceVersion,
                // The standby mark goes with the rest of IDE Cloud's labels that are not the workspace's.
                ...workspaceClaimPatch(deps.config, workspace, claim, {
                  [LABELS.workspaceUid]: workspace.metadata.uid ?? '',
                }),
              },
            },
          },
          mergePatch,
        ),
      );
      return name;
    } catch (error) {
      if (!isConflict(error) && !isNotFound(error)) throw error;
    }
  }
  return undefined;
}

/**
 * The claims that hold work folders: each warm instance mounts one of its own from the start, so the
 * first launch of a new workspace claims a ready pod as it is and the instance's claim becomes the
 * workspace's (owner and labels move; the pod never restarts). An instance gets a fresh claim when it
 * returns to the pool; one that no workspace took goes then, with the last user's files.
 */
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import { LABELS } from '../../model/api-group.js';
import type { AppDefinition } from '../../model/app-definition.js';
import { userLabelValue } from '../../model/names.js';
import type { Workspace } from '../../model/workspace.js';
import type { OperatorConfig } from '../config.js';
import { ownerReference, poolInstanceLabels, workClaim } from '../manifests.js';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

export interface ClaimDeps {
  namespace: string;
  config: Pick<OperatorConfig, 'workspaceStorageSize' | 'workspaceStorageClass' | 'workspaceReclaimPolicy'>;
  core: Pick<k8s.CoreV1Api, 'createNamespacedPersistentVolumeClaim' | 'patchNamespacedPersistentVolumeClaim'>;
  /** The claims IDE Cloud manages (metadata); every write's answer goes into it. */
  claims: Informer<k8s.V1PersistentVolumeClaim>;
}

/**
 * The owner and labels of a workspace's claim: the workspace owns it unless its reclaim policy keeps
 * it; the user label says whose work it holds, so a kept claim goes to no other user's workspace.
 */
export function workspaceClaimMetadata(
  config: Pick<OperatorConfig, 'workspaceReclaimPolicy'>,
  workspace: Workspace,
): { labels: Record<string, string>; owners: k8s.V1OwnerReference[] } {
  return {
    labels: { [LABELS.workspace]: workspace.metadata.name, [LABELS.user]: userLabelValue(workspace.spec.user) },
    owners:
      config.workspaceReclaimPolicy === 'Delete'
        ? [ownerReference(workspace as Parameters<typeof ownerReference>[0])]
        : [],
  };
}

/**
 * The metadata of a merge patch that makes a claim (as last read: `current`) the workspace's: its
 * owner and labels (workspaceClaimMetadata, plus `extra`), and no other label of IDE Cloud's (a warm
 * instance's, the standby mark): only the operator's own mark stays.
 */
export function workspaceClaimPatch(
  config: Pick<OperatorConfig, 'workspaceReclaimPolicy'>,
  workspace: Workspace,
  current: k8s.V1PersistentVolumeClaim | undefined,
  extra: Record<string, string> = {},
): { labels: Record<string, string | null>; ownerReferences: k8s.V1OwnerReference[] | null } {
  const { labels, owners } = workspaceClaimMetadata(config, workspace);
  const wanted = { ...labels, ...extra };
  const dropped = Object.fromEntries(
    Object.keys(current?.metadata?.labels ?? {})
      .filter((key) => key !== LABELS.managedBy && !(key in wanted))
      .map((key) => [key, null]),
  );
  return { labels: { ...dropped, ...wanted }, ownerReferences: owners.length > 0 ? owners : null };
}

/**
 * Whether the claim a workspace would bind first (its status names none yet) is there already and
 * holds another user's work: kept by reclaim policy Retain for a deleted workspace of the same name,
 * or made before claims named their user. Such a claim is never mounted for this workspace.
 */
export function claimOfAnotherUser(
  claims: Pick<ClaimDeps['claims'], 'get'>,
  claimName: string,
  workspace: Pick<Workspace, 'spec' | 'status'>,
): boolean {
  if (workspace.status?.claimName) return false;
  const claim = claims.get(claimName);
  return !!claim && claim.metadata?.labels?.[LABELS.user] !== userLabelValue(workspace.spec.user);
}

/**
 * Creates warm instance `id`'s claim `name`, owned by the instance's Deployment: it goes with the
 * instance (garbage collection) unless a workspace took it first. An existing one is kept.
 */
export async function createInstanceClaim(
  deps: ClaimDeps,
  appDefinition: AppDefinition,
  id: number,
  name: string,
  instance: k8s.V1Deployment,
): Promise<void> {
  if (deps.claims.get(name)) return;
  const owner = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: instance.metadata?.name ?? '', uid: instance.metadata?.uid },
  };
  try {
    deps.claims.observe(
      await deps.core.createNamespacedPersistentVolumeClaim({
        namespace: deps.namespace,
        body: workClaim({
          name,
          namespace: deps.namespace,
          labels: poolInstanceLabels(appDefinition, id),
          // Not a controller reference: blocking the Deployment's deletion would need its finalizers' RBAC.
          owners: [ownerReference(owner, false)],
          config: deps.config,
        }),
      }),
    );
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
}

/**
 * Hands a warm instance's claim to the workspace whose first session claimed the instance: the
 * workspace becomes its owner (none with reclaim policy Retain) and its labels say whose it is. A
 * claim that is missing (its instance's pass ended before making it) is made as the workspace's.
 */
export async function handOverClaim(deps: ClaimDeps, name: string, workspace: Workspace): Promise<void> {
  try {
    deps.claims.observe(
      await deps.core.patchNamespacedPersistentVolumeClaim(
        {
          name,
          namespace: deps.namespace,
          body: { metadata: workspaceClaimPatch(deps.config, workspace, deps.claims.get(name)) },
        },
        mergePatch,
      ),
    );
  } catch (error) {
    if (!isNotFound(error)) throw error;
    deps.claims.observe(
      await deps.core.createNamespacedPersistentVolumeClaim({
        namespace: deps.namespace,
        body: workClaim({
          name,
          namespace: deps.namespace,
          ...workspaceClaimMetadata(deps.config, workspace),
          config: deps.config,
        }),
      }),
    );
  }
}

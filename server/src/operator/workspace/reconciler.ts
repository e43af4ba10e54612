import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound } from '../../kube/client.js';
import { ANNOTATIONS, LABELS } from '../../model/api-group.js';
import { setCondition } from '../../model/conditions.js';
import { workspaceClaimName, type Workspace, type WorkspaceStatus } from '../../model/workspace.js';
import { finalizersOf, sameStatus, type OperatorContext } from '../context.js';
import { MANAGED_BY, ownerReference } from '../manifests.js';
import type { Reconciled } from '../session/reconciler.js';

/** Finalizer of a Workspace: its sessions end before its claim goes. */
export const WORKSPACE_FINALIZER = 'ide-cloud.io/workspace-sessions';

/**
 * Reconciles a Workspace into its PersistentVolumeClaim: fetch → gone? → deleting? end its sessions,
 * then let the claim go (owned, reclaim policy Delete) or keep it (Retain) → finalizer → claim →
 * status Bound (the claim exists), written once.
 */
export class WorkspaceReconciler {
  constructor(private readonly ctx: OperatorContext) {}

  async reconcile(name: string): Promise<Reconciled> {
    const { ctx } = this;
    const workspace = ctx.cache.workspaces.get(name);
    if (!workspace) return;
    const status: WorkspaceStatus = structuredClone(workspace.status ?? {});
    status.observedGeneration = workspace.metadata.generation;
    try {
      if (workspace.metadata.deletionTimestamp) {
        status.phase = 'Terminating';
        return await this.finalize(workspace);
      }
      await this.ensureFinalizer(workspace);
      const claimName = workspaceClaimName(workspace);
      const claim: k8s.V1PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: claimName,
          namespace: ctx.namespace,
          labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.workspace]: name },
          ...(ctx.config.workspaceReclaimPolicy === 'Delete'
            ? { ownerReferences: [ownerReference(workspace as Parameters<typeof ownerReference>[0])] }
            : {}),
        },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: ctx.config.workspaceStorageSize } },
          ...(ctx.config.workspaceStorageClass ? { storageClassName: ctx.config.workspaceStorageClass } : {}),
        },
      };
      try {
        await applyObject(ctx.objects, claim);
      } catch (error) {
        // A claim's spec is immutable once bound; an existing claim is what counts.
        const existing = await ctx.core
          .readNamespacedPersistentVolumeClaim({ name: claimName, namespace: ctx.namespace })
          .catch(() => undefined);
        if (!existing) throw error;
      }
      status.phase = 'Bound';
      status.claimName = claimName;
      status.conditions = setCondition(status.conditions, {
        type: 'Ready',
        status: 'True',
        reason: 'ClaimCreated',
        message: `claim ${claimName}`,
        observedGeneration: workspace.metadata.generation,
      });
      return;
    } finally {
      if (!sameStatus(status, workspace.status)) {
        const updated = await ctx.resources.workspaces.patchStatus(name, status).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
        if (updated) ctx.cache.workspaces.observe(updated);
      }
    }
  }

  private async ensureFinalizer(workspace: Workspace): Promise<void> {
    const finalizers = finalizersOf(workspace);
    if (finalizers.includes(WORKSPACE_FINALIZER)) return;
    const updated = await this.ctx.resources.workspaces.mergePatch(workspace.metadata.name, {
      metadata: {
        finalizers: [...finalizers, WORKSPACE_FINALIZER],
        resourceVersion: workspace.metadata.resourceVersion,
      },
    });
    this.ctx.cache.workspaces.observe(updated);
    workspace.metadata.resourceVersion = updated.metadata.resourceVersion;
  }

  private async finalize(workspace: Workspace): Promise<Reconciled> {
    const { ctx } = this;
    if (!finalizersOf(workspace).includes(WORKSPACE_FINALIZER)) return;
    const sessions = ctx.cache.sessions.list().filter((s) => s.spec.workspace === workspace.metadata.name);
    for (const s of sessions) {
      if (s.metadata.deletionTimestamp) continue;
      const reason = `WorkspaceDeleted: workspace ${workspace.metadata.name} was deleted`;
      await ctx.resources.sessions
        .mergePatch(s.metadata.name, { metadata: { annotations: { [ANNOTATIONS.stopReason]: reason } } })
        .catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
      ctx.events.record(s, 'Normal', 'Stopped', `session stopped: ${reason}`);
      await ctx.resources.sessions.delete(s.metadata.name);
    }
    if (sessions.length > 0) return { requeueAfterMs: 300 };
    try {
      await ctx.resources.workspaces.mergePatch(workspace.metadata.name, {
        metadata: {
          finalizers: finalizersOf(workspace).filter((f) => f !== WORKSPACE_FINALIZER),
          resourceVersion: workspace.metadata.resourceVersion,
        },
      });
    } catch (error) {
      if (isConflict(error)) return { requeueAfterMs: 50 };
      if (!isNotFound(error)) throw error;
    }
    return;
  }
}

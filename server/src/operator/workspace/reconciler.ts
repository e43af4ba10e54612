import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { LABELS } from '../../model/api-group.js';
import { findCondition, setCondition } from '../../model/conditions.js';
import type { Session } from '../../model/session.js';
import {
  workspaceClaimName,
  WorkspaceCondition,
  WorkspaceReadyReason,
  type Workspace,
  type WorkspaceStatus,
} from '../../model/workspace.js';
import type { OperatorConfig } from '../config.js';
import { ownerReference } from '../manifests.js';
import { OPERATOR_MANAGER } from '../../model/api-group.js';
import type { EventSink } from '../runtime/events.js';
import type { Logger } from '../runtime/logger.js';
import { finalizersOf, sameStatus } from '../runtime/objects.js';
import { stopSession } from '../session/stop.js';
import { Delay, RetryLater, continueOnWarning, settle, WarnAndContinue, type Reconciled } from '../runtime/outcome.js';

/** Finalizer of a Workspace: its sessions end before its claim goes. */
export const WORKSPACE_FINALIZER = 'ide-cloud.io/workspace-sessions';

export interface WorkspaceReconcilerDeps {
  config: Pick<OperatorConfig, 'workspaceReclaimPolicy' | 'workspaceStorageSize' | 'workspaceStorageClass'>;
  namespace: string;
  /** Caches: the workspaces, and the sessions that use them. */
  workspaces: Informer<Workspace>;
  sessions: Pick<Informer<Session>, 'list'>;
  /** Writes the workspace's finalizer and status. */
  workspacesApi: Pick<CustomResourceClient<'workspace'>, 'mergePatch' | 'patchStatus'>;
  /** Stops the workspace's sessions. */
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'patchStatus' | 'delete'>;
  /** Applies the claim. */
  objects: k8s.KubernetesObjectApi;
  core: Pick<k8s.CoreV1Api, 'readNamespacedPersistentVolumeClaim'>;
  events: EventSink;
  log: Logger;
}

/**
 * Reconciles a Workspace into its PersistentVolumeClaim: fetch → gone? → deleting? end its sessions,
 * then let the claim go (owned, reclaim policy Delete) or keep it (Retain) → finalizer → claim →
 * status Bound (the claim exists), written once.
 */
export class WorkspaceReconciler {
  constructor(private readonly deps: WorkspaceReconcilerDeps) {}

  async reconcile(name: string): Promise<Reconciled> {
    const { deps } = this;
    const workspace = deps.workspaces.get(name);
    if (!workspace) return;
    const status: WorkspaceStatus = structuredClone(workspace.status ?? {});
    status.observedGeneration = workspace.metadata.generation;
    if (!findCondition(status.conditions, WorkspaceCondition.ready)) {
      status.conditions = setCondition(status.conditions, {
        type: WorkspaceCondition.ready,
        status: 'Unknown',
        reason: WorkspaceReadyReason.pending,
        observedGeneration: workspace.metadata.generation,
      });
    }
    const warn = ({ message }: { message: string }) =>
      deps.log.warn({ workspace: name, warning: message }, 'workspace warning');
    try {
      if (workspace.metadata.deletionTimestamp) {
        status.phase = 'Terminating';
        return await this.finalize(workspace);
      }
      await this.ensureFinalizer(workspace);
      const claimName = workspaceClaimName(workspace);
      await continueOnWarning(() => this.applyClaim(workspace, claimName), warn);
      status.phase = 'Bound';
      status.claimName = claimName;
      status.conditions = setCondition(status.conditions, {
        type: WorkspaceCondition.ready,
        status: 'True',
        reason: WorkspaceReadyReason.claimCreated,
        message: `claim ${claimName}`,
        observedGeneration: workspace.metadata.generation,
      });
      return;
    } catch (error) {
      return settle(error, { warn });
    } finally {
      if (!sameStatus(status, workspace.status)) {
        const updated = await deps.workspacesApi.patchStatus(name, status).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
        if (updated) deps.workspaces.observe(updated);
      }
    }
  }

  /** The workspace's claim; one that exists already but cannot take the spec (immutable once bound) is kept. */
  private async applyClaim(workspace: Workspace, claimName: string): Promise<void> {
    const { deps } = this;
    const claim: k8s.V1PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: claimName,
        namespace: deps.namespace,
        labels: { [LABELS.managedBy]: OPERATOR_MANAGER, [LABELS.workspace]: workspace.metadata.name },
        ...(deps.config.workspaceReclaimPolicy === 'Delete'
          ? { ownerReferences: [ownerReference(workspace as Parameters<typeof ownerReference>[0])] }
          : {}),
      },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: deps.config.workspaceStorageSize } },
        ...(deps.config.workspaceStorageClass ? { storageClassName: deps.config.workspaceStorageClass } : {}),
      },
    };
    try {
      await applyObject(deps.objects, claim);
    } catch (error) {
      // A claim's spec is immutable once bound; an existing claim is what counts.
      const existing = await deps.core
        .readNamespacedPersistentVolumeClaim({ name: claimName, namespace: deps.namespace })
        .catch(() => undefined);
      if (!existing) throw error;
      throw new WarnAndContinue(`claim ${claimName} exists but could not be applied; kept as it is`);
    }
  }

  private async ensureFinalizer(workspace: Workspace): Promise<void> {
    const finalizers = finalizersOf(workspace);
    if (finalizers.includes(WORKSPACE_FINALIZER)) return;
    const updated = await this.deps.workspacesApi.mergePatch(workspace.metadata.name, {
      metadata: {
        finalizers: [...finalizers, WORKSPACE_FINALIZER],
        resourceVersion: workspace.metadata.resourceVersion,
      },
    });
    this.deps.workspaces.observe(updated);
    workspace.metadata.resourceVersion = updated.metadata.resourceVersion;
  }

  private async finalize(workspace: Workspace): Promise<Reconciled> {
    const { deps } = this;
    if (!finalizersOf(workspace).includes(WORKSPACE_FINALIZER)) return;
    const sessions = deps.sessions.list().filter((s) => s.spec.workspace === workspace.metadata.name);
    for (const s of sessions) {
      if (s.metadata.deletionTimestamp) continue;
      await stopSession(deps, s, `WorkspaceDeleted: workspace ${workspace.metadata.name} was deleted`);
    }
    if (sessions.length > 0)
      throw new RetryLater('waiting for the sessions of the workspace to go', Delay.dependentsDeleting);
    try {
      await deps.workspacesApi.mergePatch(workspace.metadata.name, {
        metadata: {
          finalizers: finalizersOf(workspace).filter((f) => f !== WORKSPACE_FINALIZER),
          resourceVersion: workspace.metadata.resourceVersion,
        },
      });
    } catch (error) {
      if (isConflict(error)) throw new RetryLater('workspace changed while its finalizer was removed', Delay.conflict);
      if (!isNotFound(error)) throw error;
    }
  }
}

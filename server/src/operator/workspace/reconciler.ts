import * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { LABELS } from '../../model/api-group.js';
import { findCondition, setCondition } from '../../model/conditions.js';
import { userLabelValue } from '../../model/names.js';
import { decidedStartStrategy, isSessionFailed, type Session } from '../../model/session.js';
import {
  ownClaimName,
  takesWarmClaim,
  WorkspaceCondition,
  WorkspaceReadyReason,
  type Workspace,
  type WorkspaceStatus,
} from '../../model/workspace.js';
import type { OperatorConfig } from '../config.js';
import { workClaim } from '../manifests.js';
import type { PoolInstances } from '../pool/instances.js';
import { claimOfAnotherUser, handOverClaim, workspaceClaimMetadata, type ClaimDeps } from '../pool/claims.js';
import { claimTakenBy } from '../standby/claims.js';
import type { EventSink } from '../runtime/events.js';
import type { Logger } from '../runtime/logger.js';
import { finalizersOf } from '../runtime/objects.js';
import { writeStatusOnce } from '../runtime/status.js';
import { stopSession } from '../session/stop.js';
import { Delay, RetryLater, continueOnWarning, settle, WarnAndContinue, type Reconciled } from '../runtime/outcome.js';
import { INDEX } from '../runtime/cache.js';

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** Finalizer of a Workspace: its sessions end before its claim goes. */
export const WORKSPACE_FINALIZER = 'ide-cloud.io/workspace-sessions';

export interface WorkspaceReconcilerDeps {
  config: Pick<OperatorConfig, 'workspaceReclaimPolicy' | 'workspaceStorageSize' | 'workspaceStorageClass'>;
  namespace: string;
  /** Caches: the workspaces, the sessions that use them, the warm instances they claimed, the claims. */
  workspaces: Informer<Workspace>;
  sessions: Pick<Informer<Session>, 'byIndex'>;
  claims: ClaimDeps['claims'];
  /** The warm instances reserved for a new workspace, whose claim it takes over. */
  pool: Pick<PoolInstances, 'reservedFor'>;
  /** Writes the workspace's finalizer and status. */
  workspacesApi: Pick<CustomResourceClient<'workspace'>, 'mergePatch' | 'patchStatus'>;
  /** Stops the workspace's sessions. */
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'patchStatus' | 'delete'>;
  /** Applies the claim. */
  objects: k8s.KubernetesObjectApi;
  core: Pick<k8s.CoreV1Api, 'readNamespacedPersistentVolumeClaim'> & ClaimDeps['core'];
  events: EventSink;
  log: Logger;
}

/** Where a workspace's claim comes from on this pass. */
type ClaimSource =
  | { kind: 'own'; name: string }
  | { kind: 'takenOver'; name: string; instance: string }
  /** A standby claim its first session took as it started lazily (already the workspace's: no write). */
  | { kind: 'standby'; name: string }
  /** Taken over on an earlier pass: it stays the workspace's, and so does what the status says of it. */
  | { kind: 'kept'; name: string }
  | { kind: 'awaitingLaunch'; message: string };

/** The Ready reason of a workspace whose claim is there, by where it came from. */
function claimReadyReason(source: Extract<ClaimSource, { kind: 'own' | 'takenOver' | 'standby' }>): {
  reason: string;
  message: string;
} {
  switch (source.kind) {
    case 'takenOver':
      return {
        reason: WorkspaceReadyReason.claimTakenOver,
        message: `claim ${source.name} of warm instance ${source.instance}`,
      };
    case 'standby':
      return { reason: WorkspaceReadyReason.claimTakenOver, message: `standby claim ${source.name}` };
    case 'own':
      return { reason: WorkspaceReadyReason.claimCreated, message: `claim ${source.name}` };
  }
}

/**
 * Reconciles a Workspace into its PersistentVolumeClaim: fetch → gone? → deleting? end its sessions,
 * then let the claim go (owned, reclaim policy Delete) or keep it (Retain) → finalizer → claim (its
 * own, or the claim of the warm instance its first launch claimed) → status Bound naming the claim,
 * written once.
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
      const source = this.claimSource(workspace);
      if (source.kind === 'awaitingLaunch') {
        status.phase = 'Pending';
        status.conditions = setCondition(status.conditions, {
          type: WorkspaceCondition.ready,
          status: 'Unknown',
          reason: WorkspaceReadyReason.awaitingLaunch,
          message: source.message,
          observedGeneration: workspace.metadata.generation,
        });
        // Its session's decision wakes it (workspace/watches.ts); the grace period ends in any case.
        return { requeueAfterMs: Delay.launchSessionGrace };
      }
      await continueOnWarning(() => this.labelClaimUser(workspace), warn);
      if (source.kind === 'kept') return;
      if (source.kind === 'own' && claimOfAnotherUser(deps.claims, source.name, workspace)) {
        status.phase = 'Pending';
        status.conditions = setCondition(status.conditions, {
          type: WorkspaceCondition.ready,
          status: 'False',
          reason: WorkspaceReadyReason.claimOfAnotherUser,
          message: `claim ${source.name} holds another user's work: it is not this workspace's`,
          observedGeneration: workspace.metadata.generation,
        });
        return;
      }
      if (source.kind === 'takenOver') await handOverClaim(this.claimDeps(), source.name, workspace);
      else if (source.kind === 'own' && !this.deps.claims.get(source.name)) {
        // Level-triggered, but not a write per pass: applied when the cache does not show it.
        await continueOnWarning(() => this.applyClaim(workspace, source.name), warn);
      }
      status.phase = 'Bound';
      status.claimName = source.name;
      status.conditions = setCondition(status.conditions, {
        type: WorkspaceCondition.ready,
        status: 'True',
        ...claimReadyReason(source),
        observedGeneration: workspace.metadata.generation,
      });
      return;
    } catch (error) {
      return settle(error, { warn });
    } finally {
      await writeStatusOnce({ api: deps.workspacesApi, cache: deps.workspaces }, name, {
        previous: workspace.status,
        next: status,
      });
    }
  }

  /**
   * Where the claim comes from: the one the status names (its own, or one taken over before); the
   * claim of the warm instance the first session of a new workspace claimed, or the standby claim it
   * took; while that session has not decided, none yet; else the workspace's own.
   */
  private claimSource(workspace: Workspace): ClaimSource {
    const name = workspace.metadata.name;
    const own = ownClaimName(workspace);
    const current = workspace.status?.claimName;
    if (current && current !== own) return { kind: 'kept', name: current };
    if (current || !takesWarmClaim(workspace)) return { kind: 'own', name: own };
    const instance = this.deps.pool.reservedFor(name).find((i) => i.claimName);
    if (instance) return { kind: 'takenOver', name: instance.claimName!, instance: instance.name };
    const standby = claimTakenBy(this.deps.claims, workspace);
    if (standby) return { kind: 'standby', name: standby };
    const sessions = this.deps.sessions
      .byIndex(INDEX.workspace, name)
      .filter((s) => !s.metadata.deletionTimestamp && !isSessionFailed(s));
    const strategies = sessions.map(decidedStartStrategy);
    // A session that starts lazily mounts the workspace's own claim; later ones wait for the workspace.
    if (strategies.some((strategy) => strategy && strategy !== 'eager')) return { kind: 'own', name: own };
    const age = Date.now() - new Date(workspace.metadata.creationTimestamp ?? 0).getTime();
    // One message for the whole wait: the status is written when the wait begins, not again.
    if (strategies.some((strategy) => !strategy) || (sessions.length === 0 && age < Delay.launchSessionGrace))
      return { kind: 'awaitingLaunch', message: "its first session may bring a warm instance's claim" };
    return { kind: 'own', name: own };
  }

  private claimDeps(): ClaimDeps {
    const { namespace, config, core, claims } = this.deps;
    return { namespace, config, core, claims };
  }

  /** The workspace's claim; one that exists already but cannot take the spec (immutable once bound) is kept. */
  private async applyClaim(workspace: Workspace, claimName: string): Promise<void> {
    const { deps } = this;
    const claim = workClaim({
      name: claimName,
      namespace: deps.namespace,
      ...workspaceClaimMetadata(deps.config, workspace),
      config: deps.config,
    });
    try {
      deps.claims.observe(await applyObject(deps.objects, claim));
    } catch (error) {
      // A claim's spec is immutable once bound; an existing claim is what counts.
      const existing = await deps.core
        .readNamespacedPersistentVolumeClaim({ name: claimName, namespace: deps.namespace })
        .catch(() => undefined);
      if (!existing) throw error;
      throw new WarnAndContinue(`claim ${claimName} exists but could not be applied; kept as it is`);
    }
  }

  /**
   * A claim made before claims named their user gets the label once (the operator's start visits every
   * workspace), so that, kept by reclaim policy Retain, it goes back to this user (claimOfAnotherUser).
   */
  private async labelClaimUser(workspace: Workspace): Promise<void> {
    const name = workspace.status?.claimName;
    const claim = name ? this.deps.claims.get(name) : undefined;
    if (!name || !claim || claim.metadata?.labels?.[LABELS.user]) return;
    const body = { metadata: { labels: { [LABELS.user]: userLabelValue(workspace.spec.user) } } };
    try {
      this.deps.claims.observe(
        await this.deps.core.patchNamespacedPersistentVolumeClaim(
          { name, namespace: this.deps.namespace, body },
          mergePatch,
        ),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
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
    const sessions = deps.sessions.byIndex(INDEX.workspace, workspace.metadata.name);
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

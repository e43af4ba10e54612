import { z } from 'zod';
import { ANNOTATIONS } from './api-group.js';
import { ConditionsSchema } from './conditions.js';
import { ObjectMetaSchema } from './object-meta.js';

export const WorkspaceSpecSchema = z
  .object({
    user: z.string().min(1),
    appDefinition: z.string().optional(),
    label: z.string().optional().describe('human-readable name shown to the user'),
    storage: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63)
      .optional()
      .describe('name of the PersistentVolumeClaim holding the files; derived from the workspace name when unset'),
  })
  .strict();
export type WorkspaceSpec = z.infer<typeof WorkspaceSpecSchema>;

export const WorkspacePhaseSchema = z.enum(['Pending', 'Bound', 'Terminating']);
export type WorkspacePhase = z.infer<typeof WorkspacePhaseSchema>;

export const WorkspaceStatusSchema = z
  .object({
    observedGeneration: z.number().int().optional(),
    phase: WorkspacePhaseSchema.optional(),
    claimName: z.string().optional(),
    conditions: ConditionsSchema.optional(),
  })
  .strict();
export type WorkspaceStatus = z.infer<typeof WorkspaceStatusSchema>;

/** Condition types of a Workspace. */
export const WorkspaceCondition = {
  /** Its claim exists. */
  ready: 'Ready',
} as const;

/** Reasons of a Workspace's Ready condition. */
export const WorkspaceReadyReason = {
  pending: 'Pending',
  /** Its first launch is deciding whether a warm instance's claim becomes the workspace's. */
  awaitingLaunch: 'AwaitingLaunch',
  claimCreated: 'ClaimCreated',
  /** The claim of the warm instance its first session claimed is now the workspace's. */
  claimTakenOver: 'ClaimTakenOver',
  /**
   * A claim of its name is there, kept (reclaim policy Retain) for another user, or made before
   * claims named their user: it is not given to this workspace.
   */
  claimOfAnotherUser: 'ClaimOfAnotherUser',
} as const;

export const WorkspaceSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema,
  spec: WorkspaceSpecSchema,
  status: WorkspaceStatusSchema.optional(),
});
export type Workspace = z.infer<typeof WorkspaceSchema>;

type WorkspaceLike = Pick<Workspace, 'metadata' | 'spec'> & { status?: Pick<WorkspaceStatus, 'claimName'> };

/**
 * Name of the claim that holds a workspace's files: the one its status names (its own, or the warm
 * instance's it took over), else the one it makes: `spec.storage`, else its name.
 */
export function workspaceClaimName(workspace: WorkspaceLike): string {
  return workspace.status?.claimName ?? ownClaimName(workspace);
}

/** The claim a workspace makes when none is handed over: `spec.storage`, else its name. */
export function ownClaimName(workspace: Pick<Workspace, 'metadata' | 'spec'>): string {
  return workspace.spec.storage ?? workspace.metadata.name;
}

/**
 * Whether a launch made this workspace and it has no claim yet: it holds no work, so the warm instance
 * its first session claims serves it as it is, and that instance's claim becomes the workspace's.
 * Any other workspace may hold work, and its sessions get pods of their own.
 */
export function takesWarmClaim(workspace: WorkspaceLike): boolean {
  return (
    workspace.metadata.annotations?.[ANNOTATIONS.createdByLaunch] === 'true' &&
    !workspace.status?.claimName &&
    !workspace.spec.storage
  );
}

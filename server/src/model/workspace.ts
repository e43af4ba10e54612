import { z } from 'zod';
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
  claimCreated: 'ClaimCreated',
} as const;

export const WorkspaceSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema,
  spec: WorkspaceSpecSchema,
  status: WorkspaceStatusSchema.optional(),
});
export type Workspace = z.infer<typeof WorkspaceSchema>;

/** Name of the claim that holds a workspace's files. */
export function workspaceClaimName(workspace: { metadata: { name: string }; spec: WorkspaceSpec }): string {
  return workspace.spec.storage ?? workspace.metadata.name;
}

import { ErrorCode } from './error-codes.js';
import type { AppDefinitionSpec } from './app-definition.js';
import { isActiveSession, type Session } from './session.js';
import type { Workspace } from './workspace.js';

/**
 * Launches (`POST /service`, `POST /service/session`) that may wait at once on one service replica:
 * for one workspace, and for one user. Each holds a connection for up to its timeout (60 minutes at
 * most), so without a cap one stuck workspace held as many as a caller sent. Over it: 429 at once.
 */
export const LAUNCH_WAITERS = { perWorkspace: 5, perUser: 10 } as const;

/**
 * Whether `user` may have one more workspace: each holds a claim, and the namespace's quota is shared
 * by every user, so one user could take everyone's storage. `workspaces` are the namespace's; those of
 * the user not being deleted count, plus `pending` creates of the user not yet in that list.
 */
export function checkWorkspaceLimit(input: {
  user: string;
  workspaces: readonly Pick<Workspace, 'spec' | 'metadata'>[];
  workspacesPerUser: number;
  pending?: number;
}): { code: typeof ErrorCode.workspacesPerUserReached; reason: string } | undefined {
  const ofUser = input.workspaces.filter((w) => w.spec.user === input.user && !w.metadata.deletionTimestamp).length;
  if (ofUser + (input.pending ?? 0) < input.workspacesPerUser) return undefined;
  return {
    code: ErrorCode.workspacesPerUserReached,
    reason: `user is at the limit of ${input.workspacesPerUser} workspace(s); delete one first`,
  };
}

export interface LimitRefusal {
  code: typeof ErrorCode.maxInstancesReached | typeof ErrorCode.sessionsPerUserReached;
  reason: string;
}

/**
 * Whether one more session of `user` for `appDefinition` stays within maxInstances (eager plus lazy)
 * and sessionsPerUser. `sessions` are the other sessions in the namespace, of which the active ones
 * count (`isActiveSession`, read from their conditions): the service checks this before it creates
 * anything, the operator again when it reconciles (the pre-check alone races).
 */
export function checkSessionLimits(input: {
  appDefinition: Pick<AppDefinitionSpec, 'name' | 'maxInstances'>;
  user: string;
  sessions: readonly Pick<Session, 'spec' | 'status' | 'metadata'>[];
  sessionsPerUser: number;
}): LimitRefusal | undefined {
  const active = input.sessions.filter(isActiveSession);
  const ofDefinition = active.filter((s) => s.spec.appDefinition === input.appDefinition.name).length;
  const max = input.appDefinition.maxInstances;
  if (max !== null && ofDefinition >= max) {
    return {
      code: ErrorCode.maxInstancesReached,
      reason: `app definition ${input.appDefinition.name} is at maxInstances (${max})`,
    };
  }
  const ofUser = active.filter((s) => s.spec.user === input.user).length;
  if (ofUser >= input.sessionsPerUser) {
    return {
      code: ErrorCode.sessionsPerUserReached,
      reason: `user is at the limit of ${input.sessionsPerUser} concurrent session(s)`,
    };
  }
  return undefined;
}

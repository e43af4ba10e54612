import { ErrorCode } from './error-codes.js';
import type { AppDefinitionSpec } from './app-definition.js';
import { decidedStartStrategy, isActiveSession, type Session } from './session.js';
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

type CountedSession = Pick<Session, 'spec' | 'status' | 'metadata'>;

/**
 * The indexes a sessions cache keeps for the limits (kube/informer.ts, `indexers`), so that a check
 * counts without looking at every session: the active sessions of each app definition, those of them
 * with no start strategy decided yet, and every session of each user.
 */
export const LIMIT_INDEX = {
  activeOfAppDefinition: 'limits/active-of-app-definition',
  undecidedOfAppDefinition: 'limits/undecided-of-app-definition',
  ofUser: 'limits/of-user',
} as const;

export const limitIndexers: Record<string, (session: CountedSession) => string[]> = {
  [LIMIT_INDEX.activeOfAppDefinition]: (s) => (isActiveSession(s) ? [s.spec.appDefinition] : []),
  [LIMIT_INDEX.undecidedOfAppDefinition]: (s) =>
    isActiveSession(s) && !decidedStartStrategy(s) ? [s.spec.appDefinition] : [],
  [LIMIT_INDEX.ofUser]: (s) => [s.spec.user],
};

/** A sessions cache with the limits' indexes (`limitIndexers`). */
export interface LimitIndexedSessions {
  get(name: string): CountedSession | undefined;
  byIndex(index: string, key: string): CountedSession[];
  countByIndex(index: string, key: string): number;
}

/** The active sessions that count against one more session: of its app definition, of its user. */
export interface SessionCounts {
  ofDefinition: number;
  ofUser: number;
}

/**
 * Counts the active sessions of `appDefinition` and of `user` in the cache, except the session named
 * `excluding` (the one being checked, when it exists) and those `counts` leaves out. `counts` may leave
 * out only sessions whose start strategy is not decided yet: the app definition's are counted from its
 * active sessions less those, so the cost follows the undecided sessions and the user's, not all.
 */
export function countSessions(
  sessions: LimitIndexedSessions,
  input: { appDefinition: string; user: string; excluding?: string; counts?: (session: CountedSession) => boolean },
): SessionCounts {
  const { appDefinition, user, excluding, counts = () => true } = input;
  const other = (s: CountedSession) => s.metadata.name !== excluding;
  const self = excluding === undefined ? undefined : sessions.get(excluding);
  const selfActive = !!self && limitIndexers[LIMIT_INDEX.activeOfAppDefinition]!(self).includes(appDefinition);
  const undecidedLeftOut = input.counts
    ? sessions.byIndex(LIMIT_INDEX.undecidedOfAppDefinition, appDefinition).filter((s) => other(s) && !counts(s)).length
    : 0;
  return {
    ofDefinition:
      sessions.countByIndex(LIMIT_INDEX.activeOfAppDefinition, appDefinition) - (selfActive ? 1 : 0) - undecidedLeftOut,
    ofUser: sessions.byIndex(LIMIT_INDEX.ofUser, user).filter((s) => other(s) && isActiveSession(s) && counts(s))
      .length,
  };
}

/**
 * Whether one more session of `appDefinition` stays within maxInstances (eager plus lazy) and
 * sessionsPerUser, given the active sessions that count (`countSessions`): the service checks this
 * before it creates anything, the operator again when it reconciles (the pre-check alone races).
 */
export function sessionLimitRefusal(input: {
  appDefinition: Pick<AppDefinitionSpec, 'name' | 'maxInstances'>;
  counts: SessionCounts;
  sessionsPerUser: number;
}): LimitRefusal | undefined {
  const max = input.appDefinition.maxInstances;
  if (max !== null && input.counts.ofDefinition >= max) {
    return {
      code: ErrorCode.maxInstancesReached,
      reason: `app definition ${input.appDefinition.name} is at maxInstances (${max})`,
    };
  }
  if (input.counts.ofUser >= input.sessionsPerUser) {
    return {
      code: ErrorCode.sessionsPerUserReached,
      reason: `user is at the limit of ${input.sessionsPerUser} concurrent session(s)`,
    };
  }
  return undefined;
}

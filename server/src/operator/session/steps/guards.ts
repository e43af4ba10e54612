import { startDeadlineSeconds, type AppDefinition } from '../../../model/app-definition.js';
import { findCondition } from '../../../model/conditions.js';
import { ErrorCode } from '../../../model/error-codes.js';
import { countSessions, sessionLimitRefusal } from '../../../model/limits.js';
import { envSourcesRefusal } from '../../../model/session-env.js';
import {
  decidedStartStrategy,
  isSessionFailed,
  SessionCondition,
  SessionReadyReason,
  type Session,
} from '../../../model/session.js';
import { ownClaimName, takesWarmClaim, type Workspace } from '../../../model/workspace.js';
import { claimOfAnotherUser } from '../../pool/claims.js';
import { INDEX } from '../../runtime/cache.js';
import { FailObject, RetryLater } from '../../runtime/outcome.js';
import { byCreation } from '../../../model/admission.js';
import { startDeadlineOf } from '../admission.js';
import { startDeadlineFailure } from '../start-failure.js';
import { claimTakenBy } from '../../standby/claims.js';
import type { SessionStepDeps, StepContext, Guarded } from './context.js';
import { takeUpDecision } from './decision.js';

/**
 * Guards: the app definition and the workspace exist, a session that has not served is within its
 * start deadline, a decision already made is taken up, limits hold (checked once, before a start
 * strategy), conditions are Unknown on the first visit.
 */
export async function guards(step: StepContext): Promise<Guarded> {
  const { deps, session, pass } = step;
  const appDefinition = await deps.appDefinitions.find(session.spec.appDefinition, (n) =>
    deps.appDefinitionsApi.find(n),
  );
  if (!appDefinition) {
    throw new FailObject(ErrorCode.unknownAppDefinition, `unknown app definition ${session.spec.appDefinition}`);
  }
  checkStartDeadline(deps, session, appDefinition);
  let claimName: string | undefined;
  let newWorkspace: Workspace | undefined;
  if (session.spec.workspace) {
    // The service creates the workspace just before the session, and the two come by different
    // watches: a cache miss is confirmed with the API server before the session fails on it.
    const workspace = await deps.workspaces.find(session.spec.workspace, (n) => deps.workspacesApi.find(n));
    if (!workspace || workspace.metadata.deletionTimestamp) {
      throw new FailObject(ErrorCode.unknownWorkspace, `unknown workspace ${session.spec.workspace}`);
    }
    // The status names the claim once the workspace's pass has; until then a standby claim it took
    // (a lazy start's, before a crash) is its claim.
    claimName = workspace.status?.claimName ?? claimTakenBy(deps.claims, workspace) ?? ownClaimName(workspace);
    if (claimOfAnotherUser(deps.claims, claimName, workspace)) {
      throw new FailObject(
        ErrorCode.forbidden,
        `the claim of workspace ${workspace.metadata.name} holds another user's work`,
      );
    }
    if (takesWarmClaim(workspace)) {
      // One warm claim per new workspace: a later session waits until the workspace has its claim
      // (another session's instance's, taken over, or its own), then mounts it on a pod of its own.
      const other = claimingSessionOf(deps, session, workspace.metadata.name);
      if (other) throw new RetryLater(`workspace ${workspace.metadata.name} is getting its claim (${other})`);
      deps.newWorkspaceClaimants.set(workspace.metadata.name, session.metadata.uid ?? '');
      newWorkspace = workspace;
    } else deps.newWorkspaceClaimants.delete(workspace.metadata.name);
  }
  // A decision already made is in the status or, if the pass that made it ended before its status was
  // written, in the annotations or the world (takeUpDecision): it is not checked against the limits again.
  if (!pass.status.startStrategy) takeUpDecision(step, appDefinition);
  if (!pass.status.startStrategy) {
    checkLimits(deps, session, appDefinition);
    await checkEnvSources(deps, session);
  }
  // First visit (no Ready condition yet): every condition Unknown (phase Pending: model/session.ts).
  if (!findCondition(pass.status.conditions, SessionCondition.ready)) {
    for (const type of Object.values(SessionCondition)) {
      if (!findCondition(pass.status.conditions, type))
        pass.condition({ type, status: 'Unknown', reason: SessionReadyReason.pending });
    }
  }
  return { appDefinition, claimName, ...(newWorkspace ? { newWorkspace } : {}) };
}

/**
 * What makes a new workspace's claim for it, other than this session: a warm instance another session
 * reserved for it (its claim awaits the takeover), a live session of it created before this one, or
 * one this process let claim a warm instance for it a moment ago (its reservation not cached yet).
 */
function claimingSessionOf(deps: SessionStepDeps, session: Session, workspace: string): string | undefined {
  const instance = deps.pool
    .reservedFor(workspace)
    // Not this session's own reservation (by uid: a session of the same name before it is another).
    .find((i) => i.reservedBy?.uid !== session.metadata.uid);
  if (instance) return `warm instance ${instance.name}`;
  const claimant = deps.newWorkspaceClaimants.get(workspace);
  const live = (s: Session) =>
    s.metadata.uid !== session.metadata.uid && !s.metadata.deletionTimestamp && !isSessionFailed(s);
  return deps.sessions
    .byIndex(INDEX.workspace, workspace)
    .find((s) => live(s) && (byCreation(s, session) < 0 || s.metadata.uid === claimant))?.metadata.name;
}

/**
 * Whatever keeps a session from serving (a pod that never gets ready, a step that retries), it fails
 * at its start deadline; one that has served (has its URL) is past its start.
 */
function checkStartDeadline(deps: SessionStepDeps, session: Session, appDefinition: AppDefinition): void {
  if (session.status?.url) return;
  const seconds = startDeadlineSeconds(appDefinition.spec);
  const at = startDeadlineOf(session, seconds);
  if (at !== undefined && (deps.now ?? Date.now)() >= at) {
    const failure = startDeadlineFailure(seconds);
    throw new FailObject(failure.code, failure.message, failure.reason);
  }
}

/**
 * Counts the active sessions that come before this one: those created earlier (by creation time, then
 * name: the same order whichever is reconciled first) and those already past this check, which a
 * later-named session of the same second must count too (timestamps have one-second resolution).
 */
function checkLimits(deps: SessionStepDeps, session: Session, appDefinition: AppDefinition): void {
  const decided = (s: Session) => !!decidedStartStrategy(s) || deps.limitsPassed.has(s.metadata.name);
  const refusal = sessionLimitRefusal({
    appDefinition: { name: session.spec.appDefinition, maxInstances: appDefinition.spec.maxInstances },
    counts: countSessions(deps.sessions, {
      appDefinition: session.spec.appDefinition,
      user: session.spec.user,
      excluding: session.metadata.name,
      counts: (s) => decided(s as Session) || byCreation(s, session) < 0,
    }),
    sessionsPerUser: deps.config.sessionsPerUser,
  });
  if (refusal) throw new FailObject(refusal.code, refusal.reason);
  deps.limitsPassed.add(session.metadata.name);
}

/** Every Secret and ConfigMap the session names must be marked for session use (model/session-env.ts). */
async function checkEnvSources(deps: SessionStepDeps, session: Session): Promise<void> {
  const refusal = await envSourcesRefusal(
    { configMaps: session.spec.envVarsFromConfigMaps, secrets: session.spec.envVarsFromSecrets },
    deps.envSource,
  );
  if (refusal) throw new FailObject(refusal.code, refusal.reason);
}

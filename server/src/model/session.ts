import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { ANNOTATIONS } from './api-group.js';
import { AtomicConditionsSchema, findCondition } from './conditions.js';
import { ObjectMetaSchema } from './object-meta.js';

const K8sName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/)
  .max(253);

export const SessionSpecSchema = z
  .object({
    user: z.string().min(1),
    appDefinition: z.string().min(1),
    workspace: z.string().optional().describe('workspace whose claim is mounted; unset for an ephemeral session'),
    envVars: z.record(z.string(), z.string()).optional().describe('launch values given directly'),
    envVarsFromConfigMaps: z.array(K8sName).optional().describe('names of config maps whose data is added'),
    envVarsFromSecrets: z.array(K8sName).optional().describe('names of secrets whose data is added'),
    sessionSecret: z.string().optional().describe('shared secret of the session and its authentication proxy'),
  })
  .strict();
export type SessionSpec = z.infer<typeof SessionSpecSchema>;

export const SessionPhaseSchema = z.enum(['Pending', 'Starting', 'Running', 'Stopping', 'Failed']);
export type SessionPhase = z.infer<typeof SessionPhaseSchema>;

export const StartStrategySchema = z.enum(['eager', 'lazy', 'lazy-fallback']);
export type StartStrategy = z.infer<typeof StartStrategySchema>;

export const SessionErrorSchema = z.object({ code: z.number().int(), reason: z.string() }).strict();
export type SessionError = z.infer<typeof SessionErrorSchema>;

export const LazyStartRateSchema = z
  .object({
    perSecond: z.number().positive().describe('lazy starts the operator lets through per second'),
    burst: z.number().int().min(1).describe('how many it lets through at once at most'),
  })
  .strict();
/** The lazy-start gate's rate: tokens per second, and how many it holds at most (a burst). */
export type LazyStartRate = z.infer<typeof LazyStartRateSchema>;

export const SessionStatusSchema = z
  .object({
    observedGeneration: z.number().int().optional(),
    phase: SessionPhaseSchema.optional(),
    url: z.string().optional(),
    startStrategy: StartStrategySchema.optional(),
    instanceId: z.string().optional(),
    lastActivity: z.string().optional().describe('RFC 3339 time of the last activity report'),
    error: SessionErrorSchema.optional(),
    lazyStartRate: LazyStartRateSchema.optional().describe(
      'the rate of the lazy-start gate that queued the session (Admitted False, Queued), for the estimate of its wait',
    ),
    conditions: AtomicConditionsSchema.optional(),
  })
  .strict();
export type SessionStatus = z.infer<typeof SessionStatusSchema>;

export const SessionSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema,
  spec: SessionSpecSchema,
  status: SessionStatusSchema.optional(),
});
export type Session = z.infer<typeof SessionSchema>;

/** Condition types of a Session: states, not actions. */
export const SessionCondition = {
  reserved: 'Reserved',
  routed: 'Routed',
  envInjected: 'EnvInjected',
  ready: 'Ready',
} as const;

/**
 * The lazy-start gate's condition (operator: session/admission.ts): whether a lazy start may create
 * its pod. Set only on a session that meets the gate, a lazy start while the operator's
 * `lazyStartsPerSecond` is on; warm claims never meet it, so it is not among the conditions set
 * Unknown on a first visit. The queue's rules (order, position, estimate) are in model/admission.ts.
 */
export const SESSION_ADMITTED_CONDITION = 'Admitted';

/** Reasons of the Admitted condition. */
export const SessionAdmittedReason = {
  /** False: waiting at the gate, in creation order; the gate's rate is in `status.lazyStartRate`. */
  queued: 'Queued',
  /** True: past the gate; `lastTransitionTime` is when its start token was granted. */
  admitted: 'Admitted',
} as const;

/** Reasons of a Session's Ready condition that the logic reads. */
export const SessionReadyReason = {
  /** First visit: nothing decided yet. */
  pending: 'Pending',
  podReady: 'PodReady',
  podNotReady: 'PodNotReady',
  /** The pod is Ready; the ingress does not serve the session's route yet (operator routeCheckUrl). */
  routeNotServed: 'RouteNotServed',
  /**
   * The pod is Ready; its proxy does not admit the session's user yet: a warm instance's allowed users
   * arrive with the data bridge's values (identity-provider mode).
   */
  userNotAdmitted: 'UserNotAdmitted',
  /** The operator gave up on the session; `status.error` says why (terminal). */
  failed: 'Failed',
  /** The session is being deleted. */
  stopping: 'Stopping',
} as const;

/** Reasons of a Session's Reserved condition: how its start strategy was decided. */
export const SessionReservedReason = {
  /** True: a warm instance is the session's (`status.instanceId`). */
  instanceReserved: 'InstanceReserved',
  /** False: eager start is on but no warm instance was free; the session starts lazily. */
  poolExhausted: 'PoolExhausted',
  /** False: the session's workspace may hold work, so a pod of its own mounts the workspace's claim. */
  workspaceHoldsWork: 'WorkspaceHoldsWork',
  /** False: eager start is off; every session starts lazily. */
  eagerStartDisabled: 'EagerStartDisabled',
} as const;

/** Reasons of a Session's Routed condition. */
export const SessionRoutedReason = {
  /** True: the session's path is in its app definition's shared Ingress. */
  routeAdded: 'RouteAdded',
} as const;

/** Reasons of a Session's EnvInjected condition: where the session's values are. */
export const SessionEnvInjectedReason = {
  /** Unknown: the reserved warm instance is not ready to take the values yet. */
  waitingForInstance: 'WaitingForInstance',
  /** Unknown: the values are on their way to the warm instance's data bridge. */
  injecting: 'Injecting',
  /** True: the data bridge took the values. */
  injected: 'Injected',
  /** False: the data bridge could not be given the values; the session serves without them. */
  injectionFailed: 'InjectionFailed',
  /** True: a lazy session's values are in its Secret, referenced from its pod. */
  podEnvironment: 'PodEnvironment',
} as const;

/**
 * Machine reasons of a Ready condition False for a session that could not start (terminal, like
 * `failed`): `status.error.reason` and the Ready condition's message say it in words a student and a
 * teacher can read.
 */
export const SessionFailureReason = {
  /** An image of the session pod could not be pulled (past a short bound: a pull error can be transient). */
  imagePullFailed: 'ImagePullFailed',
  /** A container of the session pod keeps crashing (CrashLoopBackOff). */
  crashLooping: 'CrashLooping',
  /** No node can take the session pod, and nothing is about to make room. */
  unschedulable: 'Unschedulable',
  /** A container cannot be created from its configuration (e.g. a Secret or key it references is missing). */
  containerConfigError: 'ContainerConfigError',
  /** The IDE did not serve within the app definition's start deadline. */
  startDeadlineExceeded: 'StartDeadlineExceeded',
  /** The cluster refused to create the session pod (an admission policy such as Pod Security, a quota). */
  podRefused: 'PodRefused',
} as const;
export type SessionFailureReasonValue = (typeof SessionFailureReason)[keyof typeof SessionFailureReason];

/** Every Ready reason that means Failed. */
const FAILED_REASONS: ReadonlySet<string> = new Set([
  SessionReadyReason.failed,
  ...Object.values(SessionFailureReason),
]);

type SessionState = Pick<Session, 'status'>;

/**
 * The session's state as its Ready condition tells it: the conditions are the truth, `phase` only
 * a summary for people. A status with no Ready condition (written by hand, or by a stand-in for the
 * operator) is read by its phase.
 */
function readyState(session: SessionState): { status: 'True' | 'False' | 'Unknown'; reason?: string } | undefined {
  const ready = findCondition(session.status?.conditions, SessionCondition.ready);
  if (ready) return ready;
  switch (session.status?.phase) {
    case 'Running':
      return { status: 'True', reason: SessionReadyReason.podReady };
    case 'Failed':
      return { status: 'False', reason: SessionReadyReason.failed };
    case 'Stopping':
      return { status: 'False', reason: SessionReadyReason.stopping };
    default:
      return undefined;
  }
}

/**
 * The phase a status's conditions tell, a summary for people (logic reads the conditions): Ready True
 * is Running; Unknown is Pending until a start strategy is decided, then Starting; False is Failed for
 * a failure's reason, Stopping for a deletion's, else Starting (the pod, the route or the proxy's
 * admission is awaited). A status without a Ready condition (not the operator's yet) keeps its phase.
 */
export function sessionPhase(
  status: Pick<SessionStatus, 'conditions' | 'phase' | 'startStrategy'>,
): SessionPhase | undefined {
  const ready = findCondition(status.conditions, SessionCondition.ready);
  if (!ready) return status.phase;
  if (ready.status === 'True') return 'Running';
  if (ready.status === 'Unknown') return status.startStrategy ? 'Starting' : 'Pending';
  if (FAILED_REASONS.has(ready.reason)) return 'Failed';
  return ready.reason === SessionReadyReason.stopping ? 'Stopping' : 'Starting';
}

/**
 * The start strategy decided for a session: its status's, else the annotation the operator writes with
 * the decision (a lazy one before its resources, a warm one after its status); undefined: not decided.
 */
export function decidedStartStrategy(session: Pick<Session, 'status' | 'metadata'>): StartStrategy | undefined {
  if (session.status?.startStrategy) return session.status.startStrategy;
  // A plain lookup, not the schema's parse: the limits ask this of every undecided session, and a
  // failed parse (no annotation, as a rule) builds an error each time.
  const annotated = session.metadata.annotations?.[ANNOTATIONS.startStrategy];
  return StartStrategySchema.options.find((strategy) => strategy === annotated);
}

/**
 * Whether the operator has taken the session up: a pass of its wrote the status, which always carries
 * `observedGeneration` (operator/session/status.ts). The service's own status write (an activity
 * report's `lastActivity`) carries none.
 */
export function takenUpByOperator(session: Pick<Session, 'status'>): boolean {
  return session.status?.observedGeneration !== undefined;
}

/** Ready: the IDE serves at `status.url`. */
export function isSessionReady(session: SessionState): boolean {
  return readyState(session)?.status === 'True' && !!session.status?.url;
}

/** Failed: the operator gave up on it (a refusal, or a start that failed); terminal, `status.error` says why. */
export function isSessionFailed(session: SessionState): boolean {
  const ready = readyState(session);
  return ready?.status === 'False' && ready.reason !== undefined && FAILED_REASONS.has(ready.reason);
}

/** Stopping: its finalizer runs. */
export function isSessionStopping(session: SessionState): boolean {
  const ready = readyState(session);
  return ready?.status === 'False' && ready.reason === SessionReadyReason.stopping;
}

/** Active: counts against the limits and holds its warm instance; not deleted, failed or stopping. */
export function isActiveSession(session: Pick<Session, 'status' | 'metadata'>): boolean {
  if (session.metadata.deletionTimestamp) return false;
  return !isSessionFailed(session) && !isSessionStopping(session);
}

/**
 * The warm instances the active sessions hold, by app definition: the pool's reserved count. A session
 * counts once its decision is written (status or annotation), a launch's moment after its claim.
 */
export function countReservedInstances(
  sessions: Iterable<Pick<Session, 'spec' | 'status' | 'metadata'>>,
): Map<string, number> {
  const reserved = new Map<string, number>();
  for (const session of sessions) {
    if (!isActiveSession(session) || decidedStartStrategy(session) !== 'eager') continue;
    const name = session.spec.appDefinition;
    reserved.set(name, (reserved.get(name) ?? 0) + 1);
  }
  return reserved;
}

/**
 * The annotations the spec asks of a decided session (`ide-cloud.io/session-start-strategy` and, on a
 * warm instance, `ide-cloud.io/instance-id`) that its metadata does not carry yet, from the decision in
 * `status`. Written by whoever writes the session's metadata next on a launch: the service with its
 * answered mark (an ephemeral launch), else the operator after the status (`decisionAnnotatedByService`).
 */
export function missingDecisionAnnotations(
  metadata: Pick<Session['metadata'], 'annotations'>,
  status: Pick<SessionStatus, 'startStrategy' | 'instanceId'> | undefined,
): Record<string, string> {
  const wanted: Record<string, string | undefined> = {
    [ANNOTATIONS.startStrategy]: status?.startStrategy,
    [ANNOTATIONS.instanceId]: status?.instanceId,
  };
  const annotations = metadata.annotations ?? {};
  return Object.fromEntries(
    Object.entries(wanted).filter((e): e is [string, string] => !!e[1] && annotations[e[0]] !== e[1]),
  );
}

/**
 * Whether `next` differs from `previous` only by the service's answered mark: `ide-cloud.io/unanswered`
 * cleared and the decision's annotations written as the status has them (`missingDecisionAnnotations`:
 * none left). Nothing in it is news to the operator, whose status holds that decision.
 */
export function onlyAnsweredMark(previous: Session, next: Session): boolean {
  const cleared =
    previous.metadata.annotations?.[ANNOTATIONS.unanswered] === 'true' &&
    next.metadata.annotations?.[ANNOTATIONS.unanswered] === undefined;
  if (!cleared || Object.keys(missingDecisionAnnotations(next.metadata, next.status)).length > 0) return false;
  const unmarked = (s: Session) => {
    const {
      [ANNOTATIONS.unanswered]: _unanswered,
      [ANNOTATIONS.startStrategy]: _strategy,
      [ANNOTATIONS.instanceId]: _instance,
      ...annotations
    } = s.metadata.annotations ?? {};
    return { ...s, metadata: { ...s.metadata, annotations, resourceVersion: undefined, managedFields: undefined } };
  };
  return isDeepStrictEqual(unmarked(previous), unmarked(next));
}

/**
 * Whether the service writes the session's decision annotations: an ephemeral launch's session still
 * unanswered gets them in the one write that clears its mark, so the operator leaves them alone.
 */
export function decisionAnnotatedByService(metadata: Pick<Session['metadata'], 'annotations'>): boolean {
  return metadata.annotations?.[ANNOTATIONS.unanswered] === 'true';
}

/**
 * Whether someone may hold the session's URL: it has one, and its launch did not leave it
 * unanswered (`ANNOTATIONS.unanswered`: the service was killed between the URL and the answer).
 * Sessions of a service before that mark count as handed out once they have a URL.
 */
export function urlHandedOut(session: Pick<Session, 'metadata' | 'status'>): boolean {
  return !!session.status?.url && session.metadata.annotations?.[ANNOTATIONS.unanswered] !== 'true';
}

/**
 * The workspace of a session that is its workspace's first (its launch created the workspace) and
 * has not served (no URL): that workspace holds no work, so a cancelled or failed launch takes it
 * along (issue 27, item 1), else every launch-then-cancel left a claim. Undefined for any other session.
 */
export function neverServedWorkspace(session: Pick<Session, 'metadata' | 'spec' | 'status'>): string | undefined {
  const first = session.metadata.annotations?.[ANNOTATIONS.createdWorkspace] === 'true';
  return first && !session.status?.url ? session.spec.workspace : undefined;
}

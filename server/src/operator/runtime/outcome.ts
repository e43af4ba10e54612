/**
 * The reconcile outcome policy. Steps never decide requeueing themselves: they throw one of three
 * typed errors, and `outcomeOf` maps whatever a pass threw to one outcome: retry after a named
 * delay, fail the object with a code and reason, warn and go on, or an unexpected error (the work
 * queue retries it with backoff and logs it).
 */
import type { SessionFailureReasonValue } from '../../model/session.js';
import type { EventReason } from './events.js';

/** Every delay a reconciler waits before it looks again, by what it waits for. */
export const Delay = {
  /** Default of a RetryLater: a part is not there yet. */
  notReady: 1000,
  /** A write lost a race (409) with another writer of the same object: read again at once. */
  conflict: 50,
  /** A warm instance changed while it was reserved, deleted or returned: the next pass picks again. */
  instanceContention: 100,
  /** A workspace's sessions are being deleted: its finalizer waits for them. */
  dependentsDeleting: 300,
  /** An ended session's instance waits for its new workspace to take the instance's claim (usually done). */
  claimHandover: 1000,
  /** A launch's new workspace waits this long for the launch's session before it makes a claim of its own. */
  launchSessionGrace: 30_000,
  /** The pool changed in this pass (or an instance is recreated): look again once it settled. */
  poolChanging: 500,
  /** A session that has served waits for its restarting pod (its pod's or workload's changes wake it sooner). */
  podStarting: 5000,
  /**
   * A pull error of a starting pod is looked at again after this bound (a few pull attempts); still
   * failing then, it fails the session (session/start-failure.ts).
   */
  imagePullBound: 30_000,
  /** A lazy start waits at the gate behind a session whose start strategy is not decided yet (its first pass). */
  admissionUndecided: 200,
  /**
   * How long past its route a warm launch's URL waits for the injection's first try: a bridge that
   * takes the values at once (the usual case) puts their arrival in the status with the URL, one
   * status write instead of two; a slow one never holds the URL longer.
   */
  injectionGrace: 200,
  /** Warm instances' changes within this delay share one app definition pass. */
  poolPassBatch: 2000,
  /**
   * How long a starting session's pass waits for the ingress to take its route up (asking every
   * routeCheckEvery): an ingress that reloads within it (Traefik's provider throttle, when short)
   * puts the URL in the pass's one status write, without a status that says "not served" first.
   */
  routeGrace: 250,
  /** Within routeGrace, the ingress is asked again after this: a reload lands between two checks. */
  routeCheckEvery: 10,
  /** A starting session whose route was not served within routeGrace asks the ingress again after this. */
  routeServed: 50,
  /** Upper bound of the random wait between two read-modify-write attempts of a shared Ingress. */
  routeRetryMax: 500,
  /** Step of that random wait per attempt. */
  routeRetryStep: 20,
} as const;

/** The part is not ready yet; visit again later. */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly afterMs: number = Delay.notReady,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/**
 * The object cannot be served: it goes to Failed with this code and reason (terminal). A start that
 * failed names its machine reason too (the Ready condition's and the Event's); a refusal does not.
 */
export class FailObject extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    readonly failureReason?: SessionFailureReasonValue,
  ) {
    super(reason);
    this.name = 'FailObject';
  }
}

/**
 * Something worth telling went wrong, but the pass can go on without it: logged, and recorded as a
 * Warning Event on the object when it names an event reason.
 */
export class WarnAndContinue extends Error {
  constructor(
    message: string,
    readonly event?: EventReason,
  ) {
    super(message);
    this.name = 'WarnAndContinue';
  }
}

export type Outcome =
  | { kind: 'retry'; afterMs: number; message: string }
  | { kind: 'fail'; code: number; reason: string; failureReason?: SessionFailureReasonValue }
  | { kind: 'warn'; message: string; event?: EventReason }
  | { kind: 'error'; error: unknown };

export function outcomeOf(error: unknown): Outcome {
  if (error instanceof RetryLater) return { kind: 'retry', afterMs: error.afterMs, message: error.message };
  if (error instanceof FailObject) {
    return {
      kind: 'fail',
      code: error.code,
      reason: error.reason,
      ...(error.failureReason ? { failureReason: error.failureReason } : {}),
    };
  }
  if (error instanceof WarnAndContinue) return { kind: 'warn', message: error.message, event: error.event };
  return { kind: 'error', error };
}

/** What a reconcile pass answers the work queue: nothing, or when to look again. */
export type Reconciled = { requeueAfterMs?: number } | void;

/** How a reconciler handles the outcomes that are its own: a failed object, a warning. */
export interface OutcomeHandlers {
  /** Absent: the kind cannot fail, and a FailObject is an unexpected error. */
  fail?(outcome: Extract<Outcome, { kind: 'fail' }>): void;
  warn(outcome: Extract<Outcome, { kind: 'warn' }>): void;
}

/**
 * The one mapping of what a pass threw: retry → requeue after its delay; fail → the reconciler's
 * failure (terminal, no requeue); warn → the reconciler's warning, the pass ends quietly; anything
 * else is thrown on to the work queue (backoff and a log line).
 */
export function settle(error: unknown, handlers: OutcomeHandlers): Reconciled {
  const outcome = outcomeOf(error);
  switch (outcome.kind) {
    case 'retry':
      return { requeueAfterMs: outcome.afterMs };
    case 'fail':
      if (!handlers.fail) throw error;
      handlers.fail(outcome);
      return;
    case 'warn':
      handlers.warn(outcome);
      return;
    case 'error':
      throw outcome.error;
  }
}

/**
 * Runs a step that may warn and continue: its WarnAndContinue goes to `warn` and the pass goes on;
 * any other error is the pass's.
 */
export async function continueOnWarning<T>(
  step: () => Promise<T>,
  warn: OutcomeHandlers['warn'],
): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    const outcome = outcomeOf(error);
    if (outcome.kind !== 'warn') throw error;
    warn(outcome);
    return undefined;
  }
}

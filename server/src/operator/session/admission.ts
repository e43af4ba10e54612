/**
 * Fair burst admission of lazy starts. Beyond the warm pool, each lazy start creates a pod (and its
 * Service); at a lecture's start hundreds come in seconds. The gate lets them create it at the
 * operator's `lazyStartsPerSecond` (a token bucket holding at most `lazyStartBurst`), first come
 * first served by creation time (model/admission.ts's order). Warm claims never meet it.
 *
 * What is kept in memory is only what a restart may lose: the bucket (a new leader starts it full)
 * and the tokens granted to sessions whose pod is not there yet. Who waits is read from the
 * session cache on every pass (level-triggered): a restarted operator finds the same queue. A
 * session held back gets the Admitted condition False, reason Queued, and the rate in
 * `status.lazyStartRate`, in one write (so the service can tell the queue's position and an
 * estimate), and comes back when its token is due: nothing is written while it waits. With the gate
 * off, a session still queued by an earlier configuration is admitted on its next pass.
 */
import type { Informer } from '../../kube/informer.js';
import {
  byCreation,
  mayWaitAtGate,
  mayWaitAtGateIn,
  queuedMessage,
  type LazyStartRate,
} from '../../model/admission.js';
import { findCondition, setCondition } from '../../model/conditions.js';
import {
  decidedStartStrategy,
  SESSION_ADMITTED_CONDITION,
  SessionAdmittedReason,
  type Session,
} from '../../model/session.js';
import { Delay, RetryLater } from '../runtime/outcome.js';
import { liveOwnWorkload, type OwnWorkloadCaches } from './own-workload.js';
import { startDeadlineAt } from './start-failure.js';
import type { Pass } from './status.js';

/**
 * A token bucket: `perSecond` tokens a second, at most `burst` held. Starts full. The clock is
 * injected (milliseconds), so it is tested without waiting.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly rate: LazyStartRate,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = rate.burst;
    this.last = now();
  }

  /** Tokens held now (a fraction while one is accruing). */
  available(): number {
    const now = this.now();
    if (now > this.last) {
      this.tokens = Math.min(this.rate.burst, this.tokens + ((now - this.last) / 1000) * this.rate.perSecond);
      this.last = now;
    }
    return this.tokens;
  }

  /** Takes `count` tokens; the caller has checked they are there. */
  take(count: number): void {
    this.available();
    this.tokens -= count;
  }

  /**
   * Milliseconds until `count` more tokens will have come, counting those held (what the last of
   * `count` sessions in line waits, the ones before it taking theirs as they come).
   */
  msUntil(count: number): number {
    return Math.max(0, Math.ceil(((count - this.available()) / this.rate.perSecond) * 1000));
  }
}

/** A session as the gate sees it in the queue. */
export interface GateEntry {
  name: string;
  uid: string;
  /** Its start strategy is decided (lazy): an undecided one may still claim a warm instance. */
  decided: boolean;
}

export type GateDecision = { admitted: true; at: number } | { admitted: false; retryAfterMs: number };

/**
 * The gate: grants tokens strictly in the queue's order. A session that comes while sessions before
 * it hold no token yet (their pass is late) grants theirs first and wakes them, so a token never goes
 * to a later session while an earlier one waits; an undecided session before it stops the grants
 * there until it has decided (warm claims take no token).
 */
export class LazyStartGate {
  private readonly bucket: TokenBucket;
  /** Sessions (uid) that were granted a token and whose pod is not there yet: when. */
  private readonly granted = new Map<string, number>();

  constructor(
    readonly rate: LazyStartRate,
    private readonly wake: (sessionName: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.bucket = new TokenBucket(rate, now);
  }

  /** Decides for `session`, given `queue`: every session waiting at the gate, in creation order. */
  decide(session: GateEntry, queue: readonly GateEntry[]): GateDecision {
    const now = this.now();
    const waiting = new Set(queue.map((e) => e.uid));
    // A grant ends once its session started or left (deleted, failed): the queue no longer holds it.
    for (const uid of [...this.granted.keys()]) if (!waiting.has(uid)) this.granted.delete(uid);
    const at = this.granted.get(session.uid);
    if (at !== undefined) return { admitted: true, at };

    const index = queue.findIndex((e) => e.uid === session.uid);
    const ahead = (index < 0 ? queue : queue.slice(0, index)).filter((e) => !this.granted.has(e.uid));
    const line = [...ahead, { ...session, decided: true }];
    const undecided = line.findIndex((e) => !e.decided);
    const reachable = undecided < 0 ? line.length : undecided;
    const count = Math.min(Math.floor(this.bucket.available()), reachable);
    this.bucket.take(count);
    for (const entry of line.slice(0, count)) {
      this.granted.set(entry.uid, now);
      if (entry.uid !== session.uid) this.wake(entry.name);
    }
    if (count === line.length) return { admitted: true, at: now };
    if (count === reachable && undecided >= 0) return { admitted: false, retryAfterMs: Delay.admissionUndecided };
    return { admitted: false, retryAfterMs: Math.max(this.bucket.msUntil(line.length - count), Delay.conflict) };
  }
}

/** What the gate step reads. */
export interface AdmissionDeps extends OwnWorkloadCaches {
  /** The gate; absent when `lazyStartsPerSecond` is 0 (off): lazy starts go at once. */
  admission?: LazyStartGate;
  sessions: Pick<Informer<Session>, 'byIndex'>;
  /** The clock of the admission's time (ms since the epoch). */
  now?: () => number;
}

/** Its own workload exists: it is past the gate whatever its status says (a lost status write). */
function hasWorkload(deps: AdmissionDeps, session: Session): boolean {
  return !!liveOwnWorkload(deps, session);
}

/**
 * Waits at the gate, or may (model/admission.ts), and has no workload of its own. Undecided sessions count
 * (see LazyStartGate): their first pass decides within moments.
 */
function waitsAtGate(deps: AdmissionDeps, session: Session): boolean {
  return mayWaitAtGate(session) && !hasWorkload(deps, session);
}

function admitted(session: Session, pass: Pass, at: number, message: string): void {
  pass.status.conditions = setCondition(
    pass.status.conditions,
    {
      type: SESSION_ADMITTED_CONDITION,
      status: 'True',
      reason: SessionAdmittedReason.admitted,
      message,
      observedGeneration: session.metadata.generation,
    },
    new Date(at),
  );
}

/**
 * 3a. The gate of a lazy start, before its pod is created: passes, or marks the session
 * Queued and throws RetryLater for when its token is due. A session whose workload exists is past it.
 */
export function admitLazyStart(deps: AdmissionDeps, session: Session, pass: Pass): void {
  const gate = deps.admission;
  const name = session.metadata.name;
  const current = findCondition(pass.status.conditions, SESSION_ADMITTED_CONDITION);
  if (current?.status === 'True') return;
  const now = (deps.now ?? Date.now)();
  // A session queued by a gate that is off now (a new configuration) passes: queued, it would have
  // no start deadline and the service would keep showing it in a queue that no longer moves.
  if (!gate) {
    if (current) admitted(session, pass, now, 'the lazy-start gate is off');
    return;
  }
  if (hasWorkload(deps, session)) {
    if (current) admitted(session, pass, now, 'its workload exists');
    return;
  }
  const entry = (s: Session): GateEntry => ({
    name: s.metadata.name,
    uid: s.metadata.uid ?? s.metadata.name,
    decided: decidedStartStrategy(s) === 'lazy' || decidedStartStrategy(s) === 'lazy-fallback',
  });
  const queue = mayWaitAtGateIn(deps.sessions)
    .filter((s) => s.metadata.name !== name && waitsAtGate(deps, s))
    .concat(session)
    .sort(byCreation)
    .map(entry);
  const decision = gate.decide(entry(session), queue);
  if (decision.admitted) {
    admitted(session, pass, decision.at, 'past the lazy-start gate');
    return;
  }
  pass.condition({
    type: SESSION_ADMITTED_CONDITION,
    status: 'False',
    reason: SessionAdmittedReason.queued,
    message: queuedMessage(gate.rate),
  });
  // In the same status write as the condition: the service's estimate reads it there.
  pass.status.lazyStartRate = { ...gate.rate };
  throw new RetryLater('queued for a lazy start', decision.retryAfterMs);
}

/**
 * The start deadline of a session (session/start-failure.ts), counted from its admission past the
 * gate when it met the gate, else from its creation; none while it waits at the gate, where the
 * queue moves by itself at the gate's rate.
 */
export function startDeadlineOf(session: Pick<Session, 'metadata' | 'status'>, seconds: number): number | undefined {
  const admission = findCondition(session.status?.conditions, SESSION_ADMITTED_CONDITION);
  if (admission?.status === 'False') return undefined;
  const from = admission?.status === 'True' ? admission.lastTransitionTime : session.metadata.creationTimestamp;
  return startDeadlineAt({ metadata: { creationTimestamp: from } }, seconds);
}

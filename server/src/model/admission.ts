/**
 * The lazy-start queue as both sides read it. The operator's gate (operator/session/admission.ts)
 * lets lazy starts create their pods at a rate, in creation order, and marks a session it
 * holds back with the Admitted condition False, reason Queued, and the gate's rate in
 * `status.lazyStartRate`, in one write; the service derives each queued session's position and an
 * estimate from its session cache and that rate, so no one writes anything per waiting session while
 * the queue moves.
 */
import { findCondition } from './conditions.js';
import {
  decidedStartStrategy,
  isActiveSession,
  SESSION_ADMITTED_CONDITION,
  SessionAdmittedReason,
  type LazyStartRate,
  type Session,
} from './session.js';

export type { LazyStartRate };

/** Where a queued session stands: 1 is next; the estimate in whole seconds (absent without a known rate). */
export interface QueuePlace {
  position: number;
  estimatedWaitSeconds?: number;
}

type Queueable = Pick<Session, 'metadata' | 'status'>;

/** The message of the Queued condition, for people; the rate itself is in `status.lazyStartRate`. */
export function queuedMessage(rate: LazyStartRate): string {
  return `waiting for a lazy start: the operator starts ${rate.perSecond} per second (bursts of ${rate.burst}), in order of creation`;
}

/**
 * Creation order, the queue's order: creation time, then name. Creation times have whole seconds, so
 * sessions of the same second go by name; every reader orders them the same way.
 */
export function byCreation(a: Queueable, b: Queueable): number {
  const time = (s: Queueable) => Date.parse(String(s.metadata.creationTimestamp ?? '')) || 0;
  return time(a) - time(b) || (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0);
}

/**
 * May hold a place in the queue: active, not serving, not a warm claim, not past the gate. This
 * counts a session whose start strategy is not decided yet (its first pass decides within moments),
 * so places only fall: every session ahead of a queued one leaves that set for good (admitted, warm,
 * serving, failed, deleted). The operator also counts a session whose workload exists as past it.
 */
export function mayWaitAtGate(session: Queueable): boolean {
  const strategy = decidedStartStrategy(session);
  return (
    isActiveSession(session) &&
    !session.status?.url &&
    strategy !== 'eager' &&
    findCondition(session.status?.conditions, SESSION_ADMITTED_CONDITION)?.status !== 'True'
  );
}

/**
 * The index a sessions cache keeps of those that may wait at the gate (kube/informer.ts, `indexers`):
 * all under one key, so a pass at the gate looks at the queue, not at every session.
 */
export const GATE_INDEX = 'admission/may-wait-at-gate';
const MAY_WAIT = 'may-wait';
export const gateIndexers = { [GATE_INDEX]: (s: Queueable) => (mayWaitAtGate(s) ? [MAY_WAIT] : []) };

/** The sessions of the cache that may wait at the gate (`mayWaitAtGate`), from its index. */
export function mayWaitAtGateIn<T extends Queueable>(sessions: { byIndex(index: string, key: string): T[] }): T[] {
  return sessions.byIndex(GATE_INDEX, MAY_WAIT);
}

/** Waiting at the gate: active, and its Admitted condition False with reason Queued. */
export function isQueued(session: Queueable): boolean {
  const admitted = findCondition(session.status?.conditions, SESSION_ADMITTED_CONDITION);
  return (
    admitted?.status === 'False' &&
    admitted.reason === SessionAdmittedReason.queued &&
    isActiveSession(session) &&
    !session.status?.url
  );
}

/** The line: the sessions among `sessions` that may hold a place (mayWaitAtGate), in the queue's order. */
export function queueOf<T extends Queueable>(sessions: readonly T[]): T[] {
  return sessions.filter(mayWaitAtGate).sort(byCreation);
}

/** Seconds until a session at `position` is let through, at the gate's rate (rounded up). */
export function estimatedWaitSeconds(position: number, rate: LazyStartRate): number {
  return Math.ceil(position / rate.perSecond);
}

/** The place of a queued session at `position` (from 1), with the estimate at the rate its status carries. */
export function placeAt(position: number, session: Queueable): QueuePlace {
  const rate = session.status?.lazyStartRate;
  return rate ? { position, estimatedWaitSeconds: estimatedWaitSeconds(position, rate) } : { position };
}

/** The place of `session` in `queue` (queueOf's answer); undefined when it is not queued. */
export function placeIn(queue: readonly Queueable[], session: Queueable): QueuePlace | undefined {
  if (!isQueued(session)) return undefined;
  const index = queue.findIndex((s) => s.metadata.name === session.metadata.name);
  return index < 0 ? undefined : placeAt(index + 1, session);
}

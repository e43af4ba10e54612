import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { findCondition, setCondition, type ConditionInput } from '../../model/conditions.js';
import { sessionPhase, type Session, type SessionStatus } from '../../model/session.js';
import type { EventType } from '../runtime/event-correlator.js';
import type { EventReason } from '../runtime/events.js';
import { writeStatusOnce } from '../runtime/status.js';

/** An Event that tells a step: recorded when its condition changes in the pass. */
export interface StepEvent {
  type?: EventType;
  reason: EventReason;
  message: string;
}

/**
 * What a pass learnt about a Session: its status and the Events to record. The status is written
 * once at the end; the Events after it, in the background, so the URL never waits for one.
 */
export class Pass {
  readonly status: SessionStatus;
  readonly events: [type: EventType, reason: EventReason, message: string][] = [];
  /** The Ingress of the session's route (its app definition's), once the guards found it. */
  ingressName?: string;

  constructor(readonly session: Session) {
    this.status = structuredClone(session.status ?? {});
    this.status.observedGeneration = session.metadata.generation;
  }

  /**
   * Sets a condition; with `told`, a step's Event is recorded when the condition's status differs
   * from the one read at the start of the pass, so a step is told once, not on every pass.
   */
  condition(next: Omit<ConditionInput, 'observedGeneration'>, told?: StepEvent): void {
    const before = findCondition(this.session.status?.conditions, next.type)?.status;
    if (told && before !== next.status) this.event(told.type ?? 'Normal', told.reason, told.message);
    this.status.conditions = setCondition(this.status.conditions, {
      ...next,
      observedGeneration: this.session.metadata.generation,
    });
  }

  event(type: EventType, reason: EventReason, message: string): void {
    this.events.push([type, reason, message]);
  }
}

export interface StatusWriterDeps {
  sessions: Pick<Informer<Session>, 'observe'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'patchStatus'>;
}

/**
 * Writes what changed, on the session as this pass read it: the resourceVersion is the precondition, so a
 * pass never writes over a later session of the same name (the status subresource ignores a uid in the
 * patch). A session changed or gone since is left alone: the change that won comes by the watch and
 * brings a new pass, which takes up what this one decided (steps/decision.ts, takeUpDecision).
 * lastActivity belongs to the service and is never written here; the phase is the conditions' summary.
 * Answers whether it wrote.
 */
export async function writeStatus(deps: StatusWriterDeps, session: Session, status: SessionStatus): Promise<boolean> {
  const { lastActivity: _ignored, ...next } = status;
  const { lastActivity: _before, ...previous } = session.status ?? {};
  void _ignored;
  void _before;
  const phase = sessionPhase(next);
  const write = await writeStatusOnce({ api: deps.sessionsApi, cache: deps.sessions }, session.metadata.name, {
    previous,
    next: phase ? { ...next, phase } : next,
    resourceVersion: session.metadata.resourceVersion,
  });
  return write.kind === 'written';
}

import { isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { setCondition, type ConditionInput } from '../../model/conditions.js';
import type { Session, SessionStatus } from '../../model/session.js';
import type { EventReason } from '../runtime/events.js';
import { sameStatus } from '../runtime/objects.js';

/** What a pass learnt about a Session: its status and the Events to record, written once at the end. */
export class Pass {
  readonly status: SessionStatus;
  readonly events: [type: 'Normal' | 'Warning', reason: EventReason, message: string][] = [];

  constructor(readonly session: Session) {
    this.status = structuredClone(session.status ?? {});
    this.status.observedGeneration = session.metadata.generation;
  }

  condition(next: Omit<ConditionInput, 'observedGeneration'>): void {
    this.status.conditions = setCondition(this.status.conditions, {
      ...next,
      observedGeneration: this.session.metadata.generation,
    });
  }

  event(type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    this.events.push([type, reason, message]);
  }
}

export interface StatusWriterDeps {
  sessions: Pick<Informer<Session>, 'observe'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'patchStatus'>;
}

/** Writes what changed; lastActivity belongs to the service and is never written here. */
export async function writeStatus(deps: StatusWriterDeps, session: Session, status: SessionStatus): Promise<void> {
  const { lastActivity: _ignored, ...next } = status;
  const { lastActivity: _before, ...previous } = session.status ?? {};
  void _ignored;
  void _before;
  if (sameStatus(previous, next)) return;
  try {
    deps.sessions.observe(await deps.sessionsApi.patchStatus(session.metadata.name, next));
  } catch (error) {
    if (isNotFound(error)) return;
    throw error;
  }
}

import { isNotFound } from '../../kube/client.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { ANNOTATIONS } from '../../model/api-group.js';
import { setCondition } from '../../model/conditions.js';
import { SessionCondition, SessionReadyReason, type Session } from '../../model/session.js';
import type { EventSink } from '../runtime/events.js';

export interface StopSessionDeps {
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'patchStatus' | 'delete'>;
  events: EventSink;
}

/**
 * Stops a session with a reason (idle, lifetime, its workspace deleted): the reason goes into the
 * stop-reason annotation (with `annotations`, e.g. where the work was saved, in the same write), into
 * status (phase Stopping, Ready False with reason Stopping and the reason as its message, which the
 * finalizer keeps) and a `Stopped` Event, then the Session is deleted (its finalizer removes the
 * route). False when the session was gone already.
 */
export async function stopSession(
  deps: StopSessionDeps,
  session: Session,
  reason: string,
  annotations: Record<string, string> = {},
): Promise<boolean> {
  const name = session.metadata.name;
  try {
    await deps.sessionsApi.mergePatch(name, {
      metadata: { annotations: { ...annotations, [ANNOTATIONS.stopReason]: reason } },
    });
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  const conditions = setCondition(session.status?.conditions, {
    type: SessionCondition.ready,
    status: 'False',
    reason: SessionReadyReason.stopping,
    message: `stopped: ${reason}`,
    observedGeneration: session.metadata.generation,
  });
  try {
    await deps.sessionsApi.patchStatus(name, { phase: 'Stopping', conditions });
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  deps.events.record(session, 'Normal', 'Stopped', `session stopped: ${reason}`);
  return deps.sessionsApi.delete(name);
}

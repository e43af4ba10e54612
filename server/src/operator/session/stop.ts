import { isConflict, isNotFound } from '../../kube/client.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { ANNOTATIONS } from '../../model/api-group.js';
import type { Session } from '../../model/session.js';
import type { EventSink } from '../runtime/events.js';

export interface StopSessionDeps {
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'delete'>;
  events: EventSink;
}

/**
 * Stops a session with a reason (idle, lifetime, its workspace deleted): the reason goes into the
 * stop-reason annotation (with `annotations`, e.g. where the work was saved, in the same write; only
 * on the session read, by its uid, never on a new one of the same name) and a `Stopped` Event, then
 * the Session is deleted; its finalizer writes the reason into status (phase Stopping, Ready False
 * with reason Stopping) and removes the route. The session stays active until it is being deleted, so
 * its instance is not released before. False when the session was gone or replaced already.
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
      metadata: {
        uid: session.metadata.uid,
        annotations: { ...annotations, [ANNOTATIONS.stopReason]: reason },
      },
    });
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return false;
    throw error;
  }
  deps.events.record(session, 'Normal', 'Stopped', `session stopped: ${reason}`);
  return deps.sessionsApi.delete(name);
}

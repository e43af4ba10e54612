import { isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { ANNOTATIONS, SESSION_FINALIZER } from '../../model/api-group.js';
import { setCondition } from '../../model/conditions.js';
import {
  isSessionFailed,
  isSessionStopping,
  SessionCondition,
  SessionReadyReason,
  sessionPhase,
  type Session,
} from '../../model/session.js';
import type { OperatorConfig } from '../config.js';
import { routePath } from '../manifests.js';
import type { RouteTable } from '../routes/routes.js';
import { finalizersOf } from '../runtime/objects.js';
import { Delay, RetryLater } from '../runtime/outcome.js';
import { writeStatusOnce } from '../runtime/status.js';
import type { DataInjector } from './injection.js';

/** Finalizer of a Session (model/api-group.ts): its path in the shared Ingress is removed first. */
export { SESSION_FINALIZER };
/** Annotation recording the shared Ingress the session's path was added to, for clean-up. */
export const ROUTE_ANNOTATION = 'ide-cloud.io/route';

/**
 * Takes the session's path out of every shared Ingress that holds it: the one its annotation names
 * and those the Ingress cache shows it in. The annotation is written after the status on a warm
 * launch (session/steps/decision.ts), so a crash between the route and that write leaves a route no annotation
 * names: the cache finds it. A path neither shows writes nothing.
 */
export async function removeSessionRoute(
  deps: { config: Pick<OperatorConfig, 'sessionHost'>; routes: Pick<RouteTable, 'holding' | 'set'> },
  session: Session,
): Promise<void> {
  const host = deps.config.sessionHost;
  // A session routed before URLs had a key holds `/<name>/`.
  const paths = [routePath(session), `/${session.metadata.name}/`];
  const recorded = session.metadata.annotations?.[ROUTE_ANNOTATION];
  const ingresses = new Set([...(recorded ? [recorded] : []), ...paths.flatMap((p) => deps.routes.holding(host, p))]);
  for (const ingressName of ingresses) {
    for (const path of paths) await deps.routes.set(ingressName, { host, path, serviceName: '' }, false);
  }
}

export interface FinalizeDeps {
  config: Pick<OperatorConfig, 'sessionHost'>;
  sessions: Pick<Informer<Session>, 'observe'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'patchStatus' | 'mergePatch'>;
  routes: RouteTable;
  injector: Pick<DataInjector, 'forget'>;
  /** Tells the pool a session ended: its instance goes back. */
  poolChanged: (appDefinitionName: string) => void;
}

/**
 * A Session being deleted: Ready False with reason Stopping (phase Stopping), its path out of the shared Ingress, its injection
 * forgotten, then the finalizer removed (with the resourceVersion of the Stopping write). A lost
 * race is a RetryLater; any other error of a write, the status's included, is the pass's.
 */
export async function finalizeSession(deps: FinalizeDeps, session: Session): Promise<void> {
  const name = session.metadata.name;
  if (!finalizersOf(session).includes(SESSION_FINALIZER)) return;
  if (!isSessionStopping(session) && !isSessionFailed(session)) {
    // The answer's resourceVersion is the one the finalizer's removal below must carry. A session
    // already gone still has its route removed.
    const conditions = setCondition(session.status?.conditions, {
      type: SessionCondition.ready,
      status: 'False',
      reason: SessionReadyReason.stopping,
      // A stop says why (session/stop.ts writes its reason on the session before the delete).
      message: stopMessage(session),
      observedGeneration: session.metadata.generation,
    });
    const stopping = await writeStatusOnce({ api: deps.sessionsApi, cache: deps.sessions }, name, {
      previous: undefined,
      next: { phase: sessionPhase({ conditions }), conditions },
      resourceVersion: session.metadata.resourceVersion,
    });
    if (stopping.kind === 'conflict')
      throw new RetryLater('session changed while it was marked Stopping', Delay.conflict);
    if (stopping.kind === 'written') session.metadata.resourceVersion = stopping.object.metadata.resourceVersion;
  }
  await removeSessionRoute(deps, session);
  deps.injector.forget(session.metadata.uid ?? name);
  try {
    await deps.sessionsApi.mergePatch(name, {
      metadata: {
        finalizers: finalizersOf(session).filter((f) => f !== SESSION_FINALIZER),
        resourceVersion: session.metadata.resourceVersion,
      },
    });
  } catch (error) {
    if (isConflict(error)) throw new RetryLater('session changed while its finalizer was removed', Delay.conflict);
    if (!isNotFound(error)) throw error;
  }
  deps.poolChanged(session.spec.appDefinition);
}

function stopMessage(session: Session): string {
  const reason = session.metadata.annotations?.[ANNOTATIONS.stopReason];
  return reason ? `stopped: ${reason}` : 'the session is being deleted';
}

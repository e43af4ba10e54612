import { SESSION_FINALIZER } from '../../../model/api-group.js';
import { SessionCondition, SessionRoutedReason } from '../../../model/session.js';
import { routePath } from '../../manifests.js';
import { finalizersOf } from '../../runtime/objects.js';
import type { GuardedStep, ServedStep } from './context.js';

/**
 * The route's write beside the claim of warm instance `instanceName` (step 1): the two writes go
 * together instead of one after the other. It never rejects: whatever it did not make, or made for
 * an instance the claim did not get, the route step (5) makes or points again. Until then the path
 * leads to an instance not claimed for the session, whose proxy admits no one of it, and the session
 * has no URL yet. Only for a session with its finalizer, which takes the path out whatever it leads to
 * (a path to an instance the session never held is no pool's to remove).
 */
export function routeBesideClaim(step: GuardedStep, instanceName: string): void {
  const { deps, session, appDefinition } = step;
  if (!finalizersOf(session).includes(SESSION_FINALIZER)) return;
  step.routing ??= deps.routes
    .set(
      appDefinition.spec.ingressname,
      { host: deps.config.sessionHost, path: routePath(session), serviceName: instanceName },
      true,
    )
    .catch(() => undefined);
}

/** 5. Route: the session's path in its app definition's shared Ingress (routes/routes.ts). */
export async function route(step: ServedStep): Promise<void> {
  const { deps, session, pass, appDefinition, workload } = step;
  const ingressName = appDefinition.spec.ingressname;
  const path = routePath(session);
  // Written beside the claim: a second write only if it did not land where the workload is.
  await step.routing;
  await deps.routes.set(ingressName, { host: deps.config.sessionHost, path, serviceName: workload.backend }, true);
  pass.condition({
    type: SessionCondition.routed,
    status: 'True',
    reason: SessionRoutedReason.routeAdded,
    message: `path ${path} in ingress ${ingressName}`,
  });
}

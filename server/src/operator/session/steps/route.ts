import { SessionCondition, SessionRoutedReason } from '../../../model/session.js';
import { routePath } from '../../manifests.js';
import type { GuardedStep, ServedStep } from './context.js';

/** Writes the session's path in its app definition's shared Ingress, to the Service `backend`. */
function writeRoute({ deps, session, appDefinition }: GuardedStep, backend: string): Promise<void> {
  const entry = { host: deps.config.sessionHost, path: routePath(session), serviceName: backend };
  return deps.routes.set(appDefinition.spec.ingressname, entry, true);
}

/**
 * 1 (beside the claim). The route to the warm instance being claimed, sent with its claim: the
 * route's write no longer waits for the claim's answer. The session's path may so point for a moment
 * at an instance another session won; nobody has its URL yet, the instance's proxy admits only its
 * own user, and the next candidate's route is written after this one, so the last one stands. A pass
 * always waits for these writes before it ends (`routeWritten`): a later pass, or the finalizer,
 * finds them in the cache.
 */
export function routeBeside(step: GuardedStep, backend: string): void {
  const before = step.routing?.written ?? Promise.resolve();
  const written = before.catch(() => undefined).then(() => writeRoute(step, backend));
  // Awaited by the route step or at the end of the pass; never an unhandled rejection meanwhile.
  written.catch(() => undefined);
  step.routing = { backend, written };
}

/** Settles once every route write this pass sent beside a claim is answered. */
export async function routeWritten(step: Pick<GuardedStep, 'routing'>): Promise<void> {
  await step.routing?.written.catch(() => undefined);
}

/** 5. Route: the session's path in its app definition's shared Ingress (routes/routes.ts). */
export async function route(step: ServedStep): Promise<void> {
  const { pass, appDefinition, workload, routing } = step;
  if (routing?.backend === workload.backend) await routing.written;
  else {
    await routeWritten(step);
    await writeRoute(step, workload.backend);
  }
  pass.condition({
    type: SessionCondition.routed,
    status: 'True',
    reason: SessionRoutedReason.routeAdded,
    message: `path ${routePath(step.session)} in ingress ${appDefinition.spec.ingressname}`,
  });
}

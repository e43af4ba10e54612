import { SessionCondition, SessionRoutedReason } from '../../../model/session.js';
import { routePath } from '../../manifests.js';
import type { ServedStep, StepContext } from './context.js';

/** 5. Route: the session's path in its app definition's shared Ingress (routes/routes.ts). */
export async function route(step: ServedStep): Promise<void> {
  const { session, pass, appDefinition, workload } = step;
  await routeTo(step, appDefinition.spec.ingressname, workload.backend);
  pass.condition({
    type: SessionCondition.routed,
    status: 'True',
    reason: SessionRoutedReason.routeAdded,
    message: `path ${routePath(session)} in ingress ${appDefinition.spec.ingressname}`,
  });
}

/**
 * The session's path to `backend` (a Service) in Ingress `ingressName`. Also written beside a
 * reservation, to the instance it aims at (steps/decision.ts): step 5 finds it in place then.
 */
export async function routeTo({ deps, session }: StepContext, ingressName: string, backend: string): Promise<void> {
  await deps.routes.set(
    ingressName,
    { host: deps.config.sessionHost, path: routePath(session), serviceName: backend },
    true,
  );
}

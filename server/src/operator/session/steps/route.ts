import { SessionCondition, SessionRoutedReason } from '../../../model/session.js';
import { routePath } from '../../manifests.js';
import type { ServedStep } from './context.js';

/** 5. Route: the session's path in its app definition's shared Ingress (routes/routes.ts). */
export async function route({ deps, session, pass, appDefinition, workload }: ServedStep): Promise<void> {
  const ingressName = appDefinition.spec.ingressname;
  const path = routePath(session);
  await deps.routes.set(ingressName, { host: deps.config.sessionHost, path, serviceName: workload.backend }, true);
  pass.condition({
    type: SessionCondition.routed,
    status: 'True',
    reason: SessionRoutedReason.routeAdded,
    message: `path ${path} in ingress ${ingressName}`,
  });
}

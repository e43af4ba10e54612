import type * as k8s from '@kubernetes/client-node';
import { undefinedIfNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import { LABELS } from '../../model/api-group.js';
import type { Session } from '../../model/session.js';
import type { OperatorConfig } from '../config.js';
import { COMPONENT, sessionEnvSecretName } from '../manifests.js';
import type { RouteTable } from '../routes/routes.js';
import { removeSessionRoute } from './finalize.js';
import { lazySessionPods } from './own-workload.js';

export interface ReleaseDeps {
  namespace: string;
  config: Pick<OperatorConfig, 'sessionHost'>;
  deployments: Pick<Informer<k8s.V1Deployment>, 'list'>;
  replicaSets: Pick<Informer<k8s.V1ReplicaSet>, 'list'>;
  pods: Pick<Informer<k8s.V1Pod>, 'byIndex'>;
  services: Pick<Informer<k8s.V1Service>, 'list'>;
  objects: Pick<k8s.KubernetesObjectApi, 'delete'>;
  routes: RouteTable;
}

/**
 * A Failed session keeps its status (and its Session object) for people to read, but nothing that
 * runs or routes: its path leaves the shared Ingress, and a lazy session's pod (or an earlier
 * operator's ReplicaSet), Deployments and Services (the IDE's and its sidecars') and its Secret of
 * values are deleted. A warm instance it held goes
 * back to the pool (pool/reconciler.ts). Level-based: each pass of a Failed session deletes what the
 * caches still show, so a session with nothing left (a refusal) costs no API call.
 */
export async function releaseFailedSession(deps: ReleaseDeps, session: Session): Promise<void> {
  const name = session.metadata.name;
  await removeSessionRoute(deps, session);
  const owned = (o: k8s.V1ReplicaSet | k8s.V1Deployment | k8s.V1Service) => {
    const labels = o.metadata?.labels ?? {};
    return (
      labels[LABELS.session] === name &&
      labels[LABELS.component] !== COMPONENT.poolInstance &&
      !o.metadata?.deletionTimestamp
    );
  };
  const replicaSets = deps.replicaSets.list().filter(owned);
  const deployments = deps.deployments.list().filter(owned);
  const services = deps.services.list().filter(owned);
  const pods = lazySessionPods(deps.pods, session).filter((p) => !p.metadata?.deletionTimestamp);
  if (pods.length + replicaSets.length + deployments.length + services.length === 0) return;
  const meta = (n: string) => ({ name: n, namespace: deps.namespace });
  const doomed: k8s.KubernetesObject[] = [
    ...pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', metadata: meta(p.metadata!.name!) })),
    ...replicaSets.map((r) => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: meta(r.metadata!.name!) })),
    ...deployments.map((d) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta(d.metadata!.name!) })),
    ...services.map((s) => ({ apiVersion: 'v1', kind: 'Service', metadata: meta(s.metadata!.name!) })),
    { apiVersion: 'v1', kind: 'Secret', metadata: meta(sessionEnvSecretName(name)) },
  ];
  await Promise.all(
    doomed.map((o) =>
      deps.objects.delete(o, undefined, undefined, undefined, undefined, 'Background').catch(undefinedIfNotFound),
    ),
  );
}

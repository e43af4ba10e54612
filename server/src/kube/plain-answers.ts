import * as k8s from '@kubernetes/client-node';

/**
 * Clients for the writes whose answers are large, or come with every launch: a shared Ingress (every
 * session's path), a warm instance's Deployment and its reservation (a launch's claim). The generated
 * clients copy every answer through their ObjectSerializer, by the type tree, at many times the cost
 * of parsing it: on a shared Ingress of a few hundred paths it was the operator's largest CPU cost of
 * a route. These make the same requests through the generic object endpoints (CustomObjectsApi: any
 * group's path) and answer the parsed JSON, as the watches deliver objects (timestamps as strings,
 * whatever the generated types say). Errors are the same ApiException.
 */
type Resource = { group: string; version: string; plural: string };
type Options = Parameters<k8s.CustomObjectsApi['getNamespacedCustomObject']>[1];
type Named = { name: string; namespace: string };
type Written = { namespace: string; body: object };

/** The read, create, replace and delete of one resource's objects, answered as parsed JSON. */
function plainObjects<T>(kc: k8s.KubeConfig, resource: Resource) {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    read: (param: Named, options?: Options) =>
      api.getNamespacedCustomObject({ ...param, ...resource }, options) as Promise<T>,
    create: (param: Written, options?: Options) =>
      api.createNamespacedCustomObject({ ...param, ...resource }, options) as Promise<T>,
    replace: (param: Named & Written, options?: Options) =>
      api.replaceNamespacedCustomObject({ ...param, ...resource }, options) as Promise<T>,
    delete: (param: Named & { body?: k8s.V1DeleteOptions }, options?: Options) =>
      api.deleteNamespacedCustomObject({ ...param, ...resource }, options) as Promise<k8s.V1Status>,
  };
}

export type IngressClient = Pick<
  k8s.NetworkingV1Api,
  'readNamespacedIngress' | 'createNamespacedIngress' | 'replaceNamespacedIngress' | 'deleteNamespacedIngress'
>;

export function plainIngresses(kc: k8s.KubeConfig): IngressClient {
  const o = plainObjects<k8s.V1Ingress>(kc, { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses' });
  return {
    readNamespacedIngress: o.read,
    createNamespacedIngress: o.create,
    replaceNamespacedIngress: o.replace,
    deleteNamespacedIngress: o.delete,
  };
}

export type DeploymentClient = Pick<
  k8s.AppsV1Api,
  'replaceNamespacedDeployment' | 'createNamespacedDeployment' | 'deleteNamespacedDeployment'
>;

/** The warm instances' Deployment writes (pool/instances.ts): the return to the pool is a replace. */
export function plainDeployments(kc: k8s.KubeConfig): DeploymentClient {
  const o = plainObjects<k8s.V1Deployment>(kc, { group: 'apps', version: 'v1', plural: 'deployments' });
  return {
    replaceNamespacedDeployment: o.replace,
    createNamespacedDeployment: o.create,
    deleteNamespacedDeployment: o.delete,
  };
}

export type LeaseClient = Pick<
  k8s.CoordinationV1Api,
  'replaceNamespacedLease' | 'createNamespacedLease' | 'deleteNamespacedLease'
>;

/** The warm instances' reservations (pool/instances.ts): the claim and the release are replaces. */
export function plainLeases(kc: k8s.KubeConfig): LeaseClient {
  const o = plainObjects<k8s.V1Lease>(kc, { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' });
  return { replaceNamespacedLease: o.replace, createNamespacedLease: o.create, deleteNamespacedLease: o.delete };
}

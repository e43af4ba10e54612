import * as k8s from '@kubernetes/client-node';

/**
 * Clients for the writes whose answers are large: a shared Ingress (every session's path) and a warm
 * instance's Deployment. The generated clients copy every answer through their ObjectSerializer, by
 * the type tree, at many times the cost of parsing it: on a shared Ingress of a few hundred paths it
 * was the operator's largest CPU cost of a route. These make the same requests through the generic
 * object endpoints (CustomObjectsApi: any group's path) and answer the parsed JSON, as the watches
 * deliver objects (timestamps as strings, whatever the generated types say). Errors are the same
 * ApiException.
 */
const INGRESSES = { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses' } as const;
const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' } as const;

export type IngressClient = Pick<
  k8s.NetworkingV1Api,
  'readNamespacedIngress' | 'createNamespacedIngress' | 'replaceNamespacedIngress' | 'deleteNamespacedIngress'
>;

export function plainIngresses(kc: k8s.KubeConfig): IngressClient {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    readNamespacedIngress: (param, options) =>
      api.getNamespacedCustomObject({ ...param, ...INGRESSES }, options) as Promise<k8s.V1Ingress>,
    createNamespacedIngress: (param, options) =>
      api.createNamespacedCustomObject({ ...param, ...INGRESSES }, options) as Promise<k8s.V1Ingress>,
    replaceNamespacedIngress: (param, options) =>
      api.replaceNamespacedCustomObject({ ...param, ...INGRESSES }, options) as Promise<k8s.V1Ingress>,
    deleteNamespacedIngress: (param, options) =>
      api.deleteNamespacedCustomObject({ ...param, ...INGRESSES }, options) as Promise<k8s.V1Status>,
  };
}

export type DeploymentClient = Pick<
  k8s.AppsV1Api,
  'replaceNamespacedDeployment' | 'createNamespacedDeployment' | 'deleteNamespacedDeployment'
>;

/** The warm instances' Deployment writes (pool/instances.ts): the claim and the return are replaces. */
export function plainDeployments(kc: k8s.KubeConfig): DeploymentClient {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    replaceNamespacedDeployment: (param, options) =>
      api.replaceNamespacedCustomObject({ ...param, ...DEPLOYMENTS }, options) as Promise<k8s.V1Deployment>,
    createNamespacedDeployment: (param, options) =>
      api.createNamespacedCustomObject({ ...param, ...DEPLOYMENTS }, options) as Promise<k8s.V1Deployment>,
    deleteNamespacedDeployment: (param, options) =>
      api.deleteNamespacedCustomObject({ ...param, ...DEPLOYMENTS }, options) as Promise<k8s.V1Status>,
  };
}

import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ideCloudResources, type IdeCloudResources } from '../kube/resources.js';
import type { AppDefinition } from '../model/app-definition.js';
import type { OperatorCache } from './runtime/cache.js';
import type { OperatorConfig } from './config.js';
import { EventRecorder } from './runtime/events.js';
import { RouteAppender } from './routes/ingress.js';
import type { Logger } from './runtime/logger.js';

/** The collaborators every reconciler uses; built once by the composition root (operator.ts). */
export interface OperatorContext {
  kc: k8s.KubeConfig;
  config: OperatorConfig;
  namespace: string;
  resources: IdeCloudResources;
  /** What reconcilers read: informer caches, never lists of the API server. */
  cache: OperatorCache;
  core: k8s.CoreV1Api;
  apps: k8s.AppsV1Api;
  net: k8s.NetworkingV1Api;
  objects: k8s.KubernetesObjectApi;
  events: EventRecorder;
  /** Batches path additions to the shared Ingresses. */
  routes: RouteAppender;
  log: Logger;
}

export function createContext(
  kc: k8s.KubeConfig,
  config: OperatorConfig,
  log: Logger,
  cache: OperatorCache,
): OperatorContext {
  const ctx: Omit<OperatorContext, 'routes'> = {
    kc,
    cache,
    config,
    namespace: config.namespace,
    resources: ideCloudResources(kc, config.namespace),
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    net: kc.makeApiClient(k8s.NetworkingV1Api),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    events: new EventRecorder(kc, 'ide-cloud-operator', log),
    log,
  };
  return { ...ctx, routes: new RouteAppender(ctx) };
}

/** The AppDefinition an object names (its spec.name equals its resource name, a CRD rule); a miss is confirmed. */
export function findAppDefinition(ctx: OperatorContext, name: string): Promise<AppDefinition | undefined> {
  return ctx.cache.appDefinitions.find(name, (n) => ctx.resources.appDefinitions.find(n));
}

/** A Deployment whose current template runs ready. */
export function deploymentReady(d: k8s.V1Deployment | undefined): boolean {
  if (!d?.status) return false;
  const generation = d.metadata?.generation ?? 0;
  return (
    (d.status.observedGeneration ?? 0) >= generation &&
    (d.status.updatedReplicas ?? 0) >= 1 &&
    (d.status.readyReplicas ?? 0) >= 1 &&
    (d.status.replicas ?? 0) === (d.status.updatedReplicas ?? 0)
  );
}

export function finalizersOf(object: { metadata: object }): string[] {
  const f = (object.metadata as { finalizers?: unknown }).finalizers;
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Whether two statuses say the same: as JSON (undefined fields dropped), whatever the key order. The
 * API server answers with sorted keys, so comparing serialised text would see a change on every pass
 * and write the status again.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a ?? {})), JSON.parse(JSON.stringify(b ?? {})));
}

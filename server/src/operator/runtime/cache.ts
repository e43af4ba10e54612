import type * as k8s from '@kubernetes/client-node';
import { Informer, type IndexFunc } from '../../kube/informer.js';
import { API_VERSION, LABELS } from '../../model/api-group.js';
import type { AppDefinition } from '../../model/app-definition.js';
import { gateIndexers } from '../../model/admission.js';
import { limitIndexers } from '../../model/limits.js';
import type { Session } from '../../model/session.js';
import type { Workspace } from '../../model/workspace.js';
import { COMPONENT } from '../manifests.js';
import { OPERATOR_MANAGER } from '../../model/api-group.js';

/**
 * The operator's view of the cluster: one informer per kind it reads, shared by every reconciler
 * (controller-runtime's cache). Reconcilers read here, never list the API server; what they write
 * they pass to `observe` so their next read sees it.
 */
export interface OperatorCache {
  sessions: Informer<Session>;
  appDefinitions: Informer<AppDefinition>;
  workspaces: Informer<Workspace>;
  /** Deployments IDE Cloud manages: warm instances, sidecars, and lazy sessions an older operator started. */
  deployments: Informer<k8s.V1Deployment>;
  /** The warm instances' reservations (Leases named after them): whom each instance serves, if anyone. */
  reservations: Informer<k8s.V1Lease>;
  /** The ReplicaSets an earlier operator made for lazy sessions, metadata only (their pods tell their readiness). */
  replicaSets: Informer<k8s.V1ReplicaSet>;
  /** Sessions' config stores (ConfigMaps), metadata only: one deleted under a running session is made again. */
  configStores: Informer<k8s.V1ConfigMap>;
  /** The shared session Ingresses. */
  ingresses: Informer<k8s.V1Ingress>;
  /**
   * Services IDE Cloud manages, metadata only: a lazy session's is applied again only when it is gone,
   * and a failed session's are found by their labels (session/release.ts).
   */
  services: Informer<k8s.V1Service>;
  /**
   * Pods IDE Cloud manages, only what tells their start (labels, scheduling, container states): a
   * starting session's pods are looked at for a start that cannot succeed (session/start-failure.ts).
   */
  pods: Informer<k8s.V1Pod>;
  /**
   * Claims IDE Cloud manages (workspaces', warm instances', standby), metadata and phase only: whose
   * each one is, that it exists, whether it is bound.
   */
  claims: Informer<k8s.V1PersistentVolumeClaim>;
}

/**
 * The indexes of the operator's informers (Informer.byIndex): what a launch looks up is found by key,
 * so its cost does not grow with the sessions, the pools and their pods.
 */
export const INDEX = {
  /** Deployments, reservations, pods and claims by each of their labels, as `labelKey(key, value)`. */
  label: 'label',
  /**
   * Sessions by `spec.workspace` (and by what the limits count, model/limits.ts LIMIT_INDEX; those
   * that may wait at the lazy-start gate, model/admission.ts GATE_INDEX).
   */
  workspace: 'workspace',
  /**
   * Warm instances' reservations that hold no session, not being deleted, by the value of their app
   * definition's label: what a claim chooses from (pool/instances.ts), so that a launch looks at the
   * free instances only, not at every instance of its pool.
   */
  freeInstance: 'free-instance',
} as const;

/** The key of a label in the `label` index: a selector's term. */
export function labelKey(key: string, value: string): string {
  return `${key}=${value}`;
}

/** The indexes of the Deployments, reservations, pods and claims caches. */
export const labelIndexers: Record<string, IndexFunc<{ metadata?: k8s.V1ObjectMeta }>> = {
  [INDEX.label]: (o) => Object.entries(o.metadata?.labels ?? {}).map(([key, value]) => labelKey(key, value)),
};

/** A warm instance's Deployment, not being deleted. */
export function isLiveInstance(d: k8s.V1Deployment): boolean {
  return d.metadata?.labels?.[LABELS.component] === COMPONENT.poolInstance && !d.metadata?.deletionTimestamp;
}

/** A warm instance's reservation that holds no session, not being deleted. */
export function isFreeReservation(lease: k8s.V1Lease): boolean {
  return !lease.metadata?.labels?.[LABELS.session] && !lease.metadata?.deletionTimestamp;
}

/** The indexes of the reservations cache: by label, and the free warm instances (`INDEX.freeInstance`). */
export const reservationIndexers: Record<string, IndexFunc<k8s.V1Lease>> = {
  ...labelIndexers,
  [INDEX.freeInstance]: (lease) =>
    isFreeReservation(lease) ? [lease.metadata?.labels?.[LABELS.appDefinition] ?? ''] : [],
};

/** The indexes of the sessions cache. */
export const sessionIndexers: Record<string, IndexFunc<Session>> = {
  ...limitIndexers,
  ...gateIndexers,
  [INDEX.workspace]: (s) => (s.spec.workspace ? [s.spec.workspace] : []),
};

type CacheOptions = { namespace: string; rewatchIntervalMs: number; onError: (path: string, error: unknown) => void };
type Named<T> = T & { metadata?: { name?: string } };

/** Makes informers of the namespace's `path`: what each lists (`labelSelector`), keeps (`transform`) and indexes. */
function informerFactory(kc: k8s.KubeConfig, options: CacheOptions) {
  return <T extends object>(
    path: string,
    apiVersion: string,
    kind: string,
    what: { labelSelector?: string; transform?: (object: T) => T; indexers?: Record<string, IndexFunc<T>> } = {},
  ) =>
    new Informer<Named<T>>(kc, {
      path,
      apiVersion,
      kind,
      namespace: options.namespace,
      labelSelector: what.labelSelector,
      rewatchIntervalMs: options.rewatchIntervalMs,
      onError: (error) => options.onError(path, error),
      transform: what.transform as ((object: Named<T>) => Named<T>) | undefined,
      indexers: what.indexers as Record<string, IndexFunc<Named<T>>> | undefined,
    });
}

export function createCache(kc: k8s.KubeConfig, options: CacheOptions): OperatorCache {
  const { namespace } = options;
  const managed = `${LABELS.managedBy}=${OPERATOR_MANAGER}`;
  const informer = informerFactory(kc, options);
  const base = `/apis/${API_VERSION}/namespaces/${namespace}`;
  const core = `/api/v1/namespaces/${namespace}`;
  return {
    sessions: informer<Session>(`${base}/sessions`, API_VERSION, 'Session', { indexers: sessionIndexers }),
    appDefinitions: informer<AppDefinition>(`${base}/appdefinitions`, API_VERSION, 'AppDefinition'),
    workspaces: informer<Workspace>(`${base}/workspaces`, API_VERSION, 'Workspace'),
    deployments: informer<k8s.V1Deployment>(
      `/apis/apps/v1/namespaces/${namespace}/deployments`,
      'apps/v1',
      'Deployment',
      {
        labelSelector: managed,
        transform: withoutTemplateUnlessPoolInstance,
        indexers: labelIndexers,
      },
    ),
    reservations: informer<k8s.V1Lease>(
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      'coordination.k8s.io/v1',
      'Lease',
      {
        labelSelector: `${managed},${labelKey(LABELS.component, COMPONENT.poolInstance)}`,
        indexers: reservationIndexers,
      },
    ),
    // The `session` label: not the ReplicaSets the deployment controller makes for warm instances and
    // sidecars (it does make them for an older operator's lazy Deployments: looked up by name, never seen).
    replicaSets: informer<k8s.V1ReplicaSet>(
      `/apis/apps/v1/namespaces/${namespace}/replicasets`,
      'apps/v1',
      'ReplicaSet',
      {
        labelSelector: `${managed},${LABELS.session}`,
        transform: metadataOnly,
      },
    ),
    services: informer<k8s.V1Service>(`${core}/services`, 'v1', 'Service', {
      labelSelector: managed,
      transform: metadataOnly,
    }),
    pods: informer<k8s.V1Pod>(`${core}/pods`, 'v1', 'Pod', {
      labelSelector: managed,
      transform: startStateOnly,
      indexers: labelIndexers,
    }),
    claims: informer<k8s.V1PersistentVolumeClaim>(`${core}/persistentvolumeclaims`, 'v1', 'PersistentVolumeClaim', {
      labelSelector: managed,
      transform: (claim) => ({ ...metadataOnly(claim), status: { phase: claim.status?.phase } }),
      indexers: labelIndexers,
    }),
    configStores: informer<k8s.V1ConfigMap>(`${core}/configmaps`, 'v1', 'ConfigMap', {
      labelSelector: `${managed},${labelKey(LABELS.component, COMPONENT.session)}`,
      transform: metadataOnly,
    }),
    ingresses: informer<k8s.V1Ingress>(
      `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses`,
      'networking.k8s.io/v1',
      'Ingress',
      { labelSelector: managed },
    ),
  } as OperatorCache;
}

export function informersOf(cache: OperatorCache): Informer[] {
  return Object.values(cache) as Informer[];
}

/**
 * A warm instance's Deployment is kept whole (it is returned to the pool by an update of the object read); of
 * any other (a lazy session's, a sidecar's) the operator reads only metadata and status, so its pod
 * template, most of its size, is not kept.
 */
function withoutTemplateUnlessPoolInstance(d: k8s.V1Deployment): k8s.V1Deployment {
  if (d.metadata?.labels?.[LABELS.component] === COMPONENT.poolInstance || !d.spec) return d;
  const { template: _template, ...spec } = d.spec;
  void _template;
  return { ...d, spec: spec as k8s.V1DeploymentSpec };
}

function metadataOnly<T extends { metadata?: k8s.V1ObjectMeta }>(object: T): T {
  const { name, namespace, uid, resourceVersion, labels, ownerReferences, creationTimestamp, deletionTimestamp } =
    object.metadata ?? {};
  return {
    metadata: { name, namespace, uid, resourceVersion, labels, ownerReferences, creationTimestamp, deletionTimestamp },
  } as T;
}

/** Of a pod, the cache keeps what its start state is read from: no spec, no addresses. */
function startStateOnly(pod: k8s.V1Pod): k8s.V1Pod {
  const { name, namespace, uid, resourceVersion, labels, creationTimestamp, deletionTimestamp } = pod.metadata ?? {};
  const status = pod.status ?? {};
  const container = (c: k8s.V1ContainerStatus): k8s.V1ContainerStatus => ({
    name: c.name,
    image: c.image,
    imageID: c.imageID,
    ready: c.ready,
    restartCount: c.restartCount,
    state: c.state,
    lastState: c.lastState,
  });
  return {
    metadata: { name, namespace, uid, resourceVersion, labels, creationTimestamp, deletionTimestamp },
    status: {
      phase: status.phase,
      // Where the session's data bridge answers (session/session-bridge.ts).
      podIP: status.podIP,
      startTime: status.startTime,
      nominatedNodeName: status.nominatedNodeName,
      conditions: status.conditions,
      initContainerStatuses: status.initContainerStatuses?.map(container),
      containerStatuses: status.containerStatuses?.map(container),
    },
  };
}

/**
 * What the steps of a Session's pass share: their collaborators (SessionStepDeps) and the one step
 * context each step is given, which grows as the pass goes down (guards → workload → route, readiness).
 */
import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../../kube/informer.js';
import type { CustomResourceClient } from '../../../kube/resources.js';
import type { AppDefinition } from '../../../model/app-definition.js';
import type { EnvSourceKind } from '../../../model/session-env.js';
import type { Session } from '../../../model/session.js';
import type { Workspace } from '../../../model/workspace.js';
import type { OperatorConfig } from '../../config.js';
import type { ClaimDeps } from '../../pool/claims.js';
import type { PoolInstance, PoolInstances } from '../../pool/instances.js';
import type { RouteTable } from '../../routes/routes.js';
import type { LazyStartGate } from '../admission.js';
import type { DataInjector } from '../injection.js';
import type { Pass } from '../status.js';

/** What the steps use: the caches they read, the clients they write with, and their collaborators. */
export interface SessionStepDeps {
  config: OperatorConfig;
  namespace: string;
  sessions: Informer<Session>;
  appDefinitions: Pick<Informer<AppDefinition>, 'find'>;
  workspaces: Pick<Informer<Workspace>, 'find'>;
  deployments: Pick<Informer<k8s.V1Deployment>, 'get' | 'observe'>;
  /** Lazy sessions' ReplicaSets that an earlier operator made (metadata). */
  replicaSets: Pick<Informer<k8s.V1ReplicaSet>, 'get'>;
  /** The pods IDE Cloud manages: a lazy session's own, and what a starting session's pods are in (session/start-failure.ts). */
  pods: Pick<Informer<k8s.V1Pod>, 'byIndex' | 'observe'>;
  services: Pick<Informer<k8s.V1Service>, 'get' | 'observe'>;
  /** The sessions' config stores: one gone is made again. */
  configStores: Pick<Informer<k8s.V1ConfigMap>, 'get' | 'observe'>;
  /** Confirm a cache miss: the service creates a workspace an instant before its session. */
  appDefinitionsApi: Pick<CustomResourceClient<'appDefinition'>, 'find'>;
  workspacesApi: Pick<CustomResourceClient<'workspace'>, 'find'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch'>;
  /** Applies config stores and a lazy session's objects. */
  objects: k8s.KubernetesObjectApi;
  pool: Pick<PoolInstances, 'findReservation' | 'reserve' | 'reservedFor'>;
  /** The claims IDE Cloud manages: the standby claims a new workspace's lazy start takes. */
  claims: ClaimDeps['claims'];
  core: Pick<k8s.CoreV1Api, 'patchNamespacedPersistentVolumeClaim'>;
  routes: RouteTable;
  injector: Pick<DataInjector, 'ensure' | 'state' | 'attempted' | 'follow'>;
  /** The metadata of a Secret or ConfigMap a session names for its environment (undefined: none such). */
  envSource: (kind: EnvSourceKind, name: string) => Promise<{ labels?: Record<string, string> } | undefined>;
  /**
   * Sessions this process let past the limits whose decision its cache does not show yet (until
   * their status or metadata write): counted by every later check, so two passes at once cannot both pass.
   */
  limitsPassed: Set<string>;
  /**
   * The session (uid) this process let claim a warm instance for each new workspace, until the
   * instance's reservation is in the cache: two passes at once never reserve two for one workspace.
   */
  newWorkspaceClaimants: Map<string, string>;
  /** The lazy-start gate (session/admission.ts); absent: lazy starts go at once. */
  admission?: LazyStartGate;
  /** The clock of the start deadline and the pull bound (ms since the epoch). */
  now?: () => number;
}

/** What the guards found. */
export interface Guarded {
  appDefinition: AppDefinition;
  /** The claim the session's pod mounts; a new workspace's lazy start may take a standby claim (step 1). */
  claimName?: string;
  /**
   * The session's workspace is new (a launch made it, no claim yet, no other session): a warm
   * instance serves it as it is, and the instance's claim becomes the workspace's; or, started
   * lazily, a standby claim becomes it.
   */
  newWorkspace?: Workspace;
}

/** What every step of a pass gets: its collaborators, the session as the pass read it, what the pass learnt. */
export interface StepContext {
  readonly deps: SessionStepDeps;
  readonly session: Session;
  readonly pass: Pass;
}

/** A pass past its guards: what they found, and what steps 1 and 2 add for the workload. */
export interface GuardedStep extends StepContext, Guarded {
  /** Step 1: the warm instance this pass reserved, as the reservation wrote it (the cache may not show it yet). */
  reserved?: PoolInstance;
  /** Step 2: the session's config store, when its app definition asks for one. */
  configStore?: string;
}

/**
 * What serves the session: the Service its route points to, and a warm instance's Deployment (a lazy
 * session's pod tells its own readiness).
 */
export interface Workload {
  eager: boolean;
  backend: string;
  deployment?: k8s.V1Deployment;
}

/** A pass that has its workload (step 3): what the environment, the route and the readiness look at. */
export interface ServedStep extends GuardedStep {
  readonly workload: Workload;
}

import * as k8s from '@kubernetes/client-node';
import { apiClientApart, describeFailure, loadKubeConfig, configureClient, readMetadata } from '../kube/client.js';
import { ideCloudResources, type IdeCloudResources } from '../kube/resources.js';
import { parseOperatorConfig, type OperatorConfig, type OperatorConfigInput } from './config.js';
import { BridgeSecrets } from './pool/bridge-secrets.js';
import { PoolInstances } from './pool/instances.js';
import { AppDefinitionReconciler } from './pool/reconciler.js';
import { wakeAppDefinitions } from './pool/watches.js';
import { Routes } from './routes/routes.js';
import { createCache, informersOf, type OperatorCache } from './runtime/cache.js';
import { EventRecorder, type EventsApi } from './runtime/events.js';
import { LeaderElector } from './runtime/leader-election.js';
import { createLogger, type Logger } from './runtime/logger.js';
import { Delay, type Reconciled } from './runtime/outcome.js';
import { WorkQueue } from './runtime/work-queue.js';
import { ActivityMonitor } from './session/activity.js';
import { LazyStartGate } from './session/admission.js';
import { DataInjector } from './session/injection.js';
import { SessionReconciler, type SessionReconcilerDeps } from './session/reconciler.js';
import { SessionBridge } from './session/session-bridge.js';
import { ArrivalOrder, wakeSessions } from './session/watches.js';
import { StandbyClaimsReconciler } from './standby/reconciler.js';
import { wakeStandbyClaims } from './standby/watches.js';
import { WorkspaceReconciler } from './workspace/reconciler.js';
import { wakeWorkspaces } from './workspace/watches.js';
import {
  plainDeployments,
  plainIngresses,
  plainLeases,
  type DeploymentClient,
  type IngressClient,
  type LeaseClient,
} from '../kube/plain-answers.js';

/**
 * The composition root: one set of API clients and caches, from which every collaborator gets the
 * narrow part it needs; the work queues, the leader election and the activity monitor are wired here.
 */
export interface OperatorOptions {
  /** A kubeconfig to use instead of config.kubeconfig / $KUBECONFIG / in-cluster. */
  kubeConfig?: k8s.KubeConfig;
  logger?: Logger;
  /** The calls Events are written with, instead of the API client's (a test's, to hold them). */
  eventsApi?: EventsApi;
}

export interface RunningOperator {
  readonly config: OperatorConfig;
  /** True while this instance leads (always true with leader election turned off). */
  isLeader(): boolean;
  /** Drops every watch connection, as a network failure would; the sources relist and rewatch. */
  dropWatches(): void;
  /**
   * Stops everything this operator started; a leader releases its lease unless `releaseLease` is
   * false (what a crash looks like to the standby: it takes over once the lease expires).
   */
  stop(options?: { releaseLease?: boolean }): Promise<void>;
}

/** The clients of the API server, made once from the kubeconfig; every collaborator gets a part. */
interface ApiClients {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  /** The warm instances' Deployments and reservations, the shared Ingresses: their answers as parsed JSON (kube/plain-answers.ts). */
  apps: DeploymentClient;
  leases: LeaseClient;
  net: IngressClient;
  objects: k8s.KubernetesObjectApi;
  resources: IdeCloudResources;
  events?: EventsApi;
}

function apiClients(kc: k8s.KubeConfig, namespace: string): ApiClients {
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: plainDeployments(kc),
    leases: plainLeases(kc),
    net: plainIngresses(kc),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    resources: ideCloudResources(kc, namespace),
  };
}

/** What the reconcilers are made of: the clients, the caches and the collaborators they share. */
interface Shared {
  clients: ApiClients;
  config: OperatorConfig;
  cache: OperatorCache;
  instances: PoolInstances;
  routes: Routes;
  events: EventRecorder;
  log: Logger;
}

/** The controllers that run while this instance leads, on caches of their own (filled anew at each start). */
class Controllers {
  private readonly cache: OperatorCache;
  private readonly queues: WorkQueue[] = [];
  private readonly injector: DataInjector;
  private readonly activity: ActivityMonitor;
  private readonly events: EventRecorder;
  private stopped = false;

  constructor(
    clients: ApiClients,
    private readonly config: OperatorConfig,
    private readonly log: Logger,
  ) {
    const cache = (this.cache = createCache(clients.kc, {
      namespace: config.namespace,
      rewatchIntervalMs: config.rewatchIntervalMs,
      onError: (path, error) => log.warn({ path, err: describeFailure(error) }, 'watch failed; restarting'),
    }));
    const events = (this.events = new EventRecorder(clients.events ?? clients.core, 'ide-cloud-operator', log));
    // At debug level each session pass is logged: which operator acted on a session, when two run.
    const arrivals = new ArrivalOrder();
    const sessionQueue = this.queue(
      'session',
      config.workers,
      (key) => {
        log.debug({ session: key }, 'session pass');
        return sessions.reconcile(key);
      },
      arrivals.rank,
    );
    const appQueue = this.queue('app definition', Math.min(2, config.workers), (key) => apps.reconcile(key));
    const workspaceQueue = this.queue('workspace', Math.min(2, config.workers), (key) => workspaces.reconcile(key));
    // Warm instances change together in a burst (claims, readiness): one app definition pass per burst.
    const poolChanged = (name: string) => appQueue.addAfter(name, Delay.poolPassBatch);
    // The injector wakes the session's reconciler when an injection ends.
    const { bridgeSecrets, ...pool } = poolAndRoutes(clients, config, cache);
    this.injector = new DataInjector(clients.core, config, (name) => sessionQueue.add(name), log, {
      pods: cache.pods,
      secrets: bridgeSecrets,
    });
    const shared: Shared = { clients, config, cache, events, log, ...pool };
    // Lazy starts at a rate, first come first served; a gate's wake-up is a pass of that session.
    const admission =
      config.lazyStartsPerSecond > 0
        ? new LazyStartGate({ perSecond: config.lazyStartsPerSecond, burst: config.lazyStartBurst }, (name) =>
            sessionQueue.add(name),
          )
        : undefined;
    const sessions = sessionReconciler(shared, { injector: this.injector, poolChanged, admission });
    const apps = appDefinitionReconciler(shared);
    const workspaces = workspaceReconciler(shared);
    this.activity = activityMonitor(shared);
    this.queues.push(sessionQueue, appQueue, workspaceQueue, standbyController(clients, config, cache, log));
    wakeSessions(cache, sessionQueue, this.injector, arrivals);
    wakeAppDefinitions(cache, appQueue, poolChanged);
    wakeWorkspaces(cache, workspaceQueue);
  }

  private queue(
    what: string,
    workers: number,
    reconcile: (key: string) => Promise<Reconciled>,
    rank?: (key: string) => number,
  ): WorkQueue {
    return new WorkQueue(reconcile, {
      workers,
      ...(rank ? { rank } : {}),
      onError: (key, error) => this.log.warn({ key, err: describeFailure(error) }, `${what} reconcile failed`),
    });
  }

  /** Caches first; workers start once every cache has synced, so no pass acts on a partial view. */
  async start(): Promise<void> {
    const informers = informersOf(this.cache);
    for (const i of informers) i.start();
    await Promise.all(informers.map((i) => i.waitForSync()));
    if (this.stopped) return;
    for (const q of this.queues) q.start();
    this.activity.start();
    this.log.info('controllers started');
  }

  dropWatches(): void {
    for (const i of informersOf(this.cache)) i.dropConnection();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.activity.stop();
    // Workers first: a non-leader must not go on reconciling while a list in progress ends.
    await Promise.all(this.queues.map((q) => q.stop()));
    this.injector.stop();
    await Promise.all(informersOf(this.cache).map((i) => i.stop()));
    await this.events.flush(this.config.apiRequestTimeoutMs);
    this.log.info('controllers stopped');
  }
}

/**
 * The warm instances and the shared Ingresses' routes, which several reconcilers use, and the
 * instances' bridge Secrets as the pool wrote them, which the injection reads.
 */
function poolAndRoutes(clients: ApiClients, config: OperatorConfig, cache: OperatorCache) {
  const { namespace } = config;
  const bridgeSecrets = new BridgeSecrets(clients.core, namespace);
  const instances = new PoolInstances({
    namespace,
    config,
    apps: clients.apps,
    leases: clients.leases,
    core: clients.core,
    objects: clients.objects,
    deployments: cache.deployments,
    reservations: cache.reservations,
    claims: cache.claims,
    secrets: bridgeSecrets,
  });
  const routes = new Routes({
    net: clients.net,
    namespace,
    ingresses: cache.ingresses,
    ingressClassName: config.ingressClassName,
    checkUrl: config.routeCheckUrl,
  });
  return { instances, routes, bridgeSecrets };
}

function sessionReconciler(
  { clients, config, cache, instances, routes, events, log }: Shared,
  wiring: Pick<SessionReconcilerDeps, 'injector' | 'poolChanged' | 'admission'>,
): SessionReconciler {
  const { namespace } = config;
  const { resources } = clients;
  return new SessionReconciler({
    ...wiring,
    config,
    namespace,
    limitsPassed: new Set(),
    newWorkspaceClaimants: new Map(),
    sessions: cache.sessions,
    appDefinitions: cache.appDefinitions,
    workspaces: cache.workspaces,
    deployments: cache.deployments,
    replicaSets: cache.replicaSets,
    pods: cache.pods,
    services: cache.services,
    configStores: cache.configStores,
    appDefinitionsApi: resources.appDefinitions,
    workspacesApi: resources.workspaces,
    sessionsApi: resources.sessions,
    objects: clients.objects,
    pool: instances,
    claims: cache.claims,
    core: clients.core,
    routes,
    envSource: (kind, name) => readMetadata(clients.core, namespace, kind, name),
    events,
    log,
  });
}

function appDefinitionReconciler({ clients, config, cache, instances, routes, log }: Shared): AppDefinitionReconciler {
  return new AppDefinitionReconciler({
    config,
    appDefinitions: cache.appDefinitions,
    sessions: cache.sessions,
    appDefinitionsApi: clients.resources.appDefinitions,
    instances,
    workspaces: cache.workspaces,
    ingresses: cache.ingresses,
    routes,
    log,
  });
}

function workspaceReconciler({ clients, config, cache, instances, events, log }: Shared): WorkspaceReconciler {
  return new WorkspaceReconciler({
    config,
    namespace: config.namespace,
    workspaces: cache.workspaces,
    sessions: cache.sessions,
    claims: cache.claims,
    pool: instances,
    workspacesApi: clients.resources.workspaces,
    sessionsApi: clients.resources.sessions,
    objects: clients.objects,
    core: clients.core,
    events,
    log,
  });
}

function activityMonitor({ clients, config, cache, events, log }: Shared): ActivityMonitor {
  return new ActivityMonitor({
    config,
    appDefinitions: cache.appDefinitions,
    sessions: cache.sessions,
    sessionsApi: clients.resources.sessions,
    bridges: new SessionBridge(clients.core, cache.pods, config.namespace, {
      requestMs: config.bridgeRequestTimeoutMs,
      saveMs: config.saveWorkTimeoutMs,
    }),
    events,
    log,
  });
}

/**
 * The standby claims' controller (standby/reconciler.ts): one work item, woken as standby/watches.ts says.
 */
function standbyController(clients: ApiClients, config: OperatorConfig, cache: OperatorCache, log: Logger): WorkQueue {
  const reconciler = new StandbyClaimsReconciler({
    namespace: config.namespace,
    config,
    claims: cache.claims,
    pods: cache.pods,
    core: clients.core,
    log,
  });
  const queue = new WorkQueue(() => reconciler.reconcile(), {
    workers: 1,
    onError: (_key, error) => log.warn({ err: describeFailure(error) }, 'standby claims reconcile failed'),
  });
  wakeStandbyClaims(cache, queue);
  return queue;
}

/**
 * Starts the operator for one namespace: it campaigns for the Lease and runs the controllers only
 * while it leads (a free Lease is taken before this resolves); with leader election turned off (a
 * test's or tool's explicit choice), it runs them at once.
 */
export async function startOperator(
  input: OperatorConfig | OperatorConfigInput,
  options: OperatorOptions = {},
): Promise<RunningOperator> {
  const config = parseOperatorConfig(input);
  const log = options.logger ?? createLogger();
  const kc = configureClient(options.kubeConfig ?? loadKubeConfig(config.kubeconfig), 'ide-cloud-operator', {
    requestTimeoutMs: config.apiRequestTimeoutMs,
  });
  const clients = { ...apiClients(kc, config.namespace), events: options.eventsApi };
  const operatorLog = log.child({ namespace: config.namespace, identity: config.identity });
  let controllers: Controllers | undefined;
  let chain: Promise<void> = Promise.resolve();
  const startControllers = () => {
    chain = chain.then(() => {
      if (controllers) return;
      controllers = new Controllers(clients, config, operatorLog);
      // Not awaited: the chain must not wait for the caches (a stop may come first).
      void controllers.start();
    });
    return chain;
  };
  const stopControllers = () => {
    chain = chain.then(async () => {
      const running = controllers;
      controllers = undefined;
      await running?.stop();
    });
    return chain;
  };

  let elector: LeaderElector | undefined;
  if (config.leaderElection) {
    elector = new LeaderElector(
      // Renewals never wait behind a burst's calls: the Lease would expire under load.
      apiClientApart(kc, k8s.CustomObjectsApi),
      {
        namespace: config.namespace,
        name: config.leaseName,
        identity: config.identity,
        leaseDurationMs: config.leaseDurationMs,
        renewIntervalMs: config.leaseRenewIntervalMs,
        onStartedLeading: startControllers,
        onStoppedLeading: stopControllers,
      },
      operatorLog,
    );
    // The first attempt takes a free Lease at once: a single replica starts without waiting.
    await elector.start();
  } else {
    await startControllers();
  }
  operatorLog.info(
    { eagerStart: config.eagerStart, leaderElection: config.leaderElection, leading: elector?.isLeader ?? true },
    'operator started',
  );

  return {
    config,
    isLeader: () => (elector ? elector.isLeader : true),
    dropWatches: () => controllers?.dropWatches(),
    async stop(stopOptions = {}) {
      if (elector) await elector.stop(stopOptions);
      await stopControllers();
      operatorLog.info('operator stopped');
    },
  };
}

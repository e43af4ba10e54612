import * as k8s from '@kubernetes/client-node';
import { describeFailure, loadKubeConfig, configureClient, readMetadata } from '../kube/client.js';
import { ideCloudResources, type IdeCloudResources } from '../kube/resources.js';
import { LABELS } from '../model/api-group.js';
import { isSessionFailed } from '../model/session.js';
import { parseOperatorConfig, type OperatorConfig, type OperatorConfigInput } from './config.js';
import { COMPONENT } from './manifests.js';
import { PoolInstances } from './pool/instances.js';
import { AppDefinitionReconciler } from './pool/reconciler.js';
import { Routes } from './routes/routes.js';
import { createCache, informersOf, type OperatorCache } from './runtime/cache.js';
import { EventRecorder, type EventsApi } from './runtime/events.js';
import { LeaderElector } from './runtime/leader-election.js';
import { createLogger, type Logger } from './runtime/logger.js';
import { Delay } from './runtime/outcome.js';
import { WorkQueue } from './runtime/work-queue.js';
import { ActivityMonitor } from './session/activity.js';
import { LazyStartGate } from './session/admission.js';
import { DataInjector } from './session/injection.js';
import { SessionReconciler } from './session/reconciler.js';
import { SessionBridge } from './session/session-bridge.js';
import { STANDBY_KEY, StandbyClaimsReconciler } from './standby/reconciler.js';
import { WorkspaceReconciler } from './workspace/reconciler.js';

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
  apps: k8s.AppsV1Api;
  net: k8s.NetworkingV1Api;
  custom: k8s.CustomObjectsApi;
  objects: k8s.KubernetesObjectApi;
  resources: IdeCloudResources;
  events?: EventsApi;
}

function apiClients(kc: k8s.KubeConfig, namespace: string): ApiClients {
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    net: kc.makeApiClient(k8s.NetworkingV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    resources: ideCloudResources(kc, namespace),
  };
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
    const { namespace } = config;
    const { resources } = clients;
    const cache = (this.cache = createCache(clients.kc, {
      namespace,
      rewatchIntervalMs: config.rewatchIntervalMs,
      onError: (path, error) => log.warn({ path, err: describeFailure(error) }, 'watch failed; restarting'),
    }));
    const events = (this.events = new EventRecorder(clients.events ?? clients.core, 'ide-cloud-operator', log));
    const onError = (what: string) => (key: string, error: unknown) =>
      log.warn({ key, err: describeFailure(error) }, `${what} reconcile failed`);
    // At debug level each session pass is logged: which operator acted on a session, when two run.
    const sessionQueue = new WorkQueue(
      (key) => {
        log.debug({ session: key }, 'session pass');
        return sessions.reconcile(key);
      },
      {
        workers: config.workers,
        onError: onError('session'),
      },
    );
    const appQueue = new WorkQueue((key) => apps.reconcile(key), {
      workers: Math.min(2, config.workers),
      onError: onError('app definition'),
    });
    const workspaceQueue = new WorkQueue((key) => workspaces.reconcile(key), {
      workers: Math.min(2, config.workers),
      onError: onError('workspace'),
    });
    // Pool counts change with every reservation: one app definition pass per burst, not per launch.
    const poolChanged = (name: string) => appQueue.addAfter(name, Delay.poolStatusBatch);
    // The injector wakes the session's reconciler when an injection ends.
    this.injector = new DataInjector(clients.core, config, (name) => sessionQueue.add(name), log);
    const instances = new PoolInstances({
      namespace,
      config,
      apps: clients.apps,
      core: clients.core,
      objects: clients.objects,
      deployments: cache.deployments,
      claims: cache.claims,
    });
    const routes = new Routes({
      net: clients.net,
      namespace,
      ingresses: cache.ingresses,
      ingressClassName: config.ingressClassName,
      checkUrl: config.routeCheckUrl,
    });
    // Lazy starts at a rate, first come first served; a gate's wake-up is a pass of that session.
    const admission =
      config.lazyStartsPerSecond > 0
        ? new LazyStartGate({ perSecond: config.lazyStartsPerSecond, burst: config.lazyStartBurst }, (name) =>
            sessionQueue.add(name),
          )
        : undefined;
    const sessions = new SessionReconciler({
      config,
      namespace,
      admission,
      limitsPassed: new Set(),
      newWorkspaceClaimants: new Map(),
      sessions: cache.sessions,
      appDefinitions: cache.appDefinitions,
      workspaces: cache.workspaces,
      deployments: cache.deployments,
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
      injector: this.injector,
      poolChanged,
      envSource: (kind, name) => readMetadata(clients.core, namespace, kind, name),
      events,
      log,
    });
    const apps = new AppDefinitionReconciler({
      config,
      appDefinitions: cache.appDefinitions,
      sessions: cache.sessions,
      appDefinitionsApi: resources.appDefinitions,
      instances,
      workspaces: cache.workspaces,
      ingresses: cache.ingresses,
      routes,
      log,
    });
    const workspaces = new WorkspaceReconciler({
      config,
      namespace,
      workspaces: cache.workspaces,
      sessions: cache.sessions,
      claims: cache.claims,
      pool: instances,
      workspacesApi: resources.workspaces,
      sessionsApi: resources.sessions,
      objects: clients.objects,
      core: clients.core,
      events,
      log,
    });
    this.activity = new ActivityMonitor({
      config,
      appDefinitions: cache.appDefinitions,
      sessions: cache.sessions,
      sessionsApi: resources.sessions,
      bridges: new SessionBridge(clients.core, cache.pods, namespace, {
        requestMs: config.bridgeRequestTimeoutMs,
        saveMs: config.saveWorkTimeoutMs,
      }),
      events,
      log,
    });
    this.queues.push(sessionQueue, appQueue, workspaceQueue, standbyController(clients, config, cache, log));

    cache.appDefinitions.on((_t, a) => appQueue.add(a.metadata.name));
    cache.workspaces.on((_t, w) => workspaceQueue.add(w.metadata.name));
    // A new workspace without its claim yet waits for its session's decision and claimed instance.
    const wakeClaimless = (workspace: string | undefined) => {
      const w = workspace ? cache.workspaces.get(workspace) : undefined;
      if (w && !w.status?.claimName) workspaceQueue.add(w.metadata.name);
    };
    cache.sessions.on((type, s) => {
      sessionQueue.add(s.metadata.name);
      wakeClaimless(s.spec.workspace);
      // An instance to return to the pool, or a lazy session that no longer counts: act at once.
      if (type === 'DELETED' || s.metadata.deletionTimestamp || isSessionFailed(s)) appQueue.add(s.spec.appDefinition);
      if (type === 'DELETED') this.injector.forget(s.metadata.uid ?? s.metadata.name);
    });
    cache.deployments.on((_t, d) => {
      const labels = d.metadata?.labels ?? {};
      const session = labels[LABELS.session];
      if (session) sessionQueue.add(session);
      const app = labels[LABELS.appDefinition];
      if (labels[LABELS.component] === COMPONENT.poolInstance && app) poolChanged(app);
      wakeClaimless(labels[LABELS.workspace]);
    });
    // A config store deleted under its session is made again.
    cache.configStores.on((type, store) => {
      const session = store.metadata?.labels?.[LABELS.session];
      if (type === 'DELETED' && session) sessionQueue.add(session);
    });
    // A pod's change wakes the session it starts (a lazy session's own pod, or its reserved warm
    // instance's), so a start that cannot succeed fails at once; a served session's pods wake nothing.
    cache.pods.on((_t, pod) => {
      const labels = pod.metadata?.labels ?? {};
      const instance = labels[LABELS.poolInstance];
      const name =
        labels[LABELS.session] ?? (instance && cache.deployments.get(instance)?.metadata?.labels?.[LABELS.session]);
      const session = name ? cache.sessions.get(name) : undefined;
      if (session && !session.status?.url && !isSessionFailed(session)) sessionQueue.add(session.metadata.name);
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
 * The standby claims' controller (standby/reconciler.ts): one work item, woken by the standby claims,
 * the claims workspaces took from them, and the binder pods; visited once at start.
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
  cache.claims.on((_t, claim) => {
    const labels = claim.metadata?.labels ?? {};
    if (labels[LABELS.component] === COMPONENT.standbyClaim || labels[LABELS.workspaceUid]) queue.add(STANDBY_KEY);
  });
  cache.pods.on((_t, pod) => {
    if (pod.metadata?.labels?.[LABELS.component] === COMPONENT.claimBinder) queue.add(STANDBY_KEY);
  });
  queue.add(STANDBY_KEY);
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
      clients.custom,
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

import * as k8s from '@kubernetes/client-node';
import { describeKubernetesError, loadKubeConfig, configureClient } from '../kube/client.js';
import { LABELS } from '../model/api-group.js';
import { ActivityMonitor } from './session/activity.js';
import { AppDefinitionReconciler } from './pool/reconciler.js';
import { parseOperatorConfig, type OperatorConfig, type OperatorConfigInput } from './config.js';
import { createCache, informersOf, type OperatorCache } from './runtime/cache.js';
import { createContext } from './context.js';
import type { EventRecorder } from './runtime/events.js';
import { LeaderElector } from './runtime/leader-election.js';
import { DataInjector } from './session/injection.js';
import { createLogger, type Logger } from './runtime/logger.js';
import { COMPONENT } from './manifests.js';
import { SessionReconciler } from './session/reconciler.js';
import { WorkQueue } from './runtime/work-queue.js';
import { WorkspaceReconciler } from './workspace/reconciler.js';

export interface OperatorOptions {
  /** A kubeconfig to use instead of config.kubeconfig / $KUBECONFIG / in-cluster. */
  kubeConfig?: k8s.KubeConfig;
  logger?: Logger;
}

export interface RunningOperator {
  readonly config: OperatorConfig;
  /** True while this instance leads (always true without leader election once started). */
  isLeader(): boolean;
  /** Drops every watch connection, as a network failure would; the sources relist and rewatch. */
  dropWatches(): void;
  /**
   * Stops everything this operator started; a leader releases its lease unless `releaseLease` is
   * false (what a crash looks like to the standby: it takes over once the lease expires).
   */
  stop(options?: { releaseLease?: boolean }): Promise<void>;
}

/** The controllers that run while this instance leads, on caches of their own (filled anew at each start). */
class Controllers {
  private readonly cache: OperatorCache;
  private readonly queues: WorkQueue[] = [];
  private readonly injector: DataInjector;
  private readonly activity: ActivityMonitor;
  private readonly events: EventRecorder;
  private stopped = false;

  constructor(kc: k8s.KubeConfig, config: OperatorConfig, log: Logger) {
    this.cache = createCache(kc, {
      namespace: config.namespace,
      rewatchIntervalMs: config.rewatchIntervalMs,
      onError: (path, error) => log.warn({ path, err: String(error) }, 'watch failed; restarting'),
    });
    const ctx = createContext(kc, config, log, this.cache);
    this.events = ctx.events;
    const onError = (what: string) => (key: string, error: unknown) =>
      log.warn(
        {
          key,
          // An API answer's message can quote the object sent: log its status and reason only.
          err:
            error instanceof k8s.ApiException
              ? describeKubernetesError(error)
              : error instanceof Error
                ? error.message
                : String(error),
        },
        `${what} reconcile failed`,
      );
    const sessionQueue = new WorkQueue((key) => sessions.reconcile(key), {
      workers: config.workers,
      onError: onError('session'),
    });
    const appQueue = new WorkQueue((key) => apps.reconcile(key), {
      workers: Math.min(2, config.workers),
      onError: onError('app definition'),
    });
    const workspaceQueue = new WorkQueue((key) => workspaces.reconcile(key), {
      workers: Math.min(2, config.workers),
      onError: onError('workspace'),
    });
    // Pool counts change with every reservation: one app definition pass per burst, not per launch.
    const poolChanged = (name: string) => appQueue.addAfter(name, POOL_STATUS_DELAY_MS);
    this.injector = new DataInjector(kc, config, (name) => sessionQueue.add(name), log);
    const sessions = new SessionReconciler(ctx, this.injector, poolChanged);
    const apps = new AppDefinitionReconciler(ctx);
    const workspaces = new WorkspaceReconciler(ctx);
    this.activity = new ActivityMonitor(ctx);
    this.queues.push(sessionQueue, appQueue, workspaceQueue);

    this.cache.appDefinitions.on((_t, a) => appQueue.add(a.metadata.name));
    this.cache.workspaces.on((_t, w) => workspaceQueue.add(w.metadata.name));
    this.cache.sessions.on((type, s) => {
      sessionQueue.add(s.metadata.name);
      // An instance to return to the pool, or a lazy session that no longer counts: act at once.
      if (type === 'DELETED' || s.metadata.deletionTimestamp || s.status?.phase === 'Failed')
        appQueue.add(s.spec.appDefinition);
      if (type === 'DELETED') this.injector.forget(s.metadata.uid ?? s.metadata.name);
    });
    this.cache.deployments.on((_t, d) => {
      const labels = d.metadata?.labels ?? {};
      const session = labels[LABELS.session];
      if (session) sessionQueue.add(session);
      const app = labels[LABELS.appDefinition];
      if (labels[LABELS.component] === COMPONENT.poolInstance && app) poolChanged(app);
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
    await this.events.flush();
  }
}

/** How long pool-count changes wait to be written: launches within it share one status write. */
const POOL_STATUS_DELAY_MS = 2000;

/**
 * Starts the operator for one namespace: with leader election, it campaigns for the Lease and runs
 * the controllers only while it leads; without, it runs them at once.
 */
export async function startOperator(
  input: OperatorConfig | OperatorConfigInput,
  options: OperatorOptions = {},
): Promise<RunningOperator> {
  const config = parseOperatorConfig(input);
  const log = options.logger ?? createLogger();
  const kc = configureClient(options.kubeConfig ?? loadKubeConfig(config.kubeconfig), 'ide-cloud-operator');
  const operatorLog = log.child({ namespace: config.namespace, identity: config.identity });
  let controllers: Controllers | undefined;
  let chain: Promise<void> = Promise.resolve();
  const startControllers = () => {
    chain = chain.then(() => {
      if (controllers) return;
      controllers = new Controllers(kc, config, operatorLog);
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
      kc,
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
    elector.start();
  } else {
    await startControllers();
  }
  operatorLog.info({ eagerStart: config.eagerStart, leaderElection: config.leaderElection }, 'operator started');

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

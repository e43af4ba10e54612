import * as k8s from '@kubernetes/client-node';
import { describeKubernetesError, loadKubeConfig } from '../kube/client.js';
import { API_VERSION, LABELS } from '../model/api-group.js';
import type { AppDefinition } from '../model/app-definition.js';
import type { Session } from '../model/session.js';
import type { Workspace } from '../model/workspace.js';
import { ActivityMonitor } from './activity.js';
import { AppDefinitionReconciler } from './app-definition-reconciler.js';
import { parseOperatorConfig, type OperatorConfig, type OperatorConfigInput } from './config.js';
import { createContext, type OperatorContext } from './context.js';
import { LeaderElector } from './leader-election.js';
import { DataInjector } from './injection.js';
import { createLogger, type Logger } from './logger.js';
import { COMPONENT, MANAGED_BY } from './manifests.js';
import { SessionReconciler } from './session-reconciler.js';
import { Informer } from '../kube/informer.js';
import { WorkQueue } from './work-queue.js';
import { WorkspaceReconciler } from './workspace-reconciler.js';

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

/** The controllers that run while this instance leads. */
class Controllers {
  private readonly sources: Informer[] = [];
  private readonly queues: WorkQueue[] = [];
  private readonly injector: DataInjector;
  private readonly activity: ActivityMonitor;

  constructor(private readonly ctx: OperatorContext) {
    const { config, log, namespace, kc } = ctx;
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
    this.injector = new DataInjector(kc, config, (name) => sessionQueue.add(name), log);
    const sessions = new SessionReconciler(ctx, this.injector, (name) => appQueue.add(name));
    const apps = new AppDefinitionReconciler(ctx);
    const workspaces = new WorkspaceReconciler(ctx);
    this.activity = new ActivityMonitor(ctx);
    this.queues.push(sessionQueue, appQueue, workspaceQueue);

    const base = `/apis/${API_VERSION}/namespaces/${namespace}`;
    const source = <T extends { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }>(
      path: string,
      apiVersion: string,
      kind: string,
      labelSelector?: string,
    ) => {
      const s = new Informer<T>(kc, {
        path,
        apiVersion,
        kind,
        namespace,
        labelSelector,
        rewatchIntervalMs: config.rewatchIntervalMs,
        onError: (error) => log.warn({ path, err: String(error) }, 'watch failed; restarting'),
      });
      this.sources.push(s as unknown as Informer);
      return s;
    };
    source<AppDefinition>(`${base}/appdefinitions`, API_VERSION, 'AppDefinition').on((_t, a) =>
      appQueue.add(a.metadata.name),
    );
    source<Workspace>(`${base}/workspaces`, API_VERSION, 'Workspace').on((_t, w) =>
      workspaceQueue.add(w.metadata.name),
    );
    source<Session>(`${base}/sessions`, API_VERSION, 'Session').on((type, s) => {
      sessionQueue.add(s.metadata.name);
      if (type === 'DELETED' || s.metadata.deletionTimestamp || s.status?.phase === 'Failed')
        appQueue.add(s.spec.appDefinition);
      if (type === 'DELETED') this.injector.forget(s.metadata.uid ?? s.metadata.name);
    });
    source<k8s.V1Deployment>(
      `/apis/apps/v1/namespaces/${namespace}/deployments`,
      'apps/v1',
      'Deployment',
      `${LABELS.managedBy}=${MANAGED_BY}`,
    ).on((_t, d) => {
      const labels = d.metadata?.labels ?? {};
      const session = labels[LABELS.session];
      if (session) sessionQueue.add(session);
      const app = labels[LABELS.appDefinition];
      if (labels[LABELS.component] === COMPONENT.poolInstance && app) appQueue.add(app);
    });
  }

  start(): void {
    for (const q of this.queues) q.start();
    for (const s of this.sources) s.start();
    this.activity.start();
  }

  dropWatches(): void {
    for (const s of this.sources) s.dropConnection();
  }

  async stop(): Promise<void> {
    await this.activity.stop();
    await Promise.all(this.sources.map((s) => s.stop()));
    this.injector.stop();
    await Promise.all(this.queues.map((q) => q.stop()));
  }
}

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
  const kc = options.kubeConfig ?? loadKubeConfig(config.kubeconfig);
  const ctx = createContext(kc, config, log.child({ namespace: config.namespace, identity: config.identity }));
  let controllers: Controllers | undefined;
  let chain: Promise<void> = Promise.resolve();
  const startControllers = () => {
    chain = chain.then(() => {
      if (controllers) return;
      controllers = new Controllers(ctx);
      controllers.start();
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
      ctx.log,
    );
    elector.start();
  } else {
    await startControllers();
  }
  ctx.log.info({ eagerStart: config.eagerStart, leaderElection: config.leaderElection }, 'operator started');

  return {
    config,
    isLeader: () => (elector ? elector.isLeader : true),
    dropWatches: () => controllers?.dropWatches(),
    async stop(stopOptions = {}) {
      if (elector) await elector.stop(stopOptions);
      await stopControllers();
      ctx.log.info('operator stopped');
    },
  };
}

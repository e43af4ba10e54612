import type { DestinationStream } from 'pino';
import type * as k8s from '@kubernetes/client-node';
import { listen, type Listening } from '../http/listen.js';
import { loadKubeConfig, configureClient } from '../kube/client.js';
import { createApp } from './app.js';
import { createAuthenticator } from './auth.js';
import { ServiceCaches } from './cache.js';
import { AppDefinitionCatalog } from './catalog.js';
import type { ServiceConfig } from './config.js';
import type { ServiceContext } from './context.js';
import { describeError } from './errors.js';
import { Launcher } from './launcher.js';
import { serviceResources } from './resources.js';
import { createLogger } from './logger.js';
import { ServiceMetrics } from './metrics.js';
import { SessionProgress } from './session-progress.js';
import { SessionService } from './sessions.js';
import { WorkspaceService } from './workspaces.js';

export { loadServiceConfig, parseServiceConfig, ConfigError, type ServiceConfig } from './config.js';

export interface StartOptions {
  /** Kubernetes client configuration; default: config.kubeconfig, then $KUBECONFIG, then in-cluster. */
  kubeConfig?: k8s.KubeConfig;
  /** Where the JSON logs go (default stdout); tests capture them here. */
  logDestination?: DestinationStream;
  /** How long start-up waits for the caches' first list before it gives up (default 60 s). */
  syncTimeoutMs?: number;
}

export type RunningService = Listening;

/**
 * The composition root: builds every collaborator once and wires them into the app. Reads go to the
 * caches (informers on the namespace's Sessions, AppDefinitions and Workspaces), writes to the API
 * server; the caches are started by startService.
 */
export function createServiceContext(
  config: ServiceConfig,
  options: StartOptions = {},
): {
  context: ServiceContext;
  kc: k8s.KubeConfig;
  caches: ServiceCaches;
} {
  // One keep-alive connection pool for every API call (as the operator does), not a handshake each,
  // and a deadline on each call: a silent API server costs a 503, never a hanging request.
  const kc = configureClient(options.kubeConfig ?? loadKubeConfig(config.kubeconfig), 'ide-cloud-service', {
    requestTimeoutMs: config.apiRequestTimeoutMs,
  });
  const logger = createLogger(config.logLevel, options.logDestination);
  const resources = serviceResources(kc, config.namespace);
  const caches = new ServiceCaches(kc, resources, {
    rewatchIntervalMs: config.rewatchIntervalMs,
    onError: (kind, error) => logger.warn({ kind, err: describeError(error) }, 'cache watch failed; it lists again'),
  });
  const metrics = new ServiceMetrics(caches);
  const catalog = new AppDefinitionCatalog(resources, caches.appDefinitions, caches.sessions);
  const workspaces = new WorkspaceService(resources, caches, config.workspacesPerUser);
  const sessions = new SessionService(resources, caches.sessions);
  const launcher = new Launcher({
    resources,
    sessions: caches.sessions,
    catalog,
    workspaces,
    metrics,
    logger,
    sessionsPerUser: config.sessionsPerUser,
  });
  const auth = createAuthenticator(config);
  const progress = new SessionProgress(caches, {
    perUser: config.progressStreamsPerUser,
    perClient: config.progressStreamsPerClient,
    total: config.progressStreamsTotal,
  });
  return { context: { config, auth, catalog, workspaces, sessions, launcher, progress, metrics, logger }, kc, caches };
}

/**
 * Starts the REST service; resolves once it listens, which is after the caches' first list (so it
 * never answers from an empty cache: readiness). Rejects when they do not sync in time.
 */
export async function startService(config: ServiceConfig, options: StartOptions = {}): Promise<RunningService> {
  const { context, caches } = createServiceContext(config, options);
  caches.start();
  let listening: Awaited<ReturnType<typeof listen>>;
  try {
    await caches.synced(options.syncTimeoutMs ?? 60_000);
    listening = await listen(createApp(context), config.port, config.host, config);
  } catch (error) {
    await caches.stop();
    throw error;
  }
  const { url, port } = listening;
  context.logger.info(
    {
      port,
      namespace: config.namespace,
      mode: config.identityProvider ? 'identity-provider' : 'anonymous',
      sessionsPerUser: config.sessionsPerUser,
    },
    'service listening',
  );
  return {
    url,
    port,
    close: async () => {
      try {
        await listening.close();
      } finally {
        await caches.stop();
      }
    },
  };
}

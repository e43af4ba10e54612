import type { DestinationStream } from 'pino';
import type * as k8s from '@kubernetes/client-node';
import { listen, type Listening } from '../http/listen.js';
import { loadKubeConfig } from '../kube/client.js';
import { ideCloudResources } from '../kube/resources.js';
import { createApp } from './app.js';
import { Authenticator } from './auth.js';
import { AppDefinitionCatalog } from './catalog.js';
import type { ServiceConfig } from './config.js';
import type { ServiceContext } from './context.js';
import { Launcher } from './launcher.js';
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
}

export type RunningService = Listening;

/** The composition root: builds every collaborator once and wires them into the app. */
export function createServiceContext(
  config: ServiceConfig,
  options: StartOptions = {},
): {
  context: ServiceContext;
  kc: k8s.KubeConfig;
} {
  const kc = options.kubeConfig ?? loadKubeConfig(config.kubeconfig);
  const logger = createLogger(config.logLevel, options.logDestination);
  const resources = ideCloudResources(kc, config.namespace);
  const metrics = new ServiceMetrics(resources, logger);
  const catalog = new AppDefinitionCatalog(resources);
  const workspaces = new WorkspaceService(resources);
  const sessions = new SessionService(kc, resources);
  const launcher = new Launcher({
    kc,
    resources,
    catalog,
    workspaces,
    metrics,
    logger,
    sessionsPerUser: config.sessionsPerUser,
  });
  const auth = new Authenticator(config);
  const progress = new SessionProgress(kc, resources, logger);
  return { context: { config, auth, catalog, workspaces, sessions, launcher, progress, metrics, logger }, kc };
}

/** Starts the REST service; resolves once it listens. */
export async function startService(config: ServiceConfig, options: StartOptions = {}): Promise<RunningService> {
  const { context } = createServiceContext(config, options);
  const app = createApp(context);
  const { url, port, close } = await listen(app, config.port, config.host);
  context.logger.info(
    {
      port,
      namespace: config.namespace,
      mode: config.identityProvider ? 'identity-provider' : 'anonymous',
      sessionsPerUser: config.sessionsPerUser,
    },
    'service listening',
  );
  return { url, port, close };
}

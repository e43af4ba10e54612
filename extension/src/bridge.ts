// The data bridge as one disposable service: restores the store, serves HTTP, answers dataBridge.getEnv.
// It receives its collaborators (secret storage, logger, command registry) so it runs outside the IDE too.
import type { BridgeConfig } from './config.js';
import { GET_ENV_COMMAND, getEnvCommand } from './getEnv.js';
import type { Logger } from './logger.js';
import type { Environment } from './payload.js';
import { BridgeServer } from './server.js';
import { EnvironmentStore, type SecretStorageLike } from './store.js';

export interface Disposable {
  dispose(): unknown;
}

export type RegisterCommand = (id: string, handler: (keys: unknown) => Environment) => Disposable;

export interface DataBridgeDeps {
  config: BridgeConfig;
  secrets: SecretStorageLike;
  logger: Logger;
  registerCommand: RegisterCommand;
  bindRetryMs?: number;
}

export class DataBridge implements Disposable {
  private readonly disposables: Disposable[] = [];
  private server: BridgeServer | undefined;
  readonly store: EnvironmentStore;

  constructor(private readonly deps: DataBridgeDeps) {
    this.store = new EnvironmentStore(deps.secrets, deps.logger);
  }

  /** Resolves with the bound port when serving, or undefined when the bridge stays inactive. */
  async start(): Promise<number | undefined> {
    const { config, logger } = this.deps;
    if (!config.enabled) {
      logger.info(`data bridge inactive: ${config.reason}`);
      return undefined;
    }
    if ('error' in config) {
      logger.error(`data bridge not started: ${config.error}`);
      return undefined;
    }
    await this.store.restore();
    this.disposables.push(this.deps.registerCommand(GET_ENV_COMMAND, getEnvCommand(this.store, logger)));
    this.server = new BridgeServer(this.store, logger, {
      host: config.host,
      port: config.port,
      token: config.token,
      usersFile: config.usersFile,
      bindRetryMs: this.deps.bindRetryMs,
    });
    this.disposables.push(this.server);
    try {
      const address = await this.server.listen();
      logger.info('data bridge active');
      return address.port;
    } catch (error) {
      logger.error(`data bridge not serving: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0).reverse()) disposable.dispose();
  }
}

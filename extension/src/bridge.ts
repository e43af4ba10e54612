// The data bridge as one disposable service: restores the store, serves HTTP, answers dataBridge.getEnv.
// It receives its collaborators (secret storage, logger, command registry) so it runs outside the IDE too.
// When the session image runs the bridge as its own process (DATA_BRIDGE_URL), the extension serves
// nothing: it reads the values from that process and keeps them in the IDE's secret storage.
import type { BridgeConfig } from './config.js';
import { GET_ENV_COMMAND, getEnvCommand } from './getEnv.js';
import { parseKeyList } from './payload.js';
import type { Logger } from './logger.js';
import type { Environment } from './payload.js';
import { SessionLifecycle } from './lifecycle.js';
import { WorkSaver } from './save.js';
import { BridgeServer } from './server.js';
import { EnvironmentStore, type SecretStorageLike } from './store.js';

export interface Disposable {
  dispose(): unknown;
}

export type RegisterCommand = (id: string, handler: (keys: unknown) => Promise<Environment>) => Disposable;

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
    const answer = getEnvCommand(this.store, logger);
    if (config.processUrl) {
      const source = config.processUrl.replace(/\/$/, '');
      this.disposables.push(
        this.deps.registerCommand(GET_ENV_COMMAND, async (keys) => {
          parseKeyList(keys); // a wrong argument fails before any request
          await this.pull(source, config.token);
          return answer(keys);
        }),
      );
      logger.info('data bridge active: the values come from the bridge process');
      return Number(new URL(source).port);
    }
    this.disposables.push(this.deps.registerCommand(GET_ENV_COMMAND, async (keys) => answer(keys)));
    this.server = new BridgeServer(this.store, logger, {
      host: config.host,
      port: config.port,
      token: config.token,
      bindRetryMs: this.deps.bindRetryMs,
      lifecycle: new SessionLifecycle(),
      saver: new WorkSaver(this.store, logger, {
        workspaceDir: config.workspaceDir,
        agentCommand: config.agentCommand,
      }),
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

  /** Takes what the bridge process holds that the store lacks; unreachable, the store answers alone. */
  private async pull(source: string, token: string): Promise<void> {
    let held: Environment;
    try {
      const response = await fetch(`${source}/data`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(2000),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      held = ((await response.json()) as { environment: Environment }).environment;
    } catch (error) {
      this.deps.logger.warn(`the bridge process did not answer (${error instanceof Error ? error.message : 'error'})`);
      return;
    }
    const current = this.store.pick(Object.keys(held));
    const changed = Object.fromEntries(Object.entries(held).filter(([key, value]) => current[key] !== value));
    if (Object.keys(changed).length > 0) await this.store.merge(changed);
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0).reverse()) disposable.dispose();
  }
}

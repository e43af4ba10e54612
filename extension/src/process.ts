// The data bridge as its own process, which the session image starts beside the IDE: the operator's
// values (and the user the session's proxy admits) land as soon as the instance is claimed, whether or
// not a browser has opened the workbench yet (code-server starts the extension host only then). The
// extension reads the values from here (GET /data, this host only) and keeps them in secret storage.
// The values stay in this process's memory: a restarted container is a new instance.
import { readBridgeConfig } from './config.js';
import { SessionLifecycle } from './lifecycle.js';
import type { Logger } from './logger.js';
import { WorkSaver } from './save.js';
import { BridgeServer } from './server.js';
import { EnvironmentStore } from './store.js';

const logger: Logger = {
  info: (message) => console.error(`[data-bridge] ${message}`),
  warn: (message) => console.error(`[data-bridge] warning: ${message}`),
  error: (message) => console.error(`[data-bridge] error: ${message}`),
};

async function main(): Promise<number> {
  const config = readBridgeConfig(process.env);
  if (!config.enabled) {
    logger.info(`inactive: ${config.reason}`);
    return 0;
  }
  if ('error' in config) {
    logger.error(config.error);
    return 2;
  }
  const memory = new Map<string, string>();
  const store = new EnvironmentStore(
    {
      get: (key) => Promise.resolve(memory.get(key)),
      store: (key, value) => Promise.resolve(void memory.set(key, value)),
    },
    logger,
  );
  const server = new BridgeServer(store, logger, {
    host: config.host,
    port: config.port,
    token: config.token,
    serveValues: true,
    lifecycle: new SessionLifecycle(),
    saver: new WorkSaver(store, logger, { workspaceDir: config.workspaceDir, agentCommand: config.agentCommand }),
  });
  await server.listen();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      server.dispose();
      process.exit(0);
    });
  }
  return -1;
}

main().then(
  (code) => code >= 0 && process.exit(code),
  (error: unknown) => {
    logger.error(error instanceof Error ? error.message : 'the bridge could not start');
    process.exit(1);
  },
);

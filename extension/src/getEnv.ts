// The command other extensions call: dataBridge.getEnv(keys) → only the keys present.
import type { Logger } from './logger.js';
import { parseKeyList, type Environment } from './payload.js';
import type { EnvironmentStore } from './store.js';

export const GET_ENV_COMMAND = 'dataBridge.getEnv';

export function getEnvCommand(store: EnvironmentStore, logger: Logger): (keys: unknown) => Environment {
  return (keys: unknown) => {
    const wanted = parseKeyList(keys);
    const found = store.pick(wanted);
    const missing = wanted.filter((key) => !Object.hasOwn(found, key));
    logger.info(
      `getEnv: ${Object.keys(found).length} of ${wanted.length} key(s) present` +
        (missing.length > 0 ? `; missing: ${missing.join(', ')}` : ''),
    );
    return found;
  };
}

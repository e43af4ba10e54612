// Picks where launch values come from: SESSION_ENV_STRATEGY=data-bridge polls the bridge (only the IDE
// front can call it), any other value reads the process environment.
import { SESSION_KEYS, type SessionKey } from '../../../../server/src/model/data-bridge.js';
import { isSessionKey } from '../keys.js';
import type { Log } from '../log.js';
import { readFromDataBridge, DATA_BRIDGE_DEFAULTS, type GetEnv, type ResolvedValues } from './data-bridge.js';
import { readEnvironment } from './environment.js';

export const STRATEGY_VARIABLE = 'SESSION_ENV_STRATEGY';

export interface ResolveOptions {
  env: NodeJS.ProcessEnv;
  /** Present only where the bridge can be reached (the IDE front). */
  getEnv?: GetEnv;
  log?: Log;
}

/**
 * Tuning from the environment: SESSION_ENV_TIMEOUT_SECONDS, SESSION_ENV_POLL_INTERVAL_MS,
 * SESSION_ENV_REQUIRED_KEYS (comma-separated key names). Invalid values fall back to the defaults.
 */
export function bridgeTuning(env: NodeJS.ProcessEnv): {
  timeoutMs: number;
  intervalMs: number;
  requiredKeys?: SessionKey[];
} {
  const seconds = Number(env.SESSION_ENV_TIMEOUT_SECONDS);
  const interval = Number(env.SESSION_ENV_POLL_INTERVAL_MS);
  const keys = (env.SESSION_ENV_REQUIRED_KEYS ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(isSessionKey);
  return {
    timeoutMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DATA_BRIDGE_DEFAULTS.timeoutMs,
    intervalMs: Number.isFinite(interval) && interval > 0 ? interval : DATA_BRIDGE_DEFAULTS.intervalMs,
    ...(keys.length > 0 ? { requiredKeys: keys } : {}),
  };
}

export async function resolveSessionValues(options: ResolveOptions): Promise<ResolvedValues> {
  const log = options.log ?? (() => {});
  const strategy = options.env[STRATEGY_VARIABLE];
  if (strategy === 'data-bridge') {
    if (options.getEnv) {
      log('reading launch values from the data bridge');
      return readFromDataBridge({ getEnv: options.getEnv, env: options.env, log, ...bridgeTuning(options.env) });
    }
    log('the data bridge is reachable only from the IDE; reading launch values from the process environment');
  }
  const values = readEnvironment(options.env);
  const origins: ResolvedValues['origins'] = {};
  for (const key of SESSION_KEYS) if (values[key] !== undefined) origins[key] = 'environment';
  return { values, origins, outcome: 'environment' };
}

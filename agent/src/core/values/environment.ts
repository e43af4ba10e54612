import { SESSION_KEYS, type SessionKey } from '../../../../server/src/model/data-bridge.js';
import type { SessionValues } from '../keys.js';

/** The values present (non-empty) in a process environment. */
export function readEnvironment(env: NodeJS.ProcessEnv, keys: readonly SessionKey[] = SESSION_KEYS): SessionValues {
  const values: SessionValues = {};
  for (const key of keys) {
    const value = env[key];
    if (value !== undefined && value !== '') values[key] = value;
  }
  return values;
}

// The data-bridge strategy (spec, "Internal interfaces"): the bridge extension answers
// `dataBridge.getEnv(keys)` with only the keys it holds; a prewarmed session receives its values some
// time after the IDE started. So: poll with a bounded interval and timeout, take partial results only
// when the timeout ends, then fill what is still missing from the process environment.
import { SESSION_KEYS, type SessionKey } from '../../../../server/src/model/data-bridge.js';
import { DEFAULT_REQUIRED_KEYS, type SessionValues } from '../keys.js';
import type { Log } from '../log.js';
import { readEnvironment } from './environment.js';

/** `dataBridge.getEnv`: takes key names, returns a map holding only the keys present. */
export type GetEnv = (keys: readonly string[]) => Promise<Record<string, unknown> | undefined>;

export interface DataBridgeOptions {
  getEnv: GetEnv;
  env: NodeJS.ProcessEnv;
  /** Poll until these are all present (default GIT_URI, GIT_USER, GIT_MAIL, PLATFORM_TOKEN). */
  requiredKeys?: readonly SessionKey[];
  intervalMs?: number;
  timeoutMs?: number;
  /**
   * How long "command not found" is taken for a bridge that is still activating; after that the bridge
   * counts as not installed and the environment is used at once.
   */
  bridgeGraceMs?: number;
  log?: Log;
  /** Injected for tests; defaults to the real clock. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export const DATA_BRIDGE_DEFAULTS = { intervalMs: 1000, timeoutMs: 120_000, bridgeGraceMs: 15_000 } as const;

export type ValueOrigin = 'data-bridge' | 'environment';

export interface ResolvedValues {
  values: SessionValues;
  /** Where each present key came from; key names only, safe to log. */
  origins: Partial<Record<SessionKey, ValueOrigin>>;
  /** Why polling ended. */
  outcome: 'complete' | 'timeout' | 'bridge-missing' | 'environment';
}

const sleepReal = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A bridge that never answers must not hold the agent past its own timeout. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`dataBridge.getEnv did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function isCommandMissing(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /command .*not found/i.test(message);
}

/** The session keys of a bridge's answer that hold a non-empty string. */
export function pickValues(answer: unknown): SessionValues {
  const values: SessionValues = {};
  if (!answer || typeof answer !== 'object') return values;
  for (const key of SESSION_KEYS) {
    const value = (answer as Record<string, unknown>)[key];
    if (typeof value === 'string' && value !== '') values[key] = value;
  }
  return values;
}

/** The bridge's values over the process environment's, with where each came from. */
export function withEnvironment(
  fromBridge: SessionValues,
  env: NodeJS.ProcessEnv,
): Pick<ResolvedValues, 'values' | 'origins'> {
  const fromEnv = readEnvironment(env);
  const origins: ResolvedValues['origins'] = {};
  for (const key of SESSION_KEYS) {
    if (fromBridge[key] !== undefined) origins[key] = 'data-bridge';
    else if (fromEnv[key] !== undefined) origins[key] = 'environment';
  }
  return { values: { ...fromEnv, ...fromBridge }, origins };
}

export async function readFromDataBridge(options: DataBridgeOptions): Promise<ResolvedValues> {
  const intervalMs = options.intervalMs ?? DATA_BRIDGE_DEFAULTS.intervalMs;
  const timeoutMs = options.timeoutMs ?? DATA_BRIDGE_DEFAULTS.timeoutMs;
  const graceMs = Math.min(options.bridgeGraceMs ?? DATA_BRIDGE_DEFAULTS.bridgeGraceMs, timeoutMs);
  const required = options.requiredKeys ?? DEFAULT_REQUIRED_KEYS;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? sleepReal;
  const log = options.log ?? (() => {});

  const start = now();
  let latest: SessionValues = {};
  let bridgeAnswered = false;
  let lastError = '';
  let outcome: ResolvedValues['outcome'] = 'timeout';

  for (;;) {
    try {
      const remaining = Math.max(timeoutMs - (now() - start), intervalMs);
      latest = { ...latest, ...pickValues(await withTimeout(options.getEnv(SESSION_KEYS), remaining)) };
      bridgeAnswered = true;
      if (required.every((key) => latest[key] !== undefined)) {
        outcome = 'complete';
        break;
      }
    } catch (error) {
      const elapsed = now() - start;
      if (isCommandMissing(error) && !bridgeAnswered && elapsed >= graceMs) {
        log(`data bridge not available after ${Math.round(elapsed / 1000)} s; using the process environment`);
        outcome = 'bridge-missing';
        break;
      }
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastError) log(`waiting for the data bridge: ${message}`);
      lastError = message;
    }
    const remaining = timeoutMs - (now() - start);
    if (remaining <= 0) break;
    await sleep(Math.min(intervalMs, remaining));
  }

  const { values, origins } = withEnvironment(latest, options.env);
  if (outcome === 'timeout') {
    const missing = required.filter((key) => latest[key] === undefined);
    log(`data bridge timeout after ${Math.round(timeoutMs / 1000)} s; not received: ${missing.join(', ')}`);
  }
  return { values, origins, outcome };
}

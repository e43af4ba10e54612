// The injected values: kept in memory, persisted as one JSON document under one SecretStorage key, and
// restored from there on activation so a reload of the window keeps them.
import type { Environment } from './payload.js';
import type { Logger } from './logger.js';

export const SECRET_KEY = 'dataBridge.environment';

/** The part of vscode.SecretStorage the store uses (a fake in tests). */
export interface SecretStorageLike {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
}

export class EnvironmentStore {
  private values = new Map<string, string>();
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly secrets: SecretStorageLike,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.values.size;
  }

  /** Loads what an earlier activation persisted; a missing or unreadable entry leaves the store empty. */
  async restore(): Promise<void> {
    let stored: string | undefined;
    try {
      stored = await this.secrets.get(SECRET_KEY);
    } catch (error) {
      this.logger.error(`could not read the secret storage: ${errorName(error)}`);
      return;
    }
    if (stored === undefined) {
      this.logger.info('no stored environment to restore');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(stored);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      this.logger.warn('the stored environment is unreadable; starting empty');
      return;
    }
    const restored = new Map<string, string>();
    for (const [key, value] of Object.entries(parsed)) if (typeof value === 'string') restored.set(key, value);
    // Values posted while the restore was running win over the stored ones.
    for (const [key, value] of this.values) restored.set(key, value);
    this.values = restored;
    this.logger.info(`restored ${restored.size} key(s): ${keyList([...restored.keys()])}`);
  }

  /** Merges the values over the earlier ones and persists the result; resolves once it is stored. */
  async merge(environment: Environment): Promise<void> {
    const keys = Object.keys(environment);
    for (const key of keys) this.values.set(key, environment[key]!);
    this.logger.info(`received ${keys.length} key(s): ${keyList(keys)}; ${this.values.size} key(s) held`);
    const snapshot = JSON.stringify(Object.fromEntries(this.values));
    // Writes are chained so that a slower earlier write never overwrites a later snapshot.
    const write = this.writes.then(() => this.secrets.store(SECRET_KEY, snapshot));
    this.writes = write.catch(() => undefined);
    try {
      await write;
    } catch (error) {
      this.logger.error(`could not persist the environment: ${errorName(error)}`);
      throw new PersistError();
    }
  }

  /** Every value held. */
  all(): Environment {
    return Object.fromEntries(this.values);
  }

  /** The values of the keys present; absent keys are left out. */
  pick(keys: readonly string[]): Environment {
    const present: [string, string][] = [];
    for (const key of keys) {
      const value = this.values.get(key);
      if (value !== undefined) present.push([key, value]);
    }
    return Object.fromEntries(present);
  }
}

export class PersistError extends Error {
  override readonly name = 'PersistError';
  constructor() {
    super('the values are held in memory but could not be persisted');
  }
}

function keyList(keys: string[]): string {
  return keys.length === 0 ? '(none)' : keys.join(', ');
}

/** An error's class name only: messages of foreign errors might quote what was being stored. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

// In-memory stand-ins for the IDE's collaborators.
import type { SecretStorageLike } from '../src/store.js';

export class MemorySecretStorage implements SecretStorageLike {
  readonly data = new Map<string, string>();
  failWrites = false;
  writes = 0;

  get(key: string): Promise<string | undefined> {
    return Promise.resolve(this.data.get(key));
  }

  async store(key: string, value: string): Promise<void> {
    this.writes += 1;
    if (this.failWrites) throw new Error(`refusing to store ${value}`);
    this.data.set(key, value);
  }
}

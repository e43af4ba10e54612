// Shared by the agent's tests: an isolated git environment (own global config, no system config, own
// HOME) and a log that keeps every line for the "secrets never in logs" assertions.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RedactingLog } from '../src/core/index.js';

export interface Sandbox {
  dir: string;
  env: NodeJS.ProcessEnv;
  globalConfig: string;
  remove(): Promise<void>;
}

export async function makeSandbox(): Promise<Sandbox> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-agent-'));
  const globalConfig = path.join(dir, 'gitconfig');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    XDG_CONFIG_HOME: path.join(dir, '.config'),
    GIT_CONFIG_GLOBAL: globalConfig,
    GIT_CONFIG_NOSYSTEM: '1',
  };
  return {
    dir,
    globalConfig,
    env,
    async remove() {
      // Ends the credential-cache daemon a clone may have started for this HOME.
      await new Promise((resolve) => execFile('git', ['credential-cache', 'exit'], { env }, resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export class CapturedLog extends RedactingLog {
  readonly lines: string[];

  constructor(secrets: readonly string[] = []) {
    const lines: string[] = [];
    super((line) => lines.push(line), secrets);
    this.lines = lines;
  }

  get text(): string {
    return this.lines.join('\n');
  }
}

/** Asserts that none of the secrets (nor their URL-encoded forms) occur in the text. */
export function assertNoSecrets(text: string, secrets: readonly string[]): void {
  for (const secret of secrets) {
    assert.ok(!text.includes(secret), `a secret leaked into: ${text}`);
    assert.ok(!text.includes(encodeURIComponent(secret)), `a URL-encoded secret leaked into: ${text}`);
  }
}

/** A workspaceState stand-in for the IDE front's service. */
export class MemoryStore {
  readonly values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
  }
}

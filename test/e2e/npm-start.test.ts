// `npm start` as a new user runs it, as its own process with a project state directory of its own (the
// binaries and images come from the shared cache, ~/.cache/ide-cloud).
//
// Real mode (root, as CI): the printed deep link, opened in Chromium with nothing mapped by hand (the
// session host `ide.localhost` resolves to loopback in the browser itself), ends in the workbench whose
// explorer shows the sample course's files, served by a prewarmed instance on the real node; a launch
// of an app definition whose image was never built fails at once, naming the command that builds it.
// Then every process of npm start is SIGKILLed (its whole process group: nobody gets to clean up) and
// nothing is left: processes, mounts, the bridge, iptables chains, ipsets, cgroups, directories.
// Fake-pods mode: the one-line notice, the URLs answer, the deep link's repository is served.
// Warm (binaries and images cached): about 2 min. In `npm test` it is the first real-node suite, so from
// empty caches it pays the node's and the images' builds (see real-node-ide.test.ts).
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { freePort, readState } from '../../scripts/cluster/control-plane.js';
import { isAlive } from '../../scripts/cluster/processes.js';
import {
  chooseNodes,
  installRealNodePackages,
  readNodeState,
  type MachineFacts,
} from '../../scripts/cluster/real-node.js';
import { errorPagesOn, explorerNames, launchBrowser, screenshot } from '../support/browser.js';
import { eventually } from '../support/kube.js';
import { machineState, stopSharedRealNode, type MachineState } from '../support/real-node.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** The sample course's top level, as the explorer shows it. */
const SAMPLE_TOP_LEVEL = ['README.md', 'package.json', 'src', 'test'];

interface Started {
  child: ChildProcess;
  dir: string;
  /** Everything printed on stdout so far. */
  out: () => string;
  /** The value of a printed `NAME=value` line. */
  value: (name: string) => string;
  deepLink: string;
}

/** Runs `npm start [args]` in its own process group on a fresh state directory; resolves once it printed its deep link. */
async function npmStart(args: string[], timeoutMs: number): Promise<Started> {
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-npm-start-')), 'cluster');
  const [port, landing, ingress] = [await freePort(), await freePort(), await freePort()];
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      IDE_CLOUD_CLUSTER_DIR: dir,
      PORT: String(port),
      LANDING_PORT: String(landing),
      INGRESS_PORT: String(ingress),
      LOG_LEVEL: 'warn',
    },
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const deepLink = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no deep link within ${timeoutMs} ms:\n${out}\n${err.slice(-3000)}`)),
      timeoutMs,
    );
    const look = () => {
      const link = /^Try a deep link: (\S+)$/m.exec(out)?.[1];
      if (link) {
        clearTimeout(timer);
        resolve(link);
      }
    };
    child.stdout!.on('data', look);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm start exited with ${code}:\n${out}\n${err.slice(-3000)}`));
    });
  });
  const value = (name: string): string => {
    const found = new RegExp(`^${name}=(\\S+)$`, 'm').exec(out)?.[1];
    assert.ok(found, `npm start printed no ${name}=`);
    return found;
  };
  return { child, dir, out: () => out, value, deepLink };
}

/** SIGKILL to every process of the group npm start leads (npm, its shell, tsx and node). */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The processes of process group `pgid`, as `pid command` lines. */
function processesInGroup(pgid: number): string[] {
  return execFileSync('ps', ['-eo', 'pid=,pgid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group]) => Number(group) === pgid)
    .map(([pid, , ...args]) => `${pid} ${args.join(' ')}`);
}

/** The processes whose command line names `text`. */
function processesNaming(text: string): string[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(text));
}

describe('npm start', function () {
  this.timeout(90 * 60_000);

  describe('the choice of nodes', () => {
    const capable: MachineFacts = {
      platform: 'linux',
      uid: 0,
      cgroups: true,
      onPath: () => true,
      runningNode: undefined,
    };

    it('runs the real node where the machine allows it, fake pods on request', () => {
      assert.deepEqual(chooseNodes([], capable), { realNode: true });
      assert.deepEqual(chooseNodes(['--fake-pods'], capable), {
        realNode: false,
        notice: 'Fake pods only (chosen with --fake-pods): sessions start, but nothing runs in their pods.',
      });
    });

    it('says in one line which requirement is missing', () => {
      const why = (facts: Partial<MachineFacts>) => chooseNodes([], { ...capable, ...facts }).notice;
      assert.match(why({ uid: 1000 })!, /^Fake pods only \(the real node needs root/);
      assert.match(why({ platform: 'darwin' })!, /needs Linux, this is darwin/);
      assert.match(why({ cgroups: false })!, /needs cgroups/);
      assert.match(why({ onPath: (p) => p !== 'apt-get' })!, /Debian's packages \(apt-get is missing\)/);
      assert.match(why({ runningNode: '/tmp/x/node' })!, /a real node already runs on this machine \(\/tmp\/x\/node\)/);
      for (const notice of [why({ uid: 1000 }), why({ platform: 'darwin' })]) assert.ok(!notice!.includes('\n'));
    });
  });

  describe('real mode', () => {
    let started: Started | undefined;
    let browser: Browser | undefined;
    let before: MachineState;

    after(async () => {
      await browser?.close();
      if (!started) return;
      // A failed run still frees the machine's one real node for the suites after it.
      killGroup(started.child);
      const { dir } = started;
      await eventually(async () => assert.equal(existsSync(dir), false), 120_000, 500).catch(() => undefined);
    });

    it('prints its URLs with a filled warm pool on the real node', async function () {
      assert.ok(process.getuid?.() === 0, 'the real node needs root');
      // The machine's one real node is npm start's here.
      await stopSharedRealNode();
      // ipset and iptables come with the node's packages: installed first, so `before` can list them.
      await installRealNodePackages();
      before = machineState();
      started = await npmStart([], 85 * 60_000);
      const out = started.out();
      assert.doesNotMatch(out, /Fake pods only/);
      assert.match(out, /keeps a warm pool of 2 on the real node/);
      assert.match(started.value('LANDING_PAGE_URL'), /^http:\/\/localhost:\d+$/);
      assert.match(out, /^Sessions: http:\/\/ide\.localhost:\d+\/<session>\/<key>\//m);
      const link = new URL(started.deepLink);
      assert.equal(link.origin, started.value('LANDING_PAGE_URL'));
      assert.equal(link.searchParams.get('appDef'), 'javascript-latest');
      this.test!.title += ` (${/started in \d+ s/.exec(out)?.[0] ?? ''})`;
    });

    it('the deep link, in Chromium with nothing mapped by hand, ends in the workbench showing the repository', async () => {
      assert.ok(started, 'npm start did not start');
      browser = await launchBrowser();
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const elsewhere: string[] = [];
      const errorPages = errorPagesOn(context, 'ide.localhost');
      await context.route('**/*', (route) => {
        const { hostname } = new URL(route.request().url());
        if (['localhost', 'ide.localhost', '127.0.0.1'].includes(hostname)) return route.continue();
        elsewhere.push(route.request().url());
        return route.abort('blockedbyclient');
      });
      const page = await context.newPage();
      const since = Date.now();
      await page.goto(started.deepLink);
      await explorerShows(page, SAMPLE_TOP_LEVEL).catch(async (error: Error) => {
        await screenshot(page, 'npm-start-real');
        throw error;
      });
      await screenshot(page, 'npm-start-real');
      assert.match(page.url(), /^http:\/\/ide\.localhost:\d+\/s-[^/]+\/[0-9a-f]{32}\//);
      console.log(`      deep link to the files shown ${((Date.now() - since) / 1000).toFixed(1)} s`);
      assert.deepEqual(errorPages, [], 'the session URL served the moment the landing page handed it over');
      assert.deepEqual(
        elsewhere.filter(
          (u) => !u.startsWith('https://open-vsx.org/') && !u.startsWith('https://fonts.googleapis.com/'),
        ),
        [],
      );
      await context.close();
    });

    it('a launch whose image is missing on the node fails at once, naming the command that builds it', async () => {
      assert.ok(started, 'npm start did not start');
      const since = Date.now();
      const response = await fetch(`${started.value('SERVICE_URL')}/service`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          appId: started.value('SERVICE_AUTH_TOKEN'),
          user: 'no-image@example.org',
          appDefinition: 'ocaml-latest',
        }),
      });
      const body = await response.text();
      assert.notEqual(response.status, 200, body);
      assert.match(body, /npm run cluster -- image ide-cloud\/session-ocaml:latest/);
      assert.ok(Date.now() - since < 60_000, `it took ${Date.now() - since} ms to fail`);
    });

    it('npm run cluster -- image builds an image and loads it into the running node', async () => {
      assert.ok(started, 'npm start did not start');
      const node = (await readNodeState(path.join(started.dir, 'node')))!;
      const ctr = ['--address', node.socket, '-n', 'k8s.io', 'images'];
      // The volume helper's image: built already (the node needs it), and not a session's.
      await run('ctr', [...ctr, 'rm', 'docker.io/ide-cloud/local-path-helper:0.1.0']);
      const loaded = await run(
        'npm',
        ['run', '--silent', 'cluster', '--', 'image', 'ide-cloud/local-path-helper:0.1.0'],
        {
          cwd: ROOT,
        },
      );
      assert.match(loaded.stdout, /^loaded into the real node: \S+local-path-helper\S+\.tar$/m);
      const images = await run('ctr', [...ctr, 'ls', '-q']);
      assert.ok(images.stdout.split('\n').includes('docker.io/ide-cloud/local-path-helper:0.1.0'), images.stdout);
    });

    it('SIGKILL of every process of npm start leaves nothing behind', async () => {
      assert.ok(started, 'npm start did not start');
      const { child, dir } = started;
      const state = (await readState(dir))!;
      const node = (await readNodeState(state.realNode!))!;
      const pids = [...Object.values(state.pids), ...Object.values(node.pids)];
      assert.equal(
        pids.filter(isAlive).length,
        9,
        'the control plane and the node (no kube-router: no NetworkPolicy to enforce) run',
      );
      killGroup(child);
      started = undefined;
      // The control plane's watchdog (its own process group) sees npm start gone and takes it all down.
      await eventually(
        async () => {
          assert.deepEqual(pids.filter(isAlive), [], 'processes of the control plane or the node still run');
          assert.equal(existsSync(dir), false, `${dir} is still there`);
          assert.deepEqual(processesNaming(dir), [], 'processes naming the state directory still run');
        },
        120_000,
        500,
      );
      assert.deepEqual(machineState(), before);
      assert.equal(existsSync('/run/ide-cloud-real-node'), false, 'the real node lock is left');
      await rm(path.dirname(dir), { recursive: true, force: true });
    });
  });

  describe('fake-pods mode', () => {
    let started: Started | undefined;
    after(() => {
      if (started) killGroup(started.child);
    });

    it('prints the one-line notice and URLs that answer; the deep link names a served repository', async () => {
      started = await npmStart(['--fake-pods'], 30 * 60_000);
      const notices = started
        .out()
        .split('\n')
        .filter((line) => line.startsWith('Fake pods only'));
      assert.deepEqual(notices, [
        'Fake pods only (chosen with --fake-pods): sessions start, but nothing runs in their pods.',
      ]);
      assert.match(started.out(), /keeps a warm pool of 2 on fake pods/);
      const landing = await fetch(started.value('LANDING_PAGE_URL'));
      assert.equal(landing.status, 200);
      const ping = await fetch(`${started.value('SERVICE_URL')}/service/${started.value('SERVICE_AUTH_TOKEN')}`);
      assert.equal(await ping.text(), 'true');
      const gitUri = new URL(started.deepLink).searchParams.get('gitUri')!;
      const heads = await run('git', ['ls-remote', gitUri, 'main'], {
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
      });
      assert.match(heads.stdout, /^[0-9a-f]{40}\trefs\/heads\/main$/m);
      await stopsCleanly(started, 'SIGINT');
      started = undefined;
    });

    it('SIGHUP (the terminal closed) stops everything too', async () => {
      started = await npmStart(['--fake-pods'], 30 * 60_000);
      await stopsCleanly(started, 'SIGHUP');
      started = undefined;
    });

    it('so does a SIGKILL of npm alone (its shell, tsx and node see it gone)', async () => {
      started = await npmStart(['--fake-pods'], 30 * 60_000);
      await stopsCleanly(started, 'SIGKILL', 'npm alone');
      started = undefined;
    });

    /**
     * Sends `signal` to npm start's process group, as a terminal does (or to npm alone): it ends, and
     * its control plane with it.
     */
    async function stopsCleanly(
      { child, dir }: Started,
      signal: NodeJS.Signals,
      to: 'the group' | 'npm alone' = 'the group',
    ): Promise<void> {
      const state = (await readState(dir))!;
      const pids = Object.values(state.pids);
      const group = processesInGroup(child.pid!);
      assert.ok(group.length >= 3, `npm, its shell and node run: ${group.join(', ')}`);
      process.kill(to === 'the group' ? -child.pid! : child.pid!, signal);
      await eventually(
        async () => assert.deepEqual(processesInGroup(child.pid!), [], 'processes of npm start still run'),
        60_000,
        500,
      );
      await eventually(
        async () => {
          assert.deepEqual(pids.filter(isAlive), [], `processes of the control plane still run after ${signal}`);
          assert.equal(existsSync(dir), false, `${dir} is still there after ${signal}`);
        },
        60_000,
        500,
      );
      await rm(path.dirname(dir), { recursive: true, force: true });
    }
  });
});

/** Waits until the workbench's explorer shows `names` at the top level (nobody reloads anything). */
async function explorerShows(page: Page, names: string[]): Promise<void> {
  let last = '';
  await eventually(
    async () => {
      await page.waitForLoadState('load', { timeout: 30_000 }).catch(() => undefined);
      if (!(await page.locator('.monaco-workbench').count())) {
        last = `no workbench at ${page.url().replace(/\/[0-9a-f]{32}\//, '/<key>/')}`;
        throw new Error(last);
      }
      const shown = await explorerNames(page);
      last = `the explorer shows ${JSON.stringify(shown)}`;
      assert.ok(
        names.every((n) => shown.includes(n)),
        last,
      );
    },
    180_000,
    1000,
  ).catch((error: Error) => {
    throw new Error(`the workbench did not show the repository (${last}): ${error.message}`);
  });
}

// The warm instance's setup beside the IDE: `bootstrap --from-bridge` waits at the data bridge's own
// process (the real server of extension/, over loopback with its token) for the values, and clones as
// soon as they land, with no IDE and no browser; the IDE's setup, started while it runs or after, waits
// for it (the workspace lock) and finds the clone done: one clone, never two.
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli } from '../src/cli/main.js';
import {
  AgentError,
  bootstrapWorkspace,
  cloneIntoWorkspace,
  lockFileName,
  waitForBridgeProcess,
  withWorkspaceLock,
} from '../src/core/index.js';
import { SessionSetup, type SetupState, type SetupUi } from '../src/vscode/session-setup.js';
import { DATA_BRIDGE_RESERVATION_HEADER } from '../../server/src/model/data-bridge.js';
import { BridgeServer } from '../../extension/src/server.js';
import { EnvironmentStore } from '../../extension/src/store.js';
import { MemoryLogger } from '../../extension/src/logger.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { assertNoSecrets, CapturedLog, makeSandbox, MemoryStore, type Sandbox } from './helpers.js';

const PASSWORD = 'bridge-boot-pw-7c1d';
const PLATFORM_TOKEN = 'bridge-boot-lms-2e9a';
const BRIDGE_TOKEN = 'bridge-boot-instance-token-51f0';
const SECRETS = [PASSWORD, PLATFORM_TOKEN, BRIDGE_TOKEN];

async function startBridgeProcess(): Promise<{ url: string; server: BridgeServer; logger: MemoryLogger }> {
  const memory = new Map<string, string>();
  const logger = new MemoryLogger();
  const store = new EnvironmentStore(
    {
      get: (key) => Promise.resolve(memory.get(key)),
      store: (key, value) => Promise.resolve(void memory.set(key, value)),
    },
    logger,
  );
  const server = new BridgeServer(store, logger, {
    host: '127.0.0.1',
    port: 0,
    token: BRIDGE_TOKEN,
    serveValues: true,
  });
  const { port } = await server.listen();
  return { url: `http://127.0.0.1:${port}`, server, logger };
}

/** The operator's injection. */
async function inject(url: string, environment: Record<string, string>): Promise<void> {
  const res = await fetch(`${url}/data`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${BRIDGE_TOKEN}`,
      [DATA_BRIDGE_RESERVATION_HEADER]: 'session-uid-1',
      'content-type': 'application/json',
    },
    body: JSON.stringify({ environment }),
  });
  assert.equal(res.status, 200);
}

const until = async (check: () => boolean | Promise<boolean>, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('agent: the setup beside the IDE, from the bridge process', function () {
  this.timeout(30_000);
  let git: GitServer;
  let sandbox: Sandbox;
  let values: Record<string, string>;

  before(async () => {
    git = await startGitServer({ users: { student: PASSWORD } });
    await git.createRepository('course/warm.git', { files: { 'task.py': 'print(2)\n' } });
    sandbox = await makeSandbox();
    values = {
      GIT_URI: git.urlWithCredentials('course/warm.git', 'student', PASSWORD),
      GIT_USER: 'Warm Student',
      GIT_MAIL: 'warm@example.org',
      PLATFORM_TOKEN,
    };
  });
  after(async () => {
    await git.close();
    await sandbox.remove();
  });

  /** Clones served: each starts with one answered GET …/info/refs (the first, without credential, is refused). */
  const clones = () =>
    git.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/info/refs') && r.status === 200).length;

  it('bootstrap --from-bridge waits for the injection, then clones with no IDE; nothing secret printed', async () => {
    const bridge = await startBridgeProcess();
    const ws = path.join(sandbox.dir, 'ws-cli');
    const lines: string[] = [];
    const before = clones();
    try {
      const io = {
        env: { ...sandbox.env, DATA_BRIDGE_URL: bridge.url, DATA_BRIDGE_TOKEN: BRIDGE_TOKEN },
        cwd: sandbox.dir,
        out: (line: string) => void lines.push(line),
        err: (line: string) => void lines.push(line),
      };
      const exit = runCli(['bootstrap', '--dir', ws, '--from-bridge'], io);
      let finished = false;
      void exit.finally(() => (finished = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(finished, false, 'it waits for the values');
      assert.deepEqual(await readdir(ws).catch(() => []), [], 'nothing cloned before the injection');
      await inject(bridge.url, values);
      assert.equal(await exit, 0, lines.join('\n'));
      assert.equal(await readFile(path.join(ws, 'task.py'), 'utf8'), 'print(2)\n');
      assert.equal(clones() - before, 1);
      assert.match(await readFile(sandbox.globalConfig, 'utf8'), /name = Warm Student/);
      assert.ok(lines.includes('waiting for the launch values at the data bridge'), lines.join('\n'));
      assert.ok(lines.includes('done: repository cloned'), lines.join('\n'));
      assertNoSecrets([...lines, ...bridge.logger.lines].join('\n'), SECRETS);
      // The lock is gone with the setup.
      assert.deepEqual(
        (await readdir(sandbox.dir)).filter((name) => name.includes('ide-cloud-setup')),
        [],
      );
    } finally {
      bridge.server.dispose();
    }
  });

  it('one long-poll per bounded wait: no busy poll while the instance waits to be claimed', async () => {
    const bridge = await startBridgeProcess();
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    try {
      const waiting = waitForBridgeProcess({
        url: bridge.url,
        token: BRIDGE_TOKEN,
        env: {},
        waitSeconds: 1,
        fetch: counting,
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.ok(requests <= 2, `${requests} requests in 1.5 s with a 1 s wait`);
      await inject(bridge.url, { GIT_USER: 'Only User' });
      const resolved = await waiting;
      // Once injected, what the injection holds is taken: no waiting for keys it does not carry.
      assert.deepEqual(resolved.values, { GIT_USER: 'Only User' });
      assert.deepEqual(resolved.origins, { GIT_USER: 'data-bridge' });
    } finally {
      bridge.server.dispose();
    }
  });

  it('refuses a bridge off this host or without its token, and a token the bridge does not know', async () => {
    await assert.rejects(
      waitForBridgeProcess({ url: 'http://10.0.0.8:16281', token: BRIDGE_TOKEN, env: {} }),
      (error: AgentError) => error.code === 'BridgeUnavailable',
    );
    await assert.rejects(
      waitForBridgeProcess({ url: 'http://127.0.0.1:16281', token: '', env: {} }),
      (error: AgentError) => error.code === 'BridgeUnavailable',
    );
    const bridge = await startBridgeProcess();
    try {
      await assert.rejects(
        waitForBridgeProcess({ url: bridge.url, token: 'not-the-token-at-all', env: {} }),
        (error: AgentError) => error.code === 'BridgeRefused' && !error.message.includes('not-the-token'),
      );
    } finally {
      bridge.server.dispose();
    }
  });

  it('gives up on a bridge that never answers, after its grace', async () => {
    let clock = 0;
    await assert.rejects(
      waitForBridgeProcess({
        url: 'http://127.0.0.1:1',
        token: BRIDGE_TOKEN,
        env: {},
        startGraceMs: 3000,
        now: () => clock,
        sleep: async (ms) => void (clock += ms),
      }),
      (error: AgentError) => error.code === 'BridgeUnavailable' && /did not answer within 3 s/.test(error.message),
    );
  });

  it('the IDE setup started while the CLI clones waits for it and finds the clone done: one clone', async () => {
    const bridge = await startBridgeProcess();
    const ws = path.join(sandbox.dir, 'ws-race');
    const before = clones();
    const lines: string[] = [];
    const states: SetupState[] = [];
    const ui: SetupUi = {
      appendLine: (line) => void lines.push(line),
      showState: (state) => void states.push(state),
      showError: async () => undefined,
      showInfo: () => {},
      ask: async () => undefined,
      showLog: () => {},
      showReadme: async () => {},
    };
    try {
      const env = { ...sandbox.env, DATA_BRIDGE_URL: bridge.url, DATA_BRIDGE_TOKEN: BRIDGE_TOKEN };
      const cli = runCli(['bootstrap', '--dir', ws, '--from-bridge'], {
        env,
        cwd: sandbox.dir,
        out: () => {},
        err: () => {},
      });
      // The IDE's setup reads the same values through dataBridge.getEnv (the bridge extension's pull).
      const setup = new SessionSetup({
        ui,
        env: { ...sandbox.env, SESSION_ENV_STRATEGY: 'data-bridge', SESSION_ENV_POLL_INTERVAL_MS: '20' },
        getEnv: async (keys) => {
          const res = await fetch(`${bridge.url}/data`, { headers: { authorization: `Bearer ${BRIDGE_TOKEN}` } });
          const held = ((await res.json()) as { environment: Record<string, string> }).environment;
          return Object.fromEntries(keys.filter((k) => k in held).map((k) => [k, held[k]]));
        },
        workspaceDir: () => ws,
        memory: new MemoryStore(),
      });
      const ide = setup.bootstrap();
      await inject(bridge.url, values);
      assert.equal(await cli, 0);
      await ide;
      assert.equal(states.at(-1), 'ready', lines.join('\n'));
      assert.equal(clones() - before, 1, 'cloned once');
      assert.deepEqual((await readdir(ws)).sort(), ['.git', 'task.py']);
      assertNoSecrets(lines.join('\n'), SECRETS);
      setup.dispose();
    } finally {
      bridge.server.dispose();
    }
  });

  it('a setup waits while another live one holds the workspace, then leaves its clone as it is', async () => {
    const ws = path.join(sandbox.dir, 'ws-held');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const first = withWorkspaceLock(ws, async () => {
      entered();
      await held;
      return cloneIntoWorkspace(values.GIT_URI!, ws, { env: sandbox.env });
    });
    await inside;
    const log = new CapturedLog(SECRETS);
    let waited = 0;
    const second = bootstrapWorkspace({
      values,
      dir: ws,
      log,
      env: sandbox.env,
      lock: { onWait: () => void waited++, intervalMs: 10 },
    });
    await until(() => waited === 1);
    release();
    assert.equal((await first).outcome, 'cloned');
    assert.equal((await second).clone?.outcome, 'already-present');
    assert.match(log.text, /another session setup is under way in this workspace; waiting for it to finish/);
  });

  it('takes over the lock of a setup that died without releasing it', async () => {
    const ws = path.join(sandbox.dir, 'ws-stale');
    // A pid no process has (above the kernel's maximum).
    await writeFile(path.join(sandbox.dir, lockFileName(ws)), '4194305 12345', { mode: 0o600 });
    const log = new CapturedLog(SECRETS);
    const result = await bootstrapWorkspace({ values, dir: ws, log, env: sandbox.env });
    assert.equal(result.clone?.outcome, 'cloned');
    assert.match(log.text, /an earlier session setup ended without finishing; taking over/);
  });
});

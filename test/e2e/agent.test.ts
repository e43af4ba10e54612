// The session bootstrap agent end to end in a real VS Code host: code-server runs the packaged data
// bridge and agent .vsix files with SESSION_ENV_STRATEGY=data-bridge, the test injects the launch values
// through POST /data as the operator does, and the repository appears in the open workspace folder with
// the git identity set, cloned from a real git smart-HTTP server. No secret in any log.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildAgent, VSIX_PATH as AGENT_VSIX } from '../../agent/scripts/build.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import {
  DATA_BRIDGE_VSIX,
  packageDataBridge,
  VscodeHost,
  freePort,
  installVscodeHost,
  waitFor,
  type VscodeHostInstall,
} from '../support/vscode-host.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BRIDGE_TOKEN = 'e2e-bridge-token-5d0c7a9f3e';

const PASSWORD = `git-pw-${randomUUID()}`;
const PLATFORM_TOKEN = `lms-${randomUUID()}`;
const GIT_USER = `Grace ${randomUUID().slice(0, 8)}`;
const GIT_MAIL = `grace-${randomUUID().slice(0, 8)}@example.org`;

describe('session bootstrap agent in a real VS Code host (e2e)', function () {
  this.timeout(5 * 60_000);
  let install: VscodeHostInstall;
  let git: GitServer;
  let host: VscodeHost;
  let bridge: string;
  let gitHome: string;
  let repoUrl: string;
  let gitConfigGlobal: string;
  let failed = false;

  before(async function () {
    this.timeout(20 * 60_000); // a brand-new machine installs chromium, Node 24 and code-server first
    install = await installVscodeHost();
    await packageDataBridge();
    assert.ok(existsSync(DATA_BRIDGE_VSIX), `npm run package -w extension did not write ${DATA_BRIDGE_VSIX}`);
    await buildAgent({ vsix: true });
    assert.ok(existsSync(AGENT_VSIX));

    git = await startGitServer({ users: { grace: PASSWORD } });
    repoUrl = await git.createRepository('course/e2e-exercise.git', {
      files: { 'README.md': '# e2e exercise\n', 'src/App.java': 'class App {}\n' },
    });
    gitHome = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-agent-e2e-home-'));
    gitConfigGlobal = path.join(gitHome, 'gitconfig');

    const bridgePort = await freePort();
    bridge = `http://127.0.0.1:${bridgePort}`;
    host = await VscodeHost.start({
      install,
      name: 'agent',
      extensions: [DATA_BRIDGE_VSIX, AGENT_VSIX],
      env: {
        DATA_BRIDGE_ENABLED: 'true',
        DATA_BRIDGE_PORT: String(bridgePort),
        DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
        SESSION_ENV_STRATEGY: 'data-bridge',
        SESSION_ENV_POLL_INTERVAL_MS: '250',
        SESSION_ENV_TIMEOUT_SECONDS: '240',
        // The agent writes the identity to the global git config: one of this run's own.
        GIT_CONFIG_GLOBAL: gitConfigGlobal,
        GIT_CONFIG_NOSYSTEM: '1',
        // None of the values reach the IDE through its environment: only through the bridge.
        GIT_URI: undefined,
        GIT_USER: undefined,
        GIT_MAIL: undefined,
        PLATFORM_TOKEN: undefined,
      },
    });
    await host.openWorkbench();
    await waitFor('the bridge to answer /health', async () => (await fetch(`${bridge}/health`)).ok, {
      timeoutMs: 90_000,
    });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    if (failed) await host?.saveLogs(path.join(ROOT, 'test-artifacts', 'vscode-host', 'agent'));
    await host?.stop();
    await git?.close();
    if (gitHome) await rm(gitHome, { recursive: true, force: true });
  });

  const agentLog = async () =>
    (await host.logFiles((file) => file.includes('IDE Cloud Agent'))).map((log) => log.text).join('');

  it('waits for the values, then clones GIT_URI into the workspace folder once they are posted to /data', async () => {
    // Activated, polling, nothing cloned yet.
    await waitFor(
      'the agent to start waiting for the bridge',
      async () => /reading launch values from the data bridge/.test(await agentLog()),
      {
        timeoutMs: 60_000,
      },
    );
    assert.equal(existsSync(path.join(host.workspaceDir, '.git')), false);

    const res = await fetch(`${bridge}/data`, {
      method: 'POST',
      // As the operator sends it: the instance's token and the reservation.
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${BRIDGE_TOKEN}`,
        'x-ide-cloud-reservation': 'e2e-session',
      },
      body: JSON.stringify({
        environment: {
          GIT_URI: git.urlWithCredentials('course/e2e-exercise.git', 'grace', PASSWORD),
          GIT_USER,
          GIT_MAIL,
          PLATFORM_TOKEN,
        },
      }),
    });
    assert.equal(res.status, 200);

    await waitFor(
      'the agent to finish',
      async () => /\bdone\b/.test(await agentLog()) || /error:/.test(await agentLog()),
      {
        timeoutMs: 60_000,
      },
    );
    const log = await agentLog();
    assert.doesNotMatch(log, /error:/);
    assert.match(
      log,
      /launch values: GIT_URI \(data-bridge\), GIT_USER \(data-bridge\), GIT_MAIL \(data-bridge\), PLATFORM_TOKEN \(data-bridge\)/,
    );
    assert.match(log, /done: repository cloned/);

    assert.equal(await readFile(path.join(host.workspaceDir, 'README.md'), 'utf8'), '# e2e exercise\n');
    assert.equal(await readFile(path.join(host.workspaceDir, 'src', 'App.java'), 'utf8'), 'class App {}\n');
    const env = { ...process.env, GIT_CONFIG_GLOBAL: gitConfigGlobal, GIT_CONFIG_NOSYSTEM: '1' };
    const gitIn = async (...args: string[]) =>
      (await run('git', ['-C', host.workspaceDir, ...args], { env })).stdout.trim();
    assert.equal(await gitIn('remote', 'get-url', 'origin'), repoUrl);
    assert.equal(await gitIn('config', 'user.name'), GIT_USER);
    assert.equal(await gitIn('config', 'user.email'), GIT_MAIL);
    assert.ok(git.requests.some((r) => r.user === 'grace' && r.status === 200));
  });

  it('left no secret in the clone, the IDE logs or the code-server output', async () => {
    const config = await readFile(path.join(host.workspaceDir, '.git', 'config'), 'utf8');
    const logs = (await host.logFiles()).map((log) => log.text).join('\n') + host.serverOutput();
    assert.match(logs, /done: repository cloned/, 'the agent log is among the logs searched');
    for (const secret of [PASSWORD, PLATFORM_TOKEN, encodeURIComponent(PASSWORD)]) {
      assert.ok(!config.includes(secret), 'secret in .git/config');
      assert.ok(!logs.includes(secret), 'secret in the IDE logs');
    }
  });
});

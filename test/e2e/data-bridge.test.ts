// The data-bridge extension end to end in a real VS Code host: code-server runs the packaged .vsix,
// headless Chromium opens the workbench, and the test drives the bridge over HTTP. A second extension
// (extension/test/fixtures/getenv-consumer) calls dataBridge.getEnv and reports what it got.
// The first run installs Chromium, Node 24 and code-server (a few minutes); later runs find them cached.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DATA_BRIDGE_VSIX,
  packageDataBridge,
  VscodeHost,
  freePort,
  installVscodeHost,
  isPortOpen,
  packageTestExtension,
  waitFor,
  type LogFile,
  type VscodeHostInstall,
} from '../support/vscode-host.js';
import { endProcess, spawnTracked } from '../support/processes.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CONSUMER_DIR = path.join(ROOT, 'extension', 'test', 'fixtures', 'getenv-consumer');
const CONSUMER_VSIX = path.join(ROOT, 'extension', 'dist', 'test', 'getenv-consumer.vsix');
const CHANNEL = 'Data Bridge';

// Distinct values, so a leak of any of them into a log is found by grepping.
const SECRETS = {
  PLATFORM_TOKEN: `token-${randomUUID()}`,
  GIT_URI: `https://student:pw-${randomUUID()}@git.example.org/course/repo.git`,
  GIT_USER: `Ada ${randomUUID()}`,
};
const LATER = { GIT_MAIL: `ada-${randomUUID()}@example.org`, PLATFORM_TOKEN: `token-${randomUUID()}` };
/** The instance's token, as the pod gets it (DATA_BRIDGE_TOKEN), and what the operator sends with it. */
const BRIDGE_TOKEN = `bridge-${randomUUID()}`;
const OPERATOR = { authorization: `Bearer ${BRIDGE_TOKEN}`, 'x-ide-cloud-reservation': 'session-uid-1' };

interface ConsumerAnswer {
  pid: number;
  result?: unknown;
  error?: string;
}

/** Has the consumer extension (on its port) call dataBridge.getEnv with `args`; what it got back. */
async function consumerCall(consumerPort: number, ...args: unknown[]): Promise<ConsumerAnswer> {
  const res = await fetch(`http://127.0.0.1:${consumerPort}/call`, { method: 'POST', body: JSON.stringify({ args }) });
  return (await res.json()) as ConsumerAnswer;
}

function channelText(logs: LogFile[]): string {
  return logs.map((log) => log.text).join('');
}

/** The channel's text once it matches `pattern`: a host writes its log file on its own schedule. */
function channelMatching(host: VscodeHost, pattern: RegExp): Promise<string> {
  return waitFor(
    `the "${CHANNEL}" log to match ${pattern}`,
    async () => {
      const text = channelText(await host.outputChannelLogs(CHANNEL));
      return pattern.test(text) && text;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

describe('data bridge in a real VS Code host (e2e)', function () {
  this.timeout(5 * 60_000);
  let install: VscodeHostInstall;

  before(async function () {
    this.timeout(20 * 60_000); // a brand-new machine installs chromium, Node 24 and code-server first
    install = await installVscodeHost();
    await packageDataBridge();
    assert.ok(existsSync(DATA_BRIDGE_VSIX), `npm run package -w extension did not write ${DATA_BRIDGE_VSIX}`);
    await packageTestExtension(CONSUMER_DIR, CONSUMER_VSIX);
  });

  describe('with DATA_BRIDGE_ENABLED=true', () => {
    let host: VscodeHost;
    let bridge: string;
    let consumerPort: number;

    async function postData(
      body: string,
      headers: Record<string, string> = OPERATOR,
    ): Promise<{ status: number; json: unknown }> {
      const res = await fetch(`${bridge}/data`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
      });
      return { status: res.status, json: await res.json() };
    }

    const callGetEnv = (...args: unknown[]) => consumerCall(consumerPort, ...args);

    before(async function () {
      this.timeout(3 * 60_000);
      const bridgePort = await freePort();
      consumerPort = await freePort();
      bridge = `http://127.0.0.1:${bridgePort}`;
      host = await VscodeHost.start({
        install,
        name: 'bridge-on',
        extensions: [DATA_BRIDGE_VSIX, CONSUMER_VSIX],
        env: {
          DATA_BRIDGE_ENABLED: 'true',
          DATA_BRIDGE_PORT: String(bridgePort),
          DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
          GETENV_CONSUMER_PORT: String(consumerPort),
        },
      });
      await host.openWorkbench();
      await waitFor('the bridge to answer /health', async () => (await fetch(`${bridge}/health`)).ok, {
        timeoutMs: 90_000,
      });
      const log = channelText(await host.outputChannelLogs(CHANNEL));
      console.log(`    [e2e] "${CHANNEL}" output channel after activation:\n${log.replace(/^/gm, '      ')}`);
    });

    let failed = false;
    afterEach(function () {
      if (this.currentTest?.state === 'failed') failed = true;
    });
    after(async function () {
      this.timeout(60_000);
      if (failed) await host?.saveLogs(path.join(ROOT, 'test-artifacts', 'vscode-host', 'bridge-on'));
      await host?.stop();
    });

    it('activates in code-server and answers GET /health', async () => {
      const res = await fetch(`${bridge}/health`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'UP' });
      const log = await channelMatching(host, /\[info\] data bridge active/);
      assert.match(log, /\[info\] listening on 0\.0\.0\.0:\d+/);
    });

    it('rejects bad bodies with 400 naming the problem, 413 over 64 KiB, 404 elsewhere', async () => {
      assert.deepEqual(await postData(`{"environment": {"PLATFORM_TOKEN": "${SECRETS.PLATFORM_TOKEN}"`), {
        status: 400,
        json: { error: 'body is not valid JSON' },
      });
      assert.deepEqual(await postData(JSON.stringify({ environment: [SECRETS.PLATFORM_TOKEN] })), {
        status: 400,
        json: { error: 'field "environment" must be an object of strings, got an array' },
      });
      assert.deepEqual(await postData(JSON.stringify({ environment: { PLATFORM_TOKEN: 42 } })), {
        status: 400,
        json: { error: 'environment.PLATFORM_TOKEN must be a string, got a number' },
      });
      assert.deepEqual(await postData(JSON.stringify({ environment: { BIG: 'x'.repeat(70 * 1024) } })), {
        status: 413,
        json: { error: 'body exceeds 65536 bytes' },
      });
      const missing = await fetch(`${bridge}/secrets`);
      assert.equal(missing.status, 404);
      const empty = await callGetEnv(['BIG', 'PLATFORM_TOKEN']);
      assert.deepEqual(empty.result, {}, 'nothing of the rejected bodies was stored');
    });

    it('refuses POST /data without the token (401) or with another (403)', async () => {
      const body = JSON.stringify({ environment: LATER });
      const reservation = { 'x-ide-cloud-reservation': 'session-uid-1' };
      assert.deepEqual(await postData(body, reservation), {
        status: 401,
        json: { error: 'a bearer token is required' },
      });
      assert.deepEqual(await postData(body, { ...reservation, authorization: 'Bearer guessed-token-0123456789' }), {
        status: 403,
        json: { error: "the token is not this instance's" },
      });
      assert.deepEqual((await callGetEnv(['GIT_MAIL'])).result, {}, 'nothing was stored');
    });

    it("stores the operator's POST /data, refuses a second (409) and hands the values out through dataBridge.getEnv", async () => {
      assert.deepEqual(await postData(JSON.stringify({ environment: SECRETS })), {
        status: 200,
        json: { stored: 3, total: 3 },
      });
      assert.deepEqual(await postData(JSON.stringify({ environment: LATER })), {
        status: 409,
        json: { error: 'the values of this reservation were already injected', reservation: 'same' },
      });
      const answer = await callGetEnv(['GIT_USER', 'GIT_URI', 'GIT_MAIL', 'PLATFORM_TOKEN', 'NOT_SENT']);
      assert.deepEqual(answer.result, SECRETS, 'only present keys, nothing of the refused post');
      assert.deepEqual(await callGetEnv(['NOT_SENT']), { pid: answer.pid, result: {} });
    });

    it('rejects a wrong argument to dataBridge.getEnv with a clear error', async () => {
      const notAList = await callGetEnv('GIT_USER');
      assert.equal(notAList.error, 'dataBridge.getEnv expects an array of key names, got a string');
      const notStrings = await callGetEnv(['GIT_USER', 7]);
      assert.equal(notStrings.error, 'dataBridge.getEnv expects an array of key names, element 1 is a number');
      const none = await callGetEnv();
      assert.equal(none.error, 'dataBridge.getEnv expects an array of key names, got undefined');
    });

    it('keeps the values across a reload of the window (SecretStorage)', async () => {
      const before = await callGetEnv([]);
      // The workbench seals and writes the secrets to the browser after the extension's store resolved;
      // the reload comes once they are there (this host held no secret before the bridge's).
      await waitFor('the sealed secrets in the browser', async () => (await host.sealedSecrets()) !== null, {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      await host.reload();
      // Wait for the consumer of the new extension host, so the answer cannot come from the old one.
      const after = await waitFor(
        'the new extension host',
        async () => {
          const answer = await callGetEnv(['GIT_USER', 'GIT_URI', 'GIT_MAIL', 'PLATFORM_TOKEN']);
          return answer.pid !== before.pid && answer;
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      assert.deepEqual(after.result, SECRETS);
      assert.equal((await fetch(`${bridge}/health`)).status, 200);
      // The new host's log file is flushed on its own schedule, after its consumer may already answer.
      const logs = await waitFor(
        `a second "${CHANNEL}" log`,
        async () => {
          const found = await host.outputChannelLogs(CHANNEL);
          return found.length >= 2 && /\[info\] restored/.test(found.at(-1)!.text) && found;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      assert.match(logs.at(-1)!.text, /\[info\] restored 3 key\(s\): /);
    });

    it('never writes a value to the output channel or any other log, only key names and counts', async () => {
      const channel = channelText(await host.outputChannelLogs(CHANNEL));
      assert.match(channel, /received 3 key\(s\): PLATFORM_TOKEN, GIT_URI, GIT_USER; 3 key\(s\) held/);
      assert.match(channel, /getEnv: 3 of 5 key\(s\) present; missing: GIT_MAIL, NOT_SENT/);
      const everything = [...(await host.logFiles()), { file: 'code-server output', text: host.serverOutput() }];
      const values = [...Object.values(SECRETS), ...Object.values(LATER)];
      for (const { file, text } of everything) {
        for (const value of values) assert.ok(!text.includes(value), `${file} contains an injected value`);
      }
      assert.ok(everything.length > 3, 'the logs were found');
    });
  });

  describe('with DATA_BRIDGE_ENABLED unset', () => {
    let host: VscodeHost;
    let bridgePort: number;
    let consumerPort: number;

    before(async function () {
      this.timeout(3 * 60_000);
      bridgePort = await freePort();
      consumerPort = await freePort();
      host = await VscodeHost.start({
        install,
        name: 'bridge-off',
        extensions: [DATA_BRIDGE_VSIX, CONSUMER_VSIX],
        env: {
          DATA_BRIDGE_ENABLED: undefined,
          DATA_BRIDGE_PORT: String(bridgePort),
          DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
          GETENV_CONSUMER_PORT: String(consumerPort),
        },
      });
      await host.openWorkbench();
    });

    let failed = false;
    afterEach(function () {
      if (this.currentTest?.state === 'failed') failed = true;
    });
    after(async function () {
      this.timeout(60_000);
      if (failed) await host?.saveLogs(path.join(ROOT, 'test-artifacts', 'vscode-host', 'bridge-off'));
      await host?.stop();
    });

    it('stays inactive: says so once in its output channel, opens no port, registers no command', async () => {
      const log = await waitFor(
        `the "${CHANNEL}" output channel`,
        async () => channelText(await host.outputChannelLogs(CHANNEL)) || undefined,
        { timeoutMs: 90_000 },
      );
      console.log(`    [e2e] "${CHANNEL}" output channel, bridge disabled:\n${log.replace(/^/gm, '      ')}`);
      assert.match(log, /\[info\] data bridge inactive: DATA_BRIDGE_ENABLED is not set/);
      // The consumer activates at the same time; once it answers, the bridge has long had its chance.
      const answer = await waitFor('the consumer extension', () => consumerCall(consumerPort, ['GIT_USER']), {
        timeoutMs: 90_000,
      });
      assert.match(answer.error ?? '', /command 'dataBridge\.getEnv' not found/);
      assert.equal(await isPortOpen(bridgePort), false, 'the bridge port is closed');
      const final = channelText(await host.outputChannelLogs(CHANNEL));
      assert.equal(final.match(/inactive/g)?.length, 1, 'said once');
      assert.doesNotMatch(final, /listening/);
    });
  });
  describe('as its own process, as the session image runs it: the values land before any window opens', () => {
    const BRIDGE_PROCESS = path.join(ROOT, 'extension', 'dist', 'bridge.mjs');
    let host: VscodeHost | undefined;
    let bridgeProcess: ChildProcess | undefined;
    let bridge: string;
    let usersDir: string;
    const processOutput: string[] = [];

    before(async function () {
      this.timeout(60_000);
      const port = await freePort();
      bridge = `http://127.0.0.1:${port}`;
      usersDir = await mkdtemp(path.join(os.tmpdir(), 'bridge-users-'));
      bridgeProcess = spawnTracked('data bridge process', process.execPath, [BRIDGE_PROCESS], {
        env: {
          PATH: process.env.PATH,
          DATA_BRIDGE_ENABLED: 'true',
          DATA_BRIDGE_PORT: String(port),
          DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
          DATA_BRIDGE_USERS_FILE: path.join(usersDir, 'users'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      for (const stream of [bridgeProcess.stdout!, bridgeProcess.stderr!]) {
        stream.on('data', (chunk: Buffer) => processOutput.push(chunk.toString('utf8')));
      }
      await waitFor('the bridge process to answer /health', async () => (await fetch(`${bridge}/health`)).ok, {
        timeoutMs: 30_000,
      });
    });
    after(async function () {
      this.timeout(60_000);
      await host?.stop();
      if (bridgeProcess) await endProcess(bridgeProcess, 'SIGKILL');
      await rm(usersDir, { recursive: true, force: true });
    });

    it("takes the operator's values with no IDE running, and writes no allowed users even when told; a window opened later gets them", async () => {
      const injection = { environment: SECRETS, user: 'ada@example.org' };
      const posted = await fetch(`${bridge}/data`, {
        method: 'POST',
        body: JSON.stringify(injection),
        headers: { 'content-type': 'application/json', ...OPERATOR },
      });
      assert.equal(posted.status, 200);
      // An older operator's user and users file: the proxy's allowed users are not the bridge's to
      // write (its admission does, issue 27 item 4), and the injection still succeeds.
      assert.equal(existsSync(path.join(usersDir, 'users')), false, 'the bridge wrote no allowed-users file');

      // The student opens the IDE later: the extension reads what the process holds.
      const consumerPort = await freePort();
      host = await VscodeHost.start({
        install,
        name: 'bridge-process',
        extensions: [DATA_BRIDGE_VSIX, CONSUMER_VSIX],
        env: {
          DATA_BRIDGE_ENABLED: 'true',
          DATA_BRIDGE_PORT: new URL(bridge).port,
          DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
          DATA_BRIDGE_URL: bridge,
          GETENV_CONSUMER_PORT: String(consumerPort),
        },
      });
      await host.openWorkbench();
      const answer = await waitFor(
        'dataBridge.getEnv in the late window',
        async () => {
          const body = await consumerCall(consumerPort, ['GIT_USER', 'GIT_URI', 'PLATFORM_TOKEN', 'NOT_SENT']);
          return body.result !== undefined && body;
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      assert.deepEqual(answer.result, SECRETS);
      const log = await channelMatching(host, /data bridge active: the values come from the bridge process/);
      for (const value of Object.values(SECRETS)) {
        assert.ok(!log.includes(value) && !processOutput.join('').includes(value), 'a value reached a log');
      }
    });
  });
  describe('with an invalid DATA_BRIDGE_PORT', () => {
    let host: VscodeHost;
    let consumerPort: number;

    before(async function () {
      this.timeout(3 * 60_000);
      consumerPort = await freePort();
      host = await VscodeHost.start({
        install,
        name: 'bridge-bad-port',
        extensions: [DATA_BRIDGE_VSIX, CONSUMER_VSIX],
        env: { DATA_BRIDGE_ENABLED: '1', DATA_BRIDGE_PORT: '99999', GETENV_CONSUMER_PORT: String(consumerPort) },
      });
      await host.openWorkbench();
    });

    after(async function () {
      this.timeout(60_000);
      await host?.stop();
    });

    it('logs a clear error and leaves the extension host running', async () => {
      const log = await waitFor(
        `the "${CHANNEL}" output channel`,
        async () => channelText(await host.outputChannelLogs(CHANNEL)) || undefined,
        { timeoutMs: 90_000 },
      );
      console.log(`    [e2e] "${CHANNEL}" output channel, invalid port:\n${log.replace(/^/gm, '      ')}`);
      assert.match(
        log,
        /\[error\] data bridge not started: DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "99999"/,
      );
      // Another extension in the same extension host still works.
      const answer = await waitFor('the consumer extension', () => consumerCall(consumerPort, ['GIT_USER']), {
        timeoutMs: 90_000,
      });
      assert.match(answer.error ?? '', /command 'dataBridge\.getEnv' not found/);
    });
  });
});

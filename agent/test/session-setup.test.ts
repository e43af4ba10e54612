// The IDE front's service outside the IDE: a fake UI and a fake `dataBridge.getEnv`, the real git
// server and platform stand-in. States shown, notifications, retry, the participation command.
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SessionSetup, findReadme, type SetupState, type SetupUi } from '../src/vscode/session-setup.js';
import type { GetEnv } from '../src/core/index.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { startLearningPlatform, type LearningPlatform } from '../../test/support/learning-platform.js';
import { MemoryStore, assertNoSecrets, makeSandbox, type Sandbox } from './helpers.js';

const PASSWORD = 'setup-pw-0b9e61';
const PLATFORM_TOKEN = 'setup-lms-3f7a2c';
const VCS_TOKEN = 'setup-vcs-c4d8e0';

class FakeUi implements SetupUi {
  lines: string[] = [];
  states: [SetupState, string][] = [];
  errors: string[] = [];
  infos: string[] = [];
  answers: (string | undefined)[] = [];
  asked: [string, string | undefined][] = [];
  /** Picks an action of the pending error notification, as a user would later. */
  pick: (action: string | undefined) => void = () => {};
  logShown = 0;
  appendLine = (line: string) => void this.lines.push(line);
  showState = (state: SetupState, detail: string) => void this.states.push([state, detail]);
  showError = (message: string) => {
    this.errors.push(message);
    return new Promise<string | undefined>((resolve) => (this.pick = resolve));
  };
  showInfo = (message: string) => void this.infos.push(message);
  ask = async (prompt: string, value?: string) => {
    this.asked.push([prompt, value]);
    return this.answers.shift();
  };
  showLog = () => void this.logShown++;
  readmes: string[] = [];
  showReadme = async (file: string) => void this.readmes.push(file);
  get all(): string {
    return [...this.lines, ...this.states.map((s) => s.join(' ')), ...this.errors, ...this.infos].join('\n');
  }
}

const until = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('agent IDE front: session setup service', function () {
  this.timeout(30_000);
  let git: GitServer;
  let platform: LearningPlatform;
  let sandbox: Sandbox;
  let uri: string;

  before(async () => {
    git = await startGitServer({ users: { student: PASSWORD, stud03: VCS_TOKEN } });
    uri = await git.createRepository('course/setup.git', { files: { 'main.py': 'print(1)\n' } });
    platform = await startLearningPlatform();
    platform.validTokens.add(PLATFORM_TOKEN);
    platform.participations.add('99');
    platform.participationTokens.set('99', VCS_TOKEN);
    sandbox = await makeSandbox();
  });
  after(async () => {
    await Promise.all([git.close(), platform.close()]);
    await sandbox.remove();
  });

  const bridgeEnv = (extra: NodeJS.ProcessEnv = {}) => ({
    ...sandbox.env,
    SESSION_ENV_STRATEGY: 'data-bridge',
    SESSION_ENV_POLL_INTERVAL_MS: '20',
    SESSION_ENV_TIMEOUT_SECONDS: '5',
    ...extra,
  });

  it('waits for the bridge values, clones and shows each state; nothing secret reaches the UI', async () => {
    const ws = path.join(sandbox.dir, 'ws1');
    const values = {
      GIT_URI: git.urlWithCredentials('course/setup.git', 'student', PASSWORD),
      GIT_USER: 'Setup Student',
      GIT_MAIL: 'setup@example.org',
      PLATFORM_TOKEN,
    };
    const injectedAt = Date.now() + 200;
    const getEnv: GetEnv = async (keys) =>
      Date.now() < injectedAt
        ? {}
        : Object.fromEntries(keys.filter((k) => k in values).map((k) => [k, values[k as keyof typeof values]]));
    const ui = new FakeUi();
    const setup = new SessionSetup({ ui, env: bridgeEnv(), getEnv, workspaceDir: () => ws, memory: new MemoryStore() });
    await setup.bootstrap();
    assert.deepEqual(
      ui.states.map(([state]) => state),
      ['waiting', 'cloning', 'ready'],
    );
    assert.equal(await readFile(path.join(ws, 'main.py'), 'utf8'), 'print(1)\n');
    assert.deepEqual(ui.infos, [`Cloned ${uri}`]);
    assert.deepEqual(ui.readmes, [], 'the repository has no README');
    assert.ok(
      ui.lines.includes(
        'launch values: GIT_URI (data-bridge), GIT_USER (data-bridge), GIT_MAIL (data-bridge), PLATFORM_TOKEN (data-bridge)',
      ),
    );
    assertNoSecrets(ui.all, [PASSWORD, PLATFORM_TOKEN]);
    assert.match(await readFile(sandbox.globalConfig, 'utf8'), /name = Setup Student/);
    setup.dispose();
  });

  it('shows a failure with Retry, and the retry succeeds once the cause is gone', async () => {
    const ws = path.join(sandbox.dir, 'ws2');
    const ui = new FakeUi();
    git.removeUser('student');
    const env = bridgeEnv({ GIT_URI: git.urlWithCredentials('course/setup.git', 'student', PASSWORD) });
    const getEnv: GetEnv = async () => {
      throw new Error("command 'dataBridge.getEnv' not found");
    };
    const setup = new SessionSetup({
      ui,
      env: { ...env, SESSION_ENV_STRATEGY: 'environment' },
      getEnv,
      workspaceDir: () => ws,
      memory: new MemoryStore(),
    });
    await setup.bootstrap();
    assert.equal(ui.states.at(-1)?.[0], 'failed');
    git.addUser('student', PASSWORD);
    ui.pick('Retry');
    await until(() => ui.states.at(-1)?.[0] === 'ready');
    assert.equal(ui.errors.length, 1);
    assert.match(
      ui.errors[0] ?? '',
      /^Session setup failed: the repository http:\/\/127\.0\.0\.1:\d+\/course\/setup\.git refused the credential/,
    );
    assert.deepEqual(
      ui.states.map(([state]) => state),
      ['waiting', 'cloning', 'failed', 'waiting', 'cloning', 'ready'],
    );
    assert.deepEqual(await readdir(ws).then((e) => e.sort()), ['.git', 'main.py']);
    assertNoSecrets(ui.all, [PASSWORD]);
  });

  it('clones a participation on demand into a folder beside the workspace repository', async () => {
    const ws = path.join(sandbox.dir, 'ws1');
    const ui = new FakeUi();
    ui.answers = ['99', uri, 'stud03'];
    const env = { ...sandbox.env, PLATFORM_URL: platform.url, PLATFORM_TOKEN, GIT_USER: 'stud03', GIT_URI: uri };
    const setup = new SessionSetup({
      ui,
      env,
      getEnv: async () => ({}),
      workspaceDir: () => ws,
      memory: new MemoryStore(),
    });
    await setup.cloneParticipation();
    assert.deepEqual(
      ui.asked.map(([, value]) => value),
      [undefined, uri, 'stud03'],
    );
    assert.equal(await readFile(path.join(ws, 'setup', 'main.py'), 'utf8'), 'print(1)\n');
    assert.equal(ui.states.at(-1)?.[0], 'ready');
    assertNoSecrets(ui.all, [VCS_TOKEN, PLATFORM_TOKEN]);
  });

  it('stops quietly when the user dismisses a question, and says so when no folder is open', async () => {
    const ui = new FakeUi();
    ui.answers = [undefined];
    const setup = new SessionSetup({
      ui,
      env: sandbox.env,
      getEnv: async () => ({}),
      workspaceDir: () => path.join(sandbox.dir, 'ws1'),
      memory: new MemoryStore(),
    });
    await setup.cloneParticipation();
    assert.equal(ui.asked.length, 1);
    assert.deepEqual(ui.states, []);

    const none = new FakeUi();
    const noFolder = new SessionSetup({
      ui: none,
      env: sandbox.env,
      getEnv: async () => ({}),
      workspaceDir: () => undefined,
      memory: new MemoryStore(),
    });
    await noFolder.bootstrap();
    assert.equal(none.states.at(-1)?.[0], 'idle');
    await noFolder.cloneParticipation();
    assert.match(none.errors[0] ?? '', /Open a workspace folder first/);
  });

  it("opens the repository's README once the clone is done, once per folder", async () => {
    await git.createRepository('course/readme.git', {
      files: { 'README.md': '# Exercise\n', 'main.py': 'print(2)\n' },
    });
    const ws = path.join(sandbox.dir, 'ws-readme');
    const env = { ...sandbox.env, GIT_URI: git.urlWithCredentials('course/readme.git', 'student', PASSWORD) };
    const memory = new MemoryStore();
    const first = new FakeUi();
    await new SessionSetup({ ui: first, env, getEnv: async () => ({}), workspaceDir: () => ws, memory }).bootstrap();
    assert.equal(first.states.at(-1)?.[0], 'ready', first.all);
    assert.deepEqual(first.readmes, [path.join(ws, 'README.md')]);

    // A reload finds the repository in place and leaves the editors as the student left them.
    const reload = new FakeUi();
    await new SessionSetup({ ui: reload, env, getEnv: async () => ({}), workspaceDir: () => ws, memory }).bootstrap();
    assert.equal(reload.states.at(-1)?.[0], 'ready', reload.all);
    assert.deepEqual(reload.readmes, []);

    // Another browser (its own workspace state) sees it first too.
    const other = new FakeUi();
    const fresh = new MemoryStore();
    await new SessionSetup({
      ui: other,
      env,
      getEnv: async () => ({}),
      workspaceDir: () => ws,
      memory: fresh,
    }).bootstrap();
    assert.deepEqual(other.readmes, [path.join(ws, 'README.md')]);
    assertNoSecrets(first.all + reload.all + other.all, [PASSWORD]);
  });

  it('finds a README at the top of the folder, markdown first, and nothing where there is none', async () => {
    const dir = path.join(sandbox.dir, 'readmes');
    await mkdir(path.join(dir, 'sub'), { recursive: true });
    assert.equal(await findReadme(dir), undefined);
    await writeFile(path.join(dir, 'sub', 'README.md'), 'nested\n');
    assert.equal(await findReadme(dir), undefined, 'only the top level counts');
    await writeFile(path.join(dir, 'README.txt'), 'text\n');
    assert.equal(await findReadme(dir), path.join(dir, 'README.txt'));
    await writeFile(path.join(dir, 'readme.markdown'), '# md\n');
    assert.equal(await findReadme(dir), path.join(dir, 'readme.markdown'));
    assert.equal(await findReadme(path.join(dir, 'missing')), undefined);
  });
});

// The student's first screen in a session IDE, in a real VS Code host: code-server prepared by the session
// image's own script (images/session-base/first-screen.mjs: the trust seeding in workbench.html, the
// machine settings) with the run's workspace folder as the work folder, the data bridge and agent
// extensions of the image, and none of the quiet settings other host tests put in the user settings.
// A warm session: the workbench opens before the launch values land, the clone finishes afterwards.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgent, VSIX_PATH as AGENT_VSIX } from '../../agent/scripts/build.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { firstScreen, screenshot, type FirstScreen } from '../support/browser.js';
import {
  DATA_BRIDGE_VSIX,
  packageDataBridge,
  VscodeHost,
  freePort,
  installVscodeHost,
  waitFor,
} from '../support/vscode-host.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BRIDGE_TOKEN = `first-screen-bridge-${randomUUID()}`;
const PASSWORD = `git-pw-${randomUUID()}`;

describe("the student's first screen in a session IDE (real VS Code host)", function () {
  this.timeout(5 * 60_000);
  let git: GitServer;
  let host: VscodeHost;
  let bridge: string;
  let other: string;
  let gitHome: string;
  let failed = false;

  before(async function () {
    this.timeout(20 * 60_000); // a brand-new machine installs chromium, Node 24 and code-server first
    const install = await installVscodeHost();
    await packageDataBridge();
    await buildAgent({ vsix: true });
    assert.ok(existsSync(DATA_BRIDGE_VSIX) && existsSync(AGENT_VSIX));
    git = await startGitServer({ users: { ada: PASSWORD } });
    await git.createRepository('course/first-screen.git', {
      files: { 'README.md': '# First exercise\n\nStart here.\n', 'main.py': 'print("hello")\n' },
    });
    gitHome = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-first-screen-git-'));
    const bridgePort = await freePort();
    bridge = `http://127.0.0.1:${bridgePort}`;
    host = await VscodeHost.start({
      install,
      name: 'first-screen',
      firstScreen: true,
      extensions: [DATA_BRIDGE_VSIX, AGENT_VSIX],
      env: {
        DATA_BRIDGE_ENABLED: 'true',
        DATA_BRIDGE_PORT: String(bridgePort),
        DATA_BRIDGE_TOKEN: BRIDGE_TOKEN,
        SESSION_ENV_STRATEGY: 'data-bridge',
        SESSION_ENV_POLL_INTERVAL_MS: '250',
        SESSION_ENV_TIMEOUT_SECONDS: '240',
        // The agent writes the identity to the global git config: one of this run's own.
        GIT_CONFIG_GLOBAL: path.join(gitHome, 'gitconfig'),
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_URI: undefined,
        GIT_USER: undefined,
        GIT_MAIL: undefined,
        PLATFORM_TOKEN: undefined,
      },
    });
    // A folder the student might open later: inside the same home, not the work folder.
    other = path.join(host.runDir, 'other');
    await mkdir(other);
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed') return;
    failed = true;
    await screenshot(host.page, `first-screen-${this.currentTest.title.slice(0, 40).replace(/\W+/g, '-')}`).catch(
      () => undefined,
    );
  });
  after(async function () {
    this.timeout(60_000);
    if (failed) await host?.saveLogs(path.join(ROOT, 'test-artifacts', 'vscode-host', 'first-screen'));
    await host?.stop();
    await git?.close();
    if (gitHome) await rm(gitHome, { recursive: true, force: true });
  });

  const show = (screen: FirstScreen) => JSON.stringify(screen);

  it('opens the work folder trusted, without a Welcome page or a chat, before the repository is there', async () => {
    // The server's root, as a session's URL: no folder named, and no redirect to one.
    const page = await host.openWorkbench(undefined, null);
    await page.waitForSelector('.explorer-folders-view', { timeout: 60_000 });
    const opened = await page.evaluate(() => ({
      search: location.search,
      redirects: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).redirectCount,
    }));
    assert.deepEqual(opened, { search: `?folder=${host.workspaceDir}`, redirects: 0 });
    const screen = await firstScreen(page);
    assert.equal(screen.restricted, false, show(screen));
    assert.equal(screen.welcome, false, show(screen));
    assert.deepEqual(screen.tabs, [], show(screen));
    assert.equal(screen.chatVisible, false, show(screen));
  });

  it("opens the repository's README as a preview once the clone lands, and nothing else", async () => {
    await waitFor('the bridge to answer /health', async () => (await fetch(`${bridge}/health`)).ok, {
      timeoutMs: 90_000,
    });
    const res = await fetch(`${bridge}/data`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${BRIDGE_TOKEN}`,
        'x-ide-cloud-reservation': 'first-screen',
      },
      body: JSON.stringify({
        environment: {
          GIT_URI: git.urlWithCredentials('course/first-screen.git', 'ada', PASSWORD),
          GIT_USER: 'Ada',
          GIT_MAIL: 'ada@example.org',
          PLATFORM_TOKEN: `lms-${randomUUID()}`,
        },
      }),
    });
    assert.equal(res.status, 200);
    const screen = await firstScreen(host.page, {
      timeoutMs: 90_000,
      until: (s) => s.tabs.includes('Preview README.md'),
    });
    assert.deepEqual(screen.tabs, ['Preview README.md'], show(screen));
    assert.equal(screen.activeTab, 'Preview README.md');
    assert.equal(screen.restricted, false, show(screen));
    assert.equal(screen.welcome, false, show(screen));
    assert.equal(screen.chatVisible, false, show(screen));
    assert.equal(
      await readFile(path.join(host.workspaceDir, 'README.md'), 'utf8'),
      '# First exercise\n\nStart here.\n',
    );
  });

  it('keeps another folder restricted, also after the work folder was trusted in the same browser', async () => {
    await host.openFolder(other);
    const screen = await firstScreen(host.page);
    assert.equal(screen.restricted, true, show(screen));
    assert.equal(screen.welcome, false, show(screen));
    assert.equal(screen.chatVisible, false, show(screen));

    // Back in the work folder of the same browser: still trusted, the README where the student left it.
    await host.openFolder(host.workspaceDir);
    const back = await firstScreen(host.page);
    assert.equal(back.restricted, false, show(back));
    assert.equal(back.welcome, false, show(back));
  });

  it("starts the JavaScript debugger of the image's trimmed built-ins: a JavaScript Debug Terminal opens", async () => {
    // Its activation registers every launch type of its manifest (builtin-extensions.mjs keeps them all).
    const page = host.page;
    const command = 'Debug: JavaScript Debug Terminal';
    await page.keyboard.press('F1'); // the command palette, its `>` typed already
    await page.waitForSelector('.quick-input-widget .quick-input-box input', { state: 'visible', timeout: 30_000 });
    await page.keyboard.type(command);
    await page.waitForFunction(
      (label) =>
        document
          .querySelector('.quick-input-list .monaco-list-row.focused')
          ?.getAttribute('aria-label')
          ?.startsWith(label) ?? false,
      command,
      { timeout: 30_000 },
    );
    await page.keyboard.press('Enter');
    await waitFor(
      'a JavaScript Debug Terminal',
      () =>
        page.evaluate(() =>
          Array.from(document.querySelectorAll('.terminal-tabs-entry, .single-terminal-tab, .terminal-tab'))
            .map((e) => e.textContent ?? '')
            .some((text) => text.includes('JavaScript Debug Terminal')),
        ),
      { timeoutMs: 60_000 },
    );
    const logs = (await host.logFiles()).map((log) => log.text).join('\n');
    assert.doesNotMatch(logs, /Activating extension .?ms-vscode\.js-debug.? failed/i);
  });
});

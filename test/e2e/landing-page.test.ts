// The landing page in a real browser (Debian Chromium through playwright-core) against the real REST
// service, the real operator (lazy path; pods run through kwok) and the local control plane. Session
// URLs use the operator's session host, whose requests the browser answers itself (no network). Screenshots of each screen
// go to test-artifacts/.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BrowserContext } from 'playwright-core';
import { parseLandingConfig, startLandingPage, launchTarget } from '../../server/src/landing/index.js';
import { screenshot } from '../support/browser.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, ON_NODE_WITHOUT_KUBELET, provideVolume } from '../support/operator.js';
import {
  LANDING_APPS,
  recordReports,
  SESSION_HOST,
  sessionUrlPattern,
  sessionHostContext,
} from '../support/landing.js';
import { SERVICE_AUTH_TOKEN } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const STEPS = ['requested', 'created', 'starting', 'routed', 'ready'];

describe('landing page in a real browser (anonymous mode, real service and operator)', function () {
  this.timeout(240_000);
  const visited: string[] = [];
  let context: BrowserContext;
  let blocked: string[];

  const platformToken = `ptok-${randomUUID()}`;
  const gitPassword = `gitpw-${randomUUID()}`;
  const newGitPassword = `gitpw2-${randomUUID()}`;
  const repo = 'https://git.example.test/course/exercise-1.git';
  const withCredentials = (password: string) => repo.replace('https://', `https://student:${password}@`);
  const secrets = [platformToken, gitPassword, newGitPassword];

  const deepLink = (params: Record<string, string>) =>
    `${stack.landing.url}/?${new URLSearchParams(params).toString()}`;
  const fullLink = (user: string, password = gitPassword) =>
    deepLink({
      appDef: 'python-latest',
      gitUri: withCredentials(password),
      gitUser: 'student',
      gitMail: user,
      platformUrl: 'http://127.0.0.1:9/platform',
      platformToken,
      user,
      gitToken: 'ignored-git-token',
    });

  const stack = useStack('landing', {
    // Its pods go to a node no kubelet runs: they never start, so its sessions stay starting.
    nodeWithoutKubelet: true,
    apps: [
      appDefinitionSpec('python-latest'),
      appDefinitionSpec('java-17-templates-latest'),
      appDefinitionSpec('ocaml-latest', ON_NODE_WITHOUT_KUBELET),
    ],
    operator: { eagerStart: false, sessionHost: SESSION_HOST, sessionScheme: 'http', sessionsPerUser: 3 },
    service: { sessionsPerUser: 3 },
    landing: {},
    browser: true,
  });

  beforeEach(async () => {
    ({ context, blocked } = await sessionHostContext(stack.browser, visited));
  });
  afterEach(async () => {
    await context?.close();
    assert.deepEqual(blocked, [], 'the page tried to reach a non-loopback host');
  });

  it('auto-starts with appDef, gitUri and platformToken: progress in order, then the session URL', async () => {
    const user = 'alice@example.com';
    const { workspaceName, sessionName } = launchTarget('python-latest', user, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    const page = await context.newPage();
    const reports = await recordReports(page);
    const launches: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/launch')) launches.push(request.url());
    });

    await page.goto(fullLink(user));
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    assert.equal(await page.textContent('h1'), 'IDE session');
    assert.ok(visited.some((url) => sessionUrlPattern(sessionName).test(url)));
    assert.equal(launches.length, 1, 'no click needed, exactly one launch');

    // The address bar never showed a token once the page ran.
    const landingReports = reports.filter((rep) => rep.href.startsWith(stack.landing.url));
    assert.ok(landingReports.length > 0);
    for (const report of landingReports) {
      for (const secret of [...secrets, 'ignored-git-token', 'platformToken', 'gitUri']) {
        assert.ok(!report.href.includes(secret), `address bar holds ${secret}: ${report.href}`);
      }
    }
    // The progress steps appeared in order, ending with ready.
    const seen = landingReports.at(-1)!.steps.split(',');
    assert.deepEqual(seen, STEPS.slice(0, seen.length));
    assert.equal(seen.at(-1), 'ready');
    for (let i = 1; i < landingReports.length; i++) {
      assert.ok(landingReports[i]!.steps.startsWith(landingReports[i - 1]!.steps), 'steps only move forward');
    }

    const session = await stack.resources.sessions.get(sessionName);
    assert.equal(session.spec.user, user);
    assert.equal(session.spec.workspace, workspaceName);
    assert.deepEqual(session.spec.envVars, {
      IDE: 'true',
      GIT_URI: withCredentials(gitPassword),
      GIT_USER: 'student',
      GIT_MAIL: user,
      PLATFORM_TOKEN: platformToken,
      PLATFORM_URL: 'http://127.0.0.1:9/platform',
    });
    await screenshot(page, 'landing-session-reached');
  });

  it('runs its script inline, the one script its policy admits', async () => {
    const response = await fetch(`${stack.landing.url}/`);
    const policy = response.headers.get('content-security-policy') ?? '';
    const scriptSrc = policy
      .split(';')
      .map((d) => d.trim())
      .find((d) => d.startsWith('script-src'));
    assert.match(scriptSrc ?? '', /^script-src 'sha256-[A-Za-z0-9+/]+=*'$/, policy);
    assert.match(await response.text(), /<script>[^<]/);
    assert.equal((await fetch(`${stack.landing.url}/app.js`)).status, 404);
    // In the browser: the page runs (it shows its launch screen) and the policy refused nothing.
    const page = await context.newPage();
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { violations: string[] }).violations ??= [];
        (window as unknown as { violations: string[] }).violations.push(e.violatedDirective);
      });
    });
    await page.goto(deepLink({ appDef: 'python-latest', gitUri: withCredentials(gitPassword) }));
    await page.waitForSelector('#screen-launch:not([hidden])', { timeout: 30_000 });
    assert.deepEqual(await page.evaluate(() => (window as unknown as { violations?: string[] }).violations ?? []), []);
  });

  it('the same link twice, and a link with a new token in gitUri, land in the same workspace', async () => {
    const user = 'alice@example.com';
    const { workspaceName, sessionName } = launchTarget('python-latest', user, repo);
    for (const link of [fullLink(user), fullLink(user, newGitPassword)]) {
      const page = await context.newPage();
      await page.goto(link);
      await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 60_000 });
      await page.close();
    }
    const workspaces = (await stack.resources.workspaces.list()).filter((w) => w.spec.user === user);
    assert.deepEqual(
      workspaces.map((w) => w.metadata.name),
      [workspaceName],
    );
    assert.deepEqual(
      (await stack.resources.sessions.list()).filter((s) => s.spec.user === user).map((s) => s.metadata.name),
      [sessionName],
    );
  });

  it('appDef and gitUri without platformToken: the launch screen, then a manual launch with a build system', async () => {
    const user = 'bob@example.com';
    const { workspaceName, sessionName } = launchTarget('java-17-templates-latest', user, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    const page = await context.newPage();
    const launches: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/api/launch')) launches.push(request.url());
    });
    await page.goto(deepLink({ appdef: 'java-17-templates-latest', gitUri: withCredentials(gitPassword), user }));
    await page.waitForSelector('body[data-screen=launch]');
    assert.ok(!page.url().includes(gitPassword), 'no credentials in the address bar');
    assert.equal(page.url(), `${stack.landing.url}/`);
    // Every configured app with its label; the -templates app preselected with its build systems.
    assert.deepEqual(await page.$$eval('#apps label', (labels) => labels.map((l) => l.textContent)), [
      'Python',
      'Java 17',
      'Rust',
      'OCaml',
    ]);
    assert.equal(await page.isChecked('input[value=java-17-templates-latest]'), true);
    assert.deepEqual(await page.$$eval('#build-system option', (options) => options.map((o) => o.textContent)), [
      'Maven',
      'Gradle',
    ]);
    await screenshot(page, 'landing-launch-screen');
    assert.equal(launches.length, 0, 'no launch without a click');
    assert.equal((await stack.resources.sessions.list()).filter((s) => s.spec.user === user).length, 0);

    await page.selectOption('#build-system', 'gradle');
    await page.click('#launch-button');
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    const session = await stack.resources.sessions.get(sessionName);
    assert.equal(session.spec.envVars?.TEMPLATE, 'gradle');
    assert.equal(session.spec.envVars?.PLATFORM_TOKEN, undefined);
    assert.equal(session.spec.envVars?.IDE, 'true');
  });

  it('an unknown appDef shows an error and sends no request', async () => {
    const page = await context.newPage();
    const apiCalls: string[] = [];
    page.on('request', (request) => {
      if (/\/api\/(launch|progress|cancel)$/.test(request.url())) apiCalls.push(request.url());
    });
    await page.goto(deepLink({ appDef: 'cobol-latest', gitUri: repo, platformToken, user: 'eve@example.com' }));
    await page.waitForSelector('body[data-screen=error]');
    assert.equal(await page.getAttribute('body', 'data-failure'), 'unknown-app');
    assert.match((await page.textContent('#error-title')) ?? '', /Unknown IDE type/);
    assert.deepEqual(apiCalls, []);
    assert.equal((await stack.resources.sessions.list()).filter((s) => s.spec.user === 'eve@example.com').length, 0);
    await screenshot(page, 'landing-error-unknown-app');
  });

  it('an app the cluster does not have: the human message for 473', async () => {
    const page = await context.newPage();
    await page.goto(deepLink({ appDef: 'rust-latest', gitUri: repo, platformToken, user: 'frank@example.com' }));
    await page.waitForSelector('body[data-screen=error]');
    assert.equal(await page.getAttribute('body', 'data-failure'), '473');
    assert.match((await page.textContent('#error-title')) ?? '', /not available/);
  });

  it('shows progress while the session starts, and cancel stops the session', async () => {
    // ocaml-latest's pods go to a node no kubelet runs: its pod never starts, the session stays starting.
    const user = 'carol@example.com';
    const { sessionName, workspaceName } = launchTarget('ocaml-latest', user, repo);
    const page = await context.newPage();
    const reports = await recordReports(page);
    await page.goto(deepLink({ appDef: 'ocaml-latest', gitUri: repo, platformToken, user }));
    await page.waitForSelector('body[data-screen=progress]');
    await page.waitForFunction(() => (document.body.dataset.steps ?? '').split(',').includes('starting'), undefined, {
      timeout: 60_000,
    });
    assert.match((await page.textContent('#elapsed')) ?? '', /^\d+:\d\d$/);
    assert.ok(Number(await page.getAttribute('#progress-bar', 'value')) >= 3);
    await screenshot(page, 'landing-progress');
    await eventually(async () => assert.ok(await stack.resources.sessions.find(sessionName)), 30_000);

    await page.click('#cancel-button');
    await page.waitForSelector('body[data-screen=error]');
    assert.equal(await page.getAttribute('body', 'data-failure'), 'cancelled');
    await screenshot(page, 'landing-cancelled');
    await eventually(async () => assert.equal(await stack.resources.sessions.find(sessionName), undefined), 30_000);
    // Issue 27, item 1: the workspace this launch made never served, and goes with it (no claim left).
    await eventually(async () => assert.equal(await stack.resources.workspaces.find(workspaceName), undefined), 30_000);
    const steps = reports.at(-1)!.steps.split(',');
    assert.deepEqual(steps, STEPS.slice(0, steps.length));
  });

  it('losing the network while the IDE starts shows the network message', async () => {
    const user = 'heidi@example.com';
    const { sessionName } = launchTarget('ocaml-latest', user, repo);
    const page = await context.newPage();
    await page.goto(deepLink({ appDef: 'ocaml-latest', gitUri: repo, platformToken, user }));
    await page.waitForFunction(() => (document.body.dataset.steps ?? '').split(',').includes('starting'), undefined, {
      timeout: 60_000,
    });
    await context.setOffline(true);
    await page.waitForSelector('body[data-screen=error]');
    assert.equal(await page.getAttribute('body', 'data-failure'), 'network');
    assert.match((await page.textContent('#error-title')) ?? '', /No network connection/);
    await screenshot(page, 'landing-network-lost');
    await context.setOffline(false);
    await stack.resources.sessions.delete(sessionName);
  });

  it('accepts the same parameters by an HTML form POST (no token in any address)', async () => {
    const user = 'dave@example.com';
    const { workspaceName, sessionName } = launchTarget('python-latest', user, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    const page = await context.newPage();
    const addresses: string[] = [];
    page.on('request', (request) => addresses.push(request.url()));
    const fields = { appDef: 'python-latest', gitUri: withCredentials(gitPassword), platformToken, user };
    const inputs = Object.entries(fields)
      .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
      .join('');
    await page.setContent(
      `<form method="post" action="${stack.landing.url}/">${inputs}<button id="go">Go</button></form>`,
    );
    await page.click('#go');
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    for (const address of addresses) {
      for (const secret of secrets) assert.ok(!address.includes(secret), `token in a request address: ${address}`);
    }
    assert.equal((await stack.resources.sessions.get(sessionName)).spec.envVars?.PLATFORM_TOKEN, platformToken);
  });

  it('a failed ping shows the maintenance message', async () => {
    const down = await startLandingPage(
      parseLandingConfig({
        serviceUrl: 'http://127.0.0.1:9',
        serviceAuthToken: SERVICE_AUTH_TOKEN,
        apps: LANDING_APPS,
        port: 0,
        host: '127.0.0.1',
        logLevel: 'silent',
      }),
    );
    try {
      const page = await context.newPage();
      await page.goto(`${down.url}/?appDef=python-latest&user=x@example.com`);
      await page.waitForSelector('body[data-screen=error]');
      assert.equal(await page.getAttribute('body', 'data-failure'), 'maintenance');
      assert.equal(await page.isVisible('#retry-button'), true);
      await screenshot(page, 'landing-maintenance');
    } finally {
      await down.close();
    }
  });

  it('never logs a token or credential', () => {
    const logs = [...stack.landingLogs, ...stack.service.logs].join('\n');
    for (const secret of secrets) assert.ok(!logs.includes(secret), 'a secret reached the logs');
  });
});

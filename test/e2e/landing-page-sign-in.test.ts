// The landing page with the identity provider on, in a real browser: a deep link first sends the user
// to the provider (oidc-provider from npm: authorization code + PKCE, its development login and consent
// forms), and back on the page the launch starts by itself with the access token, against the real
// service (identity-provider mode), the real operator and the local control plane.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { UnsecuredJWT } from 'jose';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTarget } from '../../server/src/landing/index.js';
import { SIGN_IN_COOKIE, SignInCookie } from '../../server/src/landing/sign-in-cookie.js';
import { screenshot } from '../support/browser.js';
import { eventually } from '../support/kube.js';
import {
  recordReports,
  SESSION_HOST,
  SESSION_ORIGIN,
  sessionUrlPattern,
  sessionHostContext,
} from '../support/landing.js';
import { listenLoginProvider, type LoginProvider } from '../support/oidc-login.js';
import { appDefinitionSpec, provideVolume } from '../support/operator.js';
import { useStack } from '../support/stack.js';
import { startHoldProxy, type HoldProxy } from '../support/watch-hold-proxy.js';

/** The page's LANDING_PAGE_COOKIE_SECRET: the test seals sign-ins as the page would. */
const COOKIE_SECRET = `cookie-secret-${randomUUID()}`;

/** A token the provider never issued (unsigned), with `claims` and an hour to run. */
function forgedToken(claims: Record<string, unknown>): string {
  return new UnsecuredJWT(claims).setExpirationTime(Math.floor(Date.now() / 1000) + 3600).encode();
}

/** `promise`, or an error naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('landing page in a real browser (identity provider on)', function () {
  this.timeout(240_000);
  let idp: LoginProvider;
  let proxy: HoldProxy;
  let context: BrowserContext;
  let blocked: string[];
  const visited: string[] = [];
  const platformToken = `ptok-${randomUUID()}`;
  const repo = 'https://git.example.test/course/exercise-2.git';

  before(async () => {
    idp = await listenLoginProvider();
    proxy = await startHoldProxy(() => new URL(stack.service.url));
  });
  const stack = useStack('landing-sso', {
    apps: [appDefinitionSpec('python-latest')],
    operator: { eagerStart: false, sessionHost: SESSION_HOST },
    service: () => ({ identityProvider: { issuer: idp.issuer, audience: idp.audience } }),
    landing: () => ({
      // The service as the page's server reaches it: through the proxy, which can hold a request.
      serviceUrl: proxy.url,
      identityProvider: { issuer: idp.issuer, clientId: 'ide-cloud-landing-page', scope: idp.scope },
      cookieSecret: COOKIE_SECRET,
    }),
    browser: true,
  });
  before(async () => {
    await idp.start({ clientId: 'ide-cloud-landing-page', redirectUris: [`${stack.landing.url}/`] });
    ({ context, blocked } = await sessionHostContext(stack.browser, visited));
  });
  stack.cleanUp(async () => {
    await context?.close();
    await idp?.close();
  });
  stack.cleanUp(() => proxy?.close(), 'last');

  /** Follows the course's deep link in `page` to the session; answers what it asked the provider on the way. */
  async function deepLinkToSession(page: Page, sessionName: string, timeoutMs: number): Promise<string[]> {
    const toProvider: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(idp.issuer)) toProvider.push(request.url());
    });
    await page.goto(
      `${stack.landing.url}/?${new URLSearchParams({ appDef: 'python-latest', gitUri: repo, platformToken })}`,
    );
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: timeoutMs });
    return toProvider;
  }

  /** Puts a sealed sign-in in the browser as the page's server would have set it. */
  async function keepInBrowser(sealed: string): Promise<void> {
    const domain = new URL(stack.landing.url).hostname;
    const attributes = { domain, path: '/', httpOnly: true, secure: true, sameSite: 'Strict' as const };
    await context.addCookies([{ name: SIGN_IN_COOKIE, value: sealed, ...attributes }]);
  }

  it('signs in first (authorization code + PKCE), then auto-starts as the signed-in user', async () => {
    const email = 'grace@example.com';
    const { workspaceName, sessionName } = launchTarget('python-latest', email, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    const page = await context.newPage();
    const reports = await recordReports(page);
    const authorizeRequests: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${idp.issuer}/auth`)) authorizeRequests.push(request.url());
    });

    // `user` is not read with the identity provider on: the token's e-mail is the user.
    const link = `${stack.landing.url}/?${new URLSearchParams({ appDef: 'python-latest', gitUri: repo, platformToken, user: 'mallory@example.com' })}`;
    await page.goto(link);
    await page.waitForSelector('input[name=login]', { timeout: 30_000 });
    assert.ok(page.url().startsWith(idp.issuer), 'sent to the identity provider before anything else');
    assert.equal(authorizeRequests.length, 1);
    const authorize = new URL(authorizeRequests[0]!);
    assert.equal(authorize.searchParams.get('response_type'), 'code');
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(authorize.searchParams.get('code_challenge'));
    assert.ok(!authorizeRequests[0]!.includes(platformToken), 'no launch value travels to the provider');
    await screenshot(page, 'landing-sign-in');

    await page.fill('input[name=login]', email);
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    // The development consent form: grant what the page asked for.
    await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached', timeout: 30_000 });
    await page.click('button[type=submit]');

    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    assert.ok(visited.some((url) => sessionUrlPattern(sessionName).test(url)));
    const session = await stack.resources.sessions.get(sessionName);
    assert.equal(session.spec.user, email);
    assert.equal(session.spec.envVars?.PLATFORM_TOKEN, platformToken);

    const landingReports = reports.filter((rep) => rep.href.startsWith(stack.landing.url));
    assert.ok(landingReports.length > 0);
    for (const report of landingReports) {
      assert.ok(!report.href.includes(platformToken), `address bar holds the token: ${report.href}`);
      assert.ok(!/[?&](code|state)=/.test(report.href) || report.screen === 'loading', 'the sign-in answer is cleared');
    }
    assert.equal(landingReports.at(-1)!.steps.split(',').at(-1), 'ready');
    // oidc-provider's development login form links a web font; the context blocks it like any
    // non-loopback request. Nothing else may have tried to leave the machine.
    assert.deepEqual(
      blocked.filter((url) => !url.startsWith('https://fonts.googleapis.com/')),
      [],
    );
    const logs = [...stack.landingLogs, ...stack.service.logs].join('\n');
    assert.ok(!logs.includes(platformToken), 'the platform token reached the logs');
  });

  it('signed in already: a new tab launches without the provider, with the sign-in its browser kept', async () => {
    const email = 'grace@example.com';
    const { sessionName } = launchTarget('python-latest', email, repo);
    // The first tab kept its sign-in in a cookie the page's script cannot read.
    const [kept] = (await context.cookies(stack.landing.url)).filter((c) => c.name === SIGN_IN_COOKIE);
    assert.ok(kept, 'the sign-in was kept for the other tabs');
    assert.equal(kept.httpOnly, true);
    assert.equal(kept.secure, true);
    assert.equal(kept.sameSite, 'Strict');
    assert.equal(kept.expires, -1, 'it ends with the browser');
    const page = await context.newPage();
    // The page comes with its configuration and the provider's discovery document: neither is fetched,
    // and the provider is not asked at all.
    const fetched: string[] = [];
    page.on('request', (request) => {
      const url = request.url();
      if (url.startsWith(idp.issuer) || url.endsWith('/config.json')) fetched.push(url);
    });
    await page.goto(
      `${stack.landing.url}/?${new URLSearchParams({ appDef: 'python-latest', gitUri: repo, platformToken })}`,
    );
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 60_000 });
    assert.deepEqual(fetched, []);
    assert.deepEqual(
      (await stack.resources.workspaces.list()).filter((w) => w.spec.user === email).map((w) => w.metadata.name),
      [launchTarget('python-latest', email, repo).workspaceName],
    );
  });

  it("a kept sign-in whose access token ran out is renewed with the provider's refresh token: no round trip", async () => {
    const email = 'grace@example.com';
    const { sessionName } = launchTarget('python-latest', email, repo);
    const seals = new SignInCookie(COOKIE_SECRET);
    const keptCookie = async () =>
      (await context.cookies(stack.landing.url)).find((c) => c.name === SIGN_IN_COOKIE)?.value;
    const kept = seals.open((await keptCookie())!)!;
    assert.ok(kept.refreshToken, 'the page kept the refresh token the provider issued');
    // The same sign-in, its access token run out (as five minutes later with this provider).
    const ranOut = seals.seal({ ...kept, expiresAt: Date.now() - 1000 });
    await keepInBrowser(ranOut);
    const toProvider = await deepLinkToSession(await context.newPage(), sessionName, 60_000);
    assert.deepEqual(toProvider, [], 'the browser never went to the provider');
    const renewed = seals.open((await keptCookie())!)!;
    assert.notEqual(renewed.token, kept.token, 'a new access token from the provider');
    assert.ok(renewed.expiresAt > Date.now() + 60_000);
    assert.ok(renewed.refreshToken && renewed.refreshToken !== kept.refreshToken, 'the rotated refresh token kept');
    assert.equal(renewed.keptUntil, kept.keptUntil, 'a renewal does not lengthen the sign-in');
    const logs = [...stack.landingLogs, ...stack.service.logs].join('\n');
    for (const secret of [kept.refreshToken, renewed.refreshToken, renewed.token]) assert.ok(!logs.includes(secret));
  });

  it('keeps no sign-in whose token the service refuses: nothing sealed for a token the provider never issued', async () => {
    const forged = forgedToken({
      email: 'grace@example.com',
      email_verified: true,
      iss: idp.issuer,
      aud: idp.audience,
    });
    const answer = await fetch(`${stack.landing.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${forged}` },
      body: JSON.stringify({ user: 'grace@example.com', refreshToken: 'made-up-refresh-token' }),
    });
    assert.equal(answer.status, 401);
    assert.deepEqual(await answer.json(), { code: 401, reason: 'the service does not take this token for this user' });
    assert.equal(answer.headers.get('set-cookie'), null, 'nothing sealed, so the made-up refresh token goes nowhere');
  });

  it('a kept sign-in the service refuses is dropped, and the tab signs in at the provider', async () => {
    // A sign-in sealed with the page's key but a token the provider never issued: the service's 401.
    const forged = forgedToken({ email: 'grace@example.com' });
    const sealed = new SignInCookie(COOKIE_SECRET).seal({
      token: forged,
      user: 'grace@example.com',
      expiresAt: Date.now() + 3_600_000,
    });
    await keepInBrowser(sealed);
    const page = await context.newPage();
    const authorize: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${idp.issuer}/auth`)) authorize.push(request.url());
    });
    const { sessionName } = launchTarget('python-latest', 'grace@example.com', repo);
    await page.goto(
      `${stack.landing.url}/?${new URLSearchParams({ appDef: 'python-latest', gitUri: repo, platformToken })}`,
    );
    // The provider still knows the student: it answers at once, and the launch goes on with the new token.
    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    assert.equal(authorize.length, 1, 'signed in at the provider once');
    const [kept] = (await context.cookies(stack.landing.url)).filter((c) => c.name === SIGN_IN_COOKIE);
    assert.ok(kept && kept.value !== sealed, 'the refused sign-in was replaced by the new one');
  });

  it('a tab that leaves while its sign-in is handed over still keeps it: a new tab launches without the provider', async () => {
    const email = 'ada@example.com';
    const { workspaceName, sessionName } = launchTarget('python-latest', email, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    // A browser of its own: nothing kept in it yet, at the page or at the provider.
    const { context: own } = await sessionHostContext(stack.browser);
    // The service's word on the tab's token waits at the proxy, and the hand-over's answer with it.
    const confirmation = proxy.holdRequest(
      (method, url) =>
        method === 'GET' && url.startsWith('/service/workspace/') && url.endsWith(`/${encodeURIComponent(email)}`),
    );
    let send: (() => void) | undefined;
    try {
      const page = await own.newPage();
      await page.goto(`${stack.landing.url}/`);
      await page.waitForSelector('input[name=login]', { timeout: 30_000 });
      await page.fill('input[name=login]', email);
      await page.fill('input[name=password]', 'any password');
      await page.click('button[type=submit]');
      await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached', timeout: 30_000 });
      const handOver = page.waitForRequest(
        (request) => request.method() === 'POST' && request.url() === `${stack.landing.url}/api/sign-in`,
        { timeout: 30_000 },
      );
      await page.click('button[type=submit]');
      await handOver;
      send = await within(confirmation, 30_000, "the page's server asking the service to confirm the token");
      // The tab leaves before the answer, as the student may, or the page itself for the IDE.
      await page.goto(`${SESSION_ORIGIN}/`);
      assert.equal(new URL(page.url()).hostname, SESSION_HOST);
      send();
      send = undefined;
      const kept = await eventually(async () => {
        const cookie = (await own.cookies(stack.landing.url)).find((c) => c.name === SIGN_IN_COOKIE);
        assert.ok(cookie, 'the sign-in was kept, though its tab had left');
        return cookie;
      }, 15_000);
      assert.equal(new SignInCookie(COOKIE_SECRET).open(kept.value)?.user, email);

      const toProvider = await deepLinkToSession(await own.newPage(), sessionName, 120_000);
      assert.deepEqual(toProvider, [], 'the new tab never went to the provider');
    } finally {
      proxy.disarmRequest();
      send?.();
      await own.close();
    }
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt, UnsecuredJWT } from 'jose';
import { pino } from 'pino';
import { loadLandingConfig } from '../../src/landing/config.js';
import { createLandingApp } from '../../src/landing/server.js';
import { cookieValue, SIGN_IN_COOKIE, SignInCookie } from '../../src/landing/sign-in-cookie.js';
import { listen, type Listening } from '../../src/http/listen.js';

const SERVICE_TOKEN = 'a-service-token-of-the-page';
/** The pages' cookie secret (LANDING_PAGE_COOKIE_SECRET). */
const SECRET = 'a-cookie-secret-of-the-page-apart-from-its-service-token';
const HOUR_S = 3600;

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A token of `email`; the service's stand-in refuses a `forged` one (401), as one not signed by the issuer. */
function token(expiresInS: number | undefined, email = 'grace@example.com', forged = false): string {
  const jwt = new UnsecuredJWT({ email, ...(forged ? { forged } : {}) });
  if (expiresInS !== undefined) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + expiresInS);
  return jwt.encode();
}

describe('landing page: the kept sign-in, sealed', () => {
  const cookie = new SignInCookie(SECRET);

  it('opens what it sealed, and nothing else: another key, a changed byte, an expired seal', () => {
    const signIn = cookie.signInOf(token(HOUR_S), 'grace@example.com')!;
    const sealed = cookie.seal(signIn);
    assert.deepEqual(cookie.open(sealed), signIn);
    assert.ok(!sealed.includes(signIn.token) && !sealed.includes(Buffer.from(signIn.token).toString('base64url')));
    assert.notEqual(cookie.seal(signIn), sealed, 'a fresh IV every time');
    assert.equal(new SignInCookie(`${SECRET}-rotated`).open(sealed), undefined);
    const raw = Buffer.from(sealed, 'base64url');
    raw[20] = raw[20]! ^ 1;
    assert.equal(cookie.open(raw.toString('base64url')), undefined);
    assert.equal(cookie.open('not-a-seal'), undefined);
    assert.equal(cookie.open(sealed, signIn.expiresAt), undefined);
  });

  it('keeps a token until its own expiry, at most 12 hours; not an opaque or nearly expired one', () => {
    const now = Date.now();
    const short = cookie.signInOf(token(HOUR_S), 'a@example.com', undefined, now)!;
    assert.ok(Math.abs(short.expiresAt - (now + HOUR_S * 1000)) < 2000);
    const long = cookie.signInOf(token(48 * HOUR_S), 'a@example.com', undefined, now)!;
    assert.equal(long.expiresAt, now + 12 * HOUR_S * 1000);
    assert.equal(cookie.signInOf('an-opaque-token', 'a@example.com'), undefined);
    assert.equal(cookie.signInOf(token(undefined), 'a@example.com'), undefined);
    assert.equal(cookie.signInOf(token(30), 'a@example.com'), undefined);
  });

  it('keeps a sign-in with a refresh token past its access token, until 12 hours after the sign-in', () => {
    const now = Date.now();
    const signIn = cookie.signInOf(token(30), 'a@example.com', 'refresh-1', now)!;
    assert.ok(signIn, 'a token too near its expiry is kept when it can be renewed');
    assert.equal(signIn.refreshToken, 'refresh-1');
    assert.equal(signIn.keptUntil, now + 12 * HOUR_S * 1000);
    assert.equal(cookie.expiring(signIn, now), true);
    const sealed = cookie.seal(signIn);
    assert.ok(!sealed.includes('refresh-1'));
    assert.equal(cookie.open(sealed, now + HOUR_S * 1000)?.refreshToken, 'refresh-1');
    assert.equal(cookie.open(sealed, now + 12 * HOUR_S * 1000), undefined);

    const renewed = cookie.renewed(signIn, token(HOUR_S), 'refresh-2', now)!;
    assert.equal(renewed.user, 'a@example.com');
    assert.equal(renewed.refreshToken, 'refresh-2');
    assert.equal(renewed.keptUntil, signIn.keptUntil, 'a renewal does not lengthen the sign-in');
    assert.equal(cookie.expiring(renewed, now), false);
    assert.equal(cookie.renewed(signIn, token(HOUR_S), undefined, now)?.refreshToken, 'refresh-1');
    assert.equal(cookie.renewed(signIn, 'an-opaque-token', 'refresh-2', now), undefined);
    assert.equal(cookie.renewed(signIn, token(HOUR_S), 'refresh-2', signIn.keptUntil), undefined);
    // Sealed before refresh tokens were kept: no refresh token, the seal ends with the access token.
    const old = cookie.seal({ token: signIn.token, user: signIn.user, expiresAt: now + HOUR_S * 1000 });
    assert.equal(cookie.open(old, now)?.keptUntil, now + HOUR_S * 1000);
    assert.equal(cookie.open(old, now + HOUR_S * 1000), undefined);
  });

  it('reads one cookie of a Cookie header', () => {
    assert.equal(cookieValue('a=1; __Host-x=abc-_; b=2', '__Host-x'), 'abc-_');
    assert.equal(cookieValue('x__Host-x=1', '__Host-x'), undefined);
    assert.equal(cookieValue(undefined, '__Host-x'), undefined);
  });
});

describe('landing page: the kept sign-in, served', () => {
  let service: http.Server;
  let provider: http.Server;
  let page: Listening;
  let renewingPage: Listening;
  let anonymousPage: Listening;
  let keyOfItsOwnPage: Listening;
  const received: { authorization?: string; body: { user?: string } }[] = [];
  /** The service's confirmations of a token for a user (its workspace listing), and its answer to them. */
  const confirmations: { path: string; authorization?: string }[] = [];
  let serviceAnswers = true;
  /** The refresh grants the provider's stand-in was sent, and its answer to the next ones. */
  const grants: URLSearchParams[] = [];
  const revoked: URLSearchParams[] = [];
  let grantAnswer: { status: number; body: object };
  const logs: string[] = [];
  beforeEach(() => {
    grantAnswer = { status: 400, body: { error: 'invalid_grant' } };
    grants.length = 0;
    received.length = 0;
    confirmations.length = 0;
    serviceAnswers = true;
  });

  before(async () => {
    // The service's side of a launch, as the landing page sees it: its answer and what it was sent.
    service = http.createServer((req, res) => {
      const listing = /^\/service\/workspace\/[^/]+\/([^/]+)$/.exec(req.url ?? '');
      if (req.method === 'GET' && listing) {
        // As the service's auth layer: 401 for a token it cannot verify, 403 for another user's.
        confirmations.push({ path: req.url!, authorization: req.headers.authorization });
        const claims = (() => {
          try {
            return decodeJwt((req.headers.authorization ?? '').replace(/^Bearer /, ''));
          } catch {
            return undefined;
          }
        })();
        const status = !serviceAnswers
          ? 503
          : !claims || claims.forged
            ? 401
            : claims.email !== decodeURIComponent(listing[1]!)
              ? 403
              : 200;
        res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '[]' : '{}');
        return;
      }
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push({
          authorization: req.headers.authorization,
          body: JSON.parse(text || '{}') as { user?: string },
        });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('http://ide.example.org/s/x/\n');
      });
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'landing-sign-in-'));
    const apps = path.join(dir, 'apps.json');
    writeFileSync(apps, JSON.stringify([{ name: 'python-latest', label: 'Python' }]));
    const env = {
      SERVICE_URL: `http://127.0.0.1:${(service.address() as AddressInfo).port}`,
      SERVICE_AUTH_TOKEN: SERVICE_TOKEN,
      LANDING_PAGE_COOKIE_SECRET: SECRET,
      LANDING_PAGE_APPS_FILE: apps,
    };
    const silent = pino({ level: 'silent' });
    // The issuer is never reached: the page's metadata fetch fails quietly.
    const config = loadLandingConfig({ ...env, IDENTITY_PROVIDER_ISSUER: 'http://127.0.0.1:9/realms/x' });
    page = await listen(createLandingApp(config, silent, ''), 0, '127.0.0.1');
    const { LANDING_PAGE_COOKIE_SECRET: _none, ...withoutSecret } = env;
    const keyOfItsOwn = loadLandingConfig({
      ...withoutSecret,
      IDENTITY_PROVIDER_ISSUER: 'http://127.0.0.1:9/realms/x',
    });
    keyOfItsOwnPage = await listen(createLandingApp(keyOfItsOwn, silent, ''), 0, '127.0.0.1');
    // The provider's side of a renewal: its discovery document and token endpoint (the e2e suite
    // renews at a real provider).
    provider = http.createServer((req, res) => {
      const origin = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            issuer: origin,
            token_endpoint: `${origin}/token`,
            revocation_endpoint: `${origin}/revoke`,
          }),
        );
        return;
      }
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/revoke') {
          revoked.push(new URLSearchParams(text));
          res.writeHead(200).end();
          return;
        }
        grants.push(new URLSearchParams(text));
        // Slow enough for two tabs' requests to meet here.
        setTimeout(() => {
          res.writeHead(grantAnswer.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(grantAnswer.body));
        }, 100);
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
    const captured = pino({ level: 'info' }, { write: (line: string) => logs.push(line) });
    const renewing = loadLandingConfig({
      ...env,
      IDENTITY_PROVIDER_ISSUER: issuer,
      IDENTITY_PROVIDER_RESOURCE: 'api://ide',
    });
    renewingPage = await listen(createLandingApp(renewing, captured, ''), 0, '127.0.0.1');
    const anonymous = loadLandingConfig({ ...env, IDENTITY_PROVIDER_ISSUER: 'disabled' });
    anonymousPage = await listen(createLandingApp(anonymous, silent, ''), 0, '127.0.0.1');
  });
  after(async () => {
    await page?.close();
    await renewingPage?.close();
    await anonymousPage?.close();
    await keyOfItsOwnPage?.close();
    await new Promise((resolve) => service?.close(resolve));
    await new Promise((resolve) => provider?.close(resolve));
  });

  /** The `name=value` pair of a response's cookie, its sealed value, and the sign-in it holds under the pages' key. */
  const pairOf = (response: globalThis.Response) => (response.headers.get('set-cookie') ?? '').split(';')[0]!;
  const sealedOf = (pair: string) => cookieValue(pair, SIGN_IN_COOKIE)!;
  const openedOf = (pair: string) => new SignInCookie(SECRET).open(sealedOf(pair));
  const keep = (bearer: string, user = 'grace@example.com', extra: object = {}, url = page.url) =>
    fetch(`${url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ user, ...extra }),
    });
  const launch = (headers: Record<string, string>, user?: string, url = page.url) =>
    fetch(`${url}/api/launch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ parameters: { appDef: 'python-latest' }, ...(user ? { user } : {}) }),
    });

  it('keeps a tab’s token in an HttpOnly, host-only, same-site cookie that ends with the browser', async () => {
    assert.equal((await fetch(`${page.url}/api/sign-in`)).status, 401);
    const bearer = token(HOUR_S);
    const kept = await keep(bearer);
    assert.equal(kept.status, 204);
    const setCookie = kept.headers.get('set-cookie') ?? '';
    const attributes = setCookie.split(';').map((a) => a.trim().toLowerCase());
    assert.ok(setCookie.startsWith(`${SIGN_IN_COOKIE}=`), setCookie);
    for (const a of ['httponly', 'secure', 'samesite=strict', 'path=/']) assert.ok(attributes.includes(a), setCookie);
    assert.ok(!attributes.some((a) => a.startsWith('domain=') || a.startsWith('max-age=') || a.startsWith('expires=')));
    assert.ok(!setCookie.includes(bearer));
    const pair = setCookie.split(';')[0]!;
    const asked = await fetch(`${page.url}/api/sign-in`, { headers: { cookie: pair } });
    assert.equal(asked.status, 200);
    assert.deepEqual(await asked.json(), { user: 'grace@example.com' });
  });

  it('refuses to keep what it cannot: no bearer, no user, a dot segment for a user, an opaque token', async () => {
    const noBearer = await fetch(`${page.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'grace@example.com' }),
    });
    assert.equal(noBearer.status, 400);
    assert.equal(noBearer.headers.get('set-cookie'), null);
    assert.equal((await keep(token(HOUR_S), '')).status, 400);
    for (const dots of ['.', '..']) assert.equal((await keep(token(HOUR_S, dots), dots)).status, 400, dots);
    assert.equal((await keep('an-opaque-token')).status, 400);
    assert.deepEqual(confirmations, [], 'nothing was asked of the service');
  });

  it('keeps only a token the service takes as the user’s: a forged one, another user’s, or none when the service is down', async () => {
    const bearer = token(HOUR_S);
    assert.equal((await keep(bearer)).status, 204);
    assert.deepEqual(confirmations, [
      { path: `/service/workspace/${SERVICE_TOKEN}/grace%40example.com`, authorization: `Bearer ${bearer}` },
    ]);
    const refusals = [
      keep(token(HOUR_S, 'grace@example.com', true), 'grace@example.com', { refreshToken: 'made-up' }),
      keep(token(HOUR_S, 'mallory@example.com'), 'grace@example.com'),
    ];
    for (const answer of refusals) {
      const refused = await answer;
      assert.equal(refused.status, 401);
      assert.deepEqual(await refused.json(), {
        code: 401,
        reason: 'the service does not take this token for this user',
      });
      assert.equal(refused.headers.get('set-cookie'), null, 'nothing sealed');
    }
    serviceAnswers = false;
    const down = await keep(bearer);
    assert.equal(down.status, 503);
    assert.equal(down.headers.get('set-cookie'), null);
  });

  it('seals with its own cookie secret; without one, with a key of its process, never the service auth token', async () => {
    const sealedBy = async (url: string) => sealedOf(pairOf(await keep(token(HOUR_S), 'grace@example.com', {}, url)));
    const withSecret = await sealedBy(page.url);
    assert.ok(new SignInCookie(SECRET).open(withSecret));
    assert.equal(new SignInCookie(SERVICE_TOKEN).open(withSecret), undefined);
    const withoutSecret = await sealedBy(keyOfItsOwnPage.url);
    assert.equal(new SignInCookie(SERVICE_TOKEN).open(withoutSecret), undefined);
    assert.equal(new SignInCookie(SECRET).open(withoutSecret), undefined);
    const asked = await fetch(`${keyOfItsOwnPage.url}/api/sign-in`, {
      headers: { cookie: `${SIGN_IN_COOKIE}=${withoutSecret}` },
    });
    assert.deepEqual(await asked.json(), { user: 'grace@example.com' }, 'the page opens what it sealed');
  });

  it('launches a new tab with the kept token and its user; a tab’s own bearer goes first', async () => {
    const bearer = token(HOUR_S);
    const pair = ((await keep(bearer)).headers.get('set-cookie') ?? '').split(';')[0]!;
    received.length = 0;
    const byCookie = await launch({ cookie: pair }, 'mallory@example.com');
    assert.equal(byCookie.status, 200);
    assert.equal(received[0]?.authorization, `Bearer ${bearer}`);
    assert.equal(received[0]?.body.user, 'grace@example.com', 'the kept user, not the one the body names');
    const own = token(HOUR_S, 'ada@example.com');
    assert.equal((await launch({ cookie: pair, authorization: `Bearer ${own}` }, 'ada@example.com')).status, 200);
    assert.equal(received[1]?.authorization, `Bearer ${own}`);
    assert.equal(received[1]?.body.user, 'ada@example.com');
    // A cookie sealed by another page's key, or none: nothing is sent on, the browser signs in first.
    const foreign = new SignInCookie('another-service-token').seal({
      token: bearer,
      user: 'grace@example.com',
      expiresAt: Date.now() + 3_600_000,
    });
    assert.equal((await launch({ cookie: `${SIGN_IN_COOKIE}=${foreign}` })).status, 401);
    assert.equal(received.length, 2);
  });

  /** A sign-in kept by the renewing page, its access token about to run out, with `refreshToken`. */
  const keptRunningOut = async (refreshToken: string, user = 'grace@example.com') => {
    const kept = await keep(token(30, user), user, { refreshToken }, renewingPage.url);
    assert.equal(kept.status, 204, 'a token near its expiry is kept with its refresh token');
    return pairOf(kept);
  };
  const askSignIn = (pair: string) => fetch(`${renewingPage.url}/api/sign-in`, { headers: { cookie: pair } });

  it('renews a kept access token that ran out when a tab asks for the sign-in: once for a refresh token, re-sealed', async () => {
    const pair = await keptRunningOut('refresh-1');
    // The launch's long call never renews: it would answer with its cookie late.
    assert.equal((await launch({ cookie: pair }, undefined, renewingPage.url)).status, 401);
    assert.equal(grants.length, 0);

    const renewedToken = token(HOUR_S);
    grantAnswer = {
      status: 200,
      body: { access_token: renewedToken, refresh_token: 'refresh-2', token_type: 'Bearer' },
    };
    const answers = await Promise.all([1, 2].map(() => askSignIn(pair)));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200],
    );
    // Asked again with the same cookie after the renewal: the provider would refuse the rotated token.
    assert.equal((await askSignIn(pair)).status, 200);
    assert.equal(grants.length, 1, 'one renewal for all three');
    const confirmed = confirmations.filter((c) => c.authorization === `Bearer ${renewedToken}`);
    assert.equal(confirmed.length, 1, 'the renewed token confirmed once, for all three');
    assert.deepEqual(Object.fromEntries(grants[0]!), {
      grant_type: 'refresh_token',
      refresh_token: 'refresh-1',
      resource: 'api://ide',
      client_id: 'ide-cloud-landing-page',
    });
    const resealed = pairOf(answers[0]!);
    const opened = openedOf(resealed)!;
    assert.equal(opened.token, renewedToken);
    assert.equal(opened.refreshToken, 'refresh-2', 'the rotated refresh token is kept');
    assert.equal((await launch({ cookie: resealed }, undefined, renewingPage.url)).status, 200);
    assert.equal(received[0]?.authorization, `Bearer ${renewedToken}`);

    // The tab's own newer access token, kept again: the sign-in keeps its refresh token and its end.
    const own = token(HOUR_S);
    const again = pairOf(
      await fetch(`${renewingPage.url}/api/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${own}`, cookie: resealed },
        body: JSON.stringify({ user: 'grace@example.com' }),
      }),
    );
    const keptAgain = openedOf(again)!;
    assert.equal(keptAgain.token, own);
    assert.equal(keptAgain.refreshToken, 'refresh-2');
    assert.equal(keptAgain.keptUntil, opened.keptUntil);
    assert.ok(!logs.join('').includes('refresh-'), 'no refresh token in the logs');
  });

  it('drops a kept sign-in the provider refuses to renew (once), keeps one it could not ask, revokes one dropped', async () => {
    const refused = await keptRunningOut('refresh-3');
    const asked = await askSignIn(refused);
    assert.equal(asked.status, 401);
    assert.match(asked.headers.get('set-cookie') ?? '', new RegExp(`^${SIGN_IN_COOKIE}=;.*Expires=Thu, 01 Jan 1970`));
    assert.equal((await askSignIn(refused)).status, 401);
    assert.equal(grants.length, 1, 'a refused cookie replayed does not reach the provider again');
    assert.match(logs.join(''), /kept sign-in not renewed: the provider refused/);

    const unanswered = await keptRunningOut('refresh-4');
    grantAnswer = { status: 503, body: { error: 'temporarily_unavailable' } };
    const later = await askSignIn(unanswered);
    assert.equal(later.status, 401);
    assert.equal(later.headers.get('set-cookie'), null, 'kept for a later try');

    revoked.length = 0;
    const dropped = await fetch(`${renewingPage.url}/api/sign-in`, {
      method: 'DELETE',
      headers: { cookie: unanswered },
    });
    assert.equal(dropped.status, 204);
    await waitUntil(() => revoked.length === 1);
    assert.deepEqual(Object.fromEntries(revoked[0]!), {
      token: 'refresh-4',
      token_type_hint: 'refresh_token',
      client_id: 'ide-cloud-landing-page',
    });
    assert.ok(!logs.join('').includes('refresh-3') && !logs.join('').includes('refresh-4'));
  });

  it('drops a kept sign-in whose renewed token the service does not take as its user’s, and revokes it', async () => {
    const pair = await keptRunningOut('refresh-5');
    grantAnswer = {
      status: 200,
      body: { access_token: token(HOUR_S, 'someone-else@example.com'), refresh_token: 'refresh-6' },
    };
    revoked.length = 0;
    confirmations.length = 0;
    const asked = await askSignIn(pair);
    assert.equal(asked.status, 401);
    assert.match(asked.headers.get('set-cookie') ?? '', new RegExp(`^${SIGN_IN_COOKIE}=;`));
    assert.equal(confirmations.length, 1, 'the renewed token, for the kept user');
    assert.match(confirmations[0]!.path, /grace%40example\.com$/);
    await waitUntil(() => revoked.length === 1);
    assert.equal(revoked[0]!.get('token'), 'refresh-6');
    assert.match(logs.join(''), /the service refused the renewed token for its user/);
    assert.ok(!logs.join('').includes('refresh-5') && !logs.join('').includes('refresh-6'));
  });

  it('keeps a renewal the service could not confirm: its refresh token is spent, the launch asks the service again', async () => {
    const pair = await keptRunningOut('refresh-7');
    const renewedToken = token(HOUR_S);
    grantAnswer = { status: 200, body: { access_token: renewedToken, refresh_token: 'refresh-8' } };
    serviceAnswers = false;
    const asked = await askSignIn(pair);
    assert.equal(asked.status, 200);
    const opened = openedOf(pairOf(asked))!;
    assert.deepEqual([opened.token, opened.refreshToken], [renewedToken, 'refresh-8']);
    assert.match(logs.join(''), /kept sign-in renewed unconfirmed: the service did not answer/);
  });

  it('a tab re-keeping its token while the kept refresh token is renewed leaves the renewal’s cookie in place', async () => {
    const pair = await keptRunningOut('refresh-9');
    grantAnswer = { status: 200, body: { access_token: token(HOUR_S), refresh_token: 'refresh-10' } };
    const renewing = askSignIn(pair);
    await waitUntil(() => grants.length === 1);
    // The tab's own newer access token, sent with the cookie it had: the renewal is on its way.
    const rekept = await fetch(`${renewingPage.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token(HOUR_S)}`, cookie: pair },
      body: JSON.stringify({ user: 'grace@example.com' }),
    });
    assert.equal(rekept.status, 204);
    assert.equal(rekept.headers.get('set-cookie'), null, 'no cookie that would bring back the spent refresh-9');
    const renewed = openedOf(pairOf(await renewing))!;
    assert.equal(renewed.refreshToken, 'refresh-10');
  });

  it('keeps no refresh token that would make the cookie too large for browsers, and refuses a malformed one', async () => {
    const bearer = token(HOUR_S);
    const fits =
      3800 -
      new SignInCookie(SECRET).seal({ token: bearer, user: 'grace@example.com', expiresAt: 0, keptUntil: 0 }).length;
    for (const [length, keeps] of [
      [Math.floor(fits * 0.7), true],
      [fits, false],
    ] as const) {
      const kept = await keep(bearer, 'grace@example.com', { refreshToken: 'r'.repeat(length) }, renewingPage.url);
      assert.equal(kept.status, 204);
      const setCookie = kept.headers.get('set-cookie') ?? '';
      assert.ok(setCookie.length < 4096, `${setCookie.length} bytes`);
      const opened = openedOf(pairOf(kept))!;
      assert.equal(opened.refreshToken !== undefined, keeps, `a refresh token of ${length} characters`);
      if (!keeps) assert.equal(opened.keptUntil, opened.expiresAt, 'without it, the sign-in ends with its token');
    }
    const spaced = await keep(bearer, 'grace@example.com', { refreshToken: 'a b' }, renewingPage.url);
    assert.equal(spaced.status, 400);
    assert.deepEqual(await spaced.json(), {
      code: 400,
      reason: 'refreshToken must be printable ASCII without spaces, at most 4096 characters',
    });
  });

  it('drops the kept sign-in on request', async () => {
    const dropped = await fetch(`${page.url}/api/sign-in`, { method: 'DELETE' });
    assert.equal(dropped.status, 204);
    const setCookie = dropped.headers.get('set-cookie') ?? '';
    assert.ok(setCookie.startsWith(`${SIGN_IN_COOKIE}=;`), setCookie);
    assert.match(setCookie, /Expires=Thu, 01 Jan 1970/);
  });

  it('has no kept sign-in in anonymous mode', async () => {
    assert.equal((await fetch(`${anonymousPage.url}/api/sign-in`)).status, 404);
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { UnsecuredJWT } from 'jose';
import { pino } from 'pino';
import { loadLandingConfig } from '../../src/landing/config.js';
import { createLandingApp } from '../../src/landing/server.js';
import { cookieValue, SIGN_IN_COOKIE, SignInCookie } from '../../src/landing/sign-in-cookie.js';
import { listen, type Listening } from '../../src/http/listen.js';

const SECRET = 'a-service-token-of-the-page';
const HOUR_S = 3600;

function token(expiresInS: number | undefined, email = 'grace@example.com'): string {
  const jwt = new UnsecuredJWT({ email });
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
    const short = cookie.signInOf(token(HOUR_S), 'a@example.com', now)!;
    assert.ok(Math.abs(short.expiresAt - (now + HOUR_S * 1000)) < 2000);
    const long = cookie.signInOf(token(48 * HOUR_S), 'a@example.com', now)!;
    assert.equal(long.expiresAt, now + 12 * HOUR_S * 1000);
    assert.equal(cookie.signInOf('an-opaque-token', 'a@example.com'), undefined);
    assert.equal(cookie.signInOf(token(undefined), 'a@example.com'), undefined);
    assert.equal(cookie.signInOf(token(30), 'a@example.com'), undefined);
  });

  it('reads one cookie of a Cookie header', () => {
    assert.equal(cookieValue('a=1; __Host-x=abc-_; b=2', '__Host-x'), 'abc-_');
    assert.equal(cookieValue('x__Host-x=1', '__Host-x'), undefined);
    assert.equal(cookieValue(undefined, '__Host-x'), undefined);
  });
});

describe('landing page: the kept sign-in, served', () => {
  let service: http.Server;
  let page: Listening;
  let anonymousPage: Listening;
  const received: { authorization?: string; body: { user?: string } }[] = [];

  before(async () => {
    // The service's side of a launch, as the landing page sees it: its answer and what it was sent.
    service = http.createServer((req, res) => {
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
      SERVICE_AUTH_TOKEN: SECRET,
      LANDING_PAGE_APPS_FILE: apps,
    };
    const silent = pino({ level: 'silent' });
    // The issuer is never reached: the page's metadata fetch fails quietly.
    const config = loadLandingConfig({ ...env, IDENTITY_PROVIDER_ISSUER: 'http://127.0.0.1:9/realms/x' });
    page = await listen(createLandingApp(config, silent, ''), 0, '127.0.0.1');
    const anonymous = loadLandingConfig({ ...env, IDENTITY_PROVIDER_ISSUER: 'disabled' });
    anonymousPage = await listen(createLandingApp(anonymous, silent, ''), 0, '127.0.0.1');
  });
  after(async () => {
    await page?.close();
    await anonymousPage?.close();
    await new Promise((resolve) => service?.close(resolve));
  });

  const keep = (bearer: string, user = 'grace@example.com') =>
    fetch(`${page.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ user }),
    });
  const launch = (headers: Record<string, string>, user?: string) =>
    fetch(`${page.url}/api/launch`, {
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

  it('refuses to keep what it cannot: no bearer, no user, an opaque token', async () => {
    const noBearer = await fetch(`${page.url}/api/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'grace@example.com' }),
    });
    assert.equal(noBearer.status, 400);
    assert.equal(noBearer.headers.get('set-cookie'), null);
    assert.equal((await keep(token(HOUR_S), '')).status, 400);
    assert.equal((await keep('an-opaque-token')).status, 400);
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

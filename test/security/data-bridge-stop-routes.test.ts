// The bridge's end-of-session routes (issue 17) as an attacker meets them: each needs the instance's
// token (401 without, 403 with another); what only the IDE's extension may do (read the notice,
// report activity) answers callers on the pod's host only; bad bodies are refused with the exact
// reason; and a save asked of a bridge that cannot save says so instead of pretending.
import assert from 'node:assert/strict';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { SessionLifecycle } from '../../extension/src/lifecycle.js';
import { MemoryLogger } from '../../extension/src/logger.js';
import { BridgeServer } from '../../extension/src/server.js';
import { EnvironmentStore } from '../../extension/src/store.js';
import { MemorySecretStorage } from '../../extension/test/fakes.js';

const TOKEN = 'instance-token-stop-routes-7e21';
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe('security: the bridge’s notice, activity and save routes', () => {
  let server: BridgeServer;
  let local: string;
  let remote: string | undefined;
  let now = Date.parse('2026-11-23T17:00:00Z');
  const logger = new MemoryLogger();
  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4')?.address;

  before(async () => {
    assert.ok(external, 'this test needs a network interface besides loopback');
    const store = new EnvironmentStore(new MemorySecretStorage(), logger);
    server = new BridgeServer(store, logger, {
      host: '0.0.0.0',
      port: 0,
      token: TOKEN,
      lifecycle: new SessionLifecycle(() => now),
    });
    const { port } = (await server.listen()) as AddressInfo;
    local = `http://127.0.0.1:${port}`;
    remote = `http://${external}:${port}`;
  });
  after(() => server.dispose());

  async function call(
    base: string,
    method: string,
    path: string,
    options: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(options.headers ?? AUTH) },
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    return { status: res.status, json: await res.json() };
  }

  it('every route needs the instance token: 401 without, 403 with another', async () => {
    const routes: [string, string, string?][] = [
      ['POST', '/notice', '{"reason":"Idle","secondsLeft":60}'],
      ['GET', '/notice'],
      ['POST', '/activity', '{}'],
      ['GET', '/activity'],
      ['POST', '/save', '{}'],
    ];
    for (const [method, path, body] of routes) {
      const none = await call(local, method, path, { body, headers: {} });
      assert.deepEqual(none, { status: 401, json: { error: 'a bearer token is required' } }, `${method} ${path}`);
      const wrong = await call(local, method, path, { body, headers: { authorization: 'Bearer not-the-token-0000' } });
      assert.deepEqual(
        wrong,
        { status: 403, json: { error: "the token is not this instance's" } },
        `${method} ${path}`,
      );
    }
    assert.equal((await call(local, 'GET', '/notice')).status, 200);
  });

  it('the notice is read, and activity reported, from the pod’s own host only; the operator’s routes answer on the pod address', async () => {
    for (const [method, path] of [
      ['GET', '/notice'],
      ['POST', '/activity'],
    ] as const) {
      const answer = await call(remote!, method, path, { body: method === 'POST' ? '{}' : undefined });
      assert.deepEqual(answer, { status: 403, json: { error: 'this route answers callers on this host only' } });
    }
    assert.equal((await call(remote!, 'POST', '/notice', { body: '{"reason":"Idle","secondsLeft":60}' })).status, 200);
    assert.equal((await call(remote!, 'GET', '/activity')).status, 200);
  });

  it('refuses bad notices with the reason, and keeps the last good one, counted down on its own clock', async () => {
    const bad: [string, string][] = [
      ['not json', 'body is not valid JSON'],
      ['[]', 'body must be a JSON object, got an array'],
      ['{"reason":"Idle","secondsLeft":60,"extra":1}', 'unexpected field(s) "extra"'],
      ['{"reason":"Bored","secondsLeft":60}', 'field "reason" must be "Idle" or "MaxLifetime"'],
      ['{"reason":"Idle","secondsLeft":-1}', 'field "secondsLeft" must be an integer from 0 to 86400'],
      ['{"reason":"Idle","secondsLeft":1.5}', 'field "secondsLeft" must be an integer from 0 to 86400'],
      ['{"reason":"Idle","secondsLeft":86401}', 'field "secondsLeft" must be an integer from 0 to 86400'],
      ['{"reason":"Idle","secondsLeft":60,"saveWork":"yes"}', 'field "saveWork" must be a boolean, got a string'],
    ];
    for (const [body, error] of bad) {
      assert.deepEqual(await call(local, 'POST', '/notice', { body }), { status: 400, json: { error } }, body);
    }
    const posted = await call(local, 'POST', '/notice', {
      body: '{"reason":"MaxLifetime","secondsLeft":300,"saveWork":true}',
    });
    assert.equal(posted.status, 200);
    const { id } = posted.json as { id: number };
    now += 61_000;
    assert.deepEqual(await call(local, 'GET', '/notice'), {
      status: 200,
      json: { notice: { id, reason: 'MaxLifetime', secondsLeft: 239, saveWork: true } },
    });
  });

  it('activity: nothing or {} only; the operator reads the seconds since, null before any', async () => {
    const fresh = new BridgeServer(new EnvironmentStore(new MemorySecretStorage(), logger), logger, {
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      lifecycle: new SessionLifecycle(() => now),
    });
    const base = `http://127.0.0.1:${((await fresh.listen()) as AddressInfo).port}`;
    try {
      assert.deepEqual(await call(base, 'GET', '/activity'), { status: 200, json: { secondsSinceActivity: null } });
      assert.deepEqual(await call(base, 'POST', '/activity', { body: '{"at":"now"}' }), {
        status: 400,
        json: { error: 'unexpected field(s) "at"' },
      });
      assert.deepEqual(await call(base, 'POST', '/activity', { body: '' }), { status: 200, json: { recorded: true } });
      now += 42_000;
      assert.deepEqual(await call(base, 'GET', '/activity'), { status: 200, json: { secondsSinceActivity: 42 } });
      assert.deepEqual(await call(base, 'PUT', '/activity', { body: '{}' }), {
        status: 405,
        json: { error: 'method not allowed, use GET or POST' },
      });
    } finally {
      fresh.dispose();
    }
  });

  it('a bridge without a save answers that it cannot, and takes no body', async () => {
    assert.deepEqual(await call(local, 'POST', '/save', { body: '{"branch":"main"}' }), {
      status: 400,
      json: { error: 'unexpected field(s) "branch"' },
    });
    assert.deepEqual(await call(local, 'POST', '/save', { body: '{}' }), {
      status: 200,
      json: { outcome: 'failed', code: 'SaveUnavailable', message: 'this bridge does not save work' },
    });
    assert.deepEqual(await call(local, 'GET', '/save'), {
      status: 405,
      json: { error: 'method not allowed, use POST' },
    });
    for (const line of logger.lines) assert.ok(!line.includes(TOKEN), `the token reached a log line: ${line}`);
  });
});

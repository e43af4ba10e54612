// Attacks on the REST service's front door, replayed against the real service and kube-apiserver
// (issue 15): slow clients that hold connections open, environment keys the API server would refuse
// only later, and bearer tokens that are not meant for the service or never expire.
import assert from 'node:assert/strict';
import net from 'node:net';
import { AUDIENCE, startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call, startTestService, type TestService } from '../support/service-harness.js';
import { loadServiceConfig } from '../../server/src/service/config.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const READ_TIMEOUT_MS = 1500;

/** Sends `head` at once, then `trickle` one byte every `everyMs`; resolves with the first status line and when it came. */
function slowClient(port: number, head: string, trickle: string, everyMs: number) {
  return new Promise<{ statusLine: string; afterMs: number }>((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < trickle.length && !socket.destroyed) socket.write(trickle[sent++]!);
    }, everyMs);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ statusLine: answer.split('\r\n')[0] ?? '', afterMs: Date.now() - started });
    });
  });
}

describe('security: the service front door', function () {
  const stack = useStack('sec-input', {
    apps: [BASE_APP],
    service: { requestReadTimeoutMs: READ_TIMEOUT_MS, headersTimeoutMs: READ_TIMEOUT_MS },
  });
  this.timeout(120_000);

  describe('slow clients (6)', () => {
    const port = () => Number(new URL(stack.service.url).port);

    it('a body sent a byte at a time is cut off with 408 once the read timeout passes', async () => {
      const body = JSON.stringify({ appId, user: 'slow@example.com', appDefinition: 'python-latest' });
      const head = `POST /service HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      const { statusLine, afterMs } = await slowClient(port(), head, body, 200);
      assert.match(statusLine, /^HTTP\/1\.1 408/);
      assert.ok(afterMs < READ_TIMEOUT_MS * 3, `${afterMs} ms`);
      assert.deepEqual(await stack.resources.workspaces.list(), [], 'nothing was written');
    });

    it('headers sent a byte at a time are cut off the same way', async () => {
      const { statusLine, afterMs } = await slowClient(
        port(),
        'GET /service/',
        `${appId} HTTP/1.1\r\nHost: x\r\n\r\n`,
        200,
      );
      assert.match(statusLine, /^HTTP\/1\.1 408/);
      assert.ok(afterMs < READ_TIMEOUT_MS * 3, `${afterMs} ms`);
    });

    it('a launch that waits longer than the read timeout still gets its answer', async () => {
      // No operator runs here: the launch waits its whole timeout (3 s) and answers 551, not 408.
      const started = Date.now();
      const answer = await call(stack.service.url, 'POST', '/service', {
        body: { appId, user: 'patient@example.com', appDefinition: 'python-latest', ephemeral: true, timeout: 0.05 },
      });
      assert.equal(answer.status, 551, answer.text);
      assert.ok(Date.now() - started > READ_TIMEOUT_MS);
    });
  });

  describe('environment keys the API server would refuse (11)', () => {
    it('a fromMap key that is no environment variable name answers 400 at once and writes nothing', async () => {
      // `.`, `..` and `..x` are environment variable names, but no Secret keys: the session's Secret.
      for (const key of ['BAD KEY', '1ST', 'A=B', 'ÜBER', '', '.', '..', '..x']) {
        const answer = await call(stack.service.url, 'POST', '/service', {
          body: {
            appId,
            user: 'env@example.com',
            appDefinition: 'python-latest',
            ephemeral: true,
            env: { fromMap: { [key]: 'value' } },
          },
        });
        assert.equal(answer.status, 400, `${JSON.stringify(key)}: ${answer.text}`);
        assert.match(JSON.stringify(answer.json), /environment variable name/);
      }
      // Of this user: a timed-out launch before may leave its session being deleted (no operator here
      // removes the operator's finalizer, which the service sets).
      assert.deepEqual(
        (await stack.resources.sessions.list()).filter((x) => x.spec.user === 'env@example.com'),
        [],
        'no session was created',
      );
    });
  });

  describe('bearer tokens (9)', () => {
    let idp: TestIdentityProvider;
    let identity: TestService;
    const list = `/service/session/${appId}/${encodeURIComponent('alice@example.com')}`;

    before(async () => {
      idp = await startIdentityProvider({ alice: { email: 'alice@example.com' } });
      identity = await startTestService(stack.kc, stack.namespace, {
        identityProvider: { issuer: idp.issuer, audience: AUDIENCE },
      });
    });
    after(async () => {
      await identity?.close();
      await idp?.close();
    });

    it('the identity provider cannot be turned on without an audience to check', () => {
      assert.throws(
        () =>
          loadServiceConfig({
            SERVICE_AUTH_TOKEN: 'service-token-1',
            ADMIN_API_TOKEN: 'admin-token-1',
            IDENTITY_PROVIDER_ISSUER: idp.issuer,
          }),
        /IDENTITY_PROVIDER_AUDIENCE is required/,
      );
    });

    it('refuses a token of the provider issued for another audience, or for none', async () => {
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: idp.issuer, email: 'alice@example.com', iat: now, exp: now + 300 };
      for (const token of [
        await idp.signWithProviderKey({ ...claims, aud: 'urn:another-service' }),
        await idp.signWithProviderKey(claims),
      ]) {
        const answer = await call(identity.url, 'GET', list, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(answer.status, 401, answer.text);
      }
    });

    it('refuses a token that never expires', async () => {
      const token = await idp.signWithProviderKey({
        iss: idp.issuer,
        aud: AUDIENCE,
        email: 'alice@example.com',
        iat: Math.floor(Date.now() / 1000),
      });
      const answer = await call(identity.url, 'GET', list, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(answer.status, 401, answer.text);
      const valid = await call(identity.url, 'GET', list, {
        headers: { authorization: `Bearer ${await idp.token('alice')}` },
      });
      assert.equal(valid.status, 200, 'the same provider key with an expiry passes');
    });
  });
});

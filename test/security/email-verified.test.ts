// Issue 27, item 8: an e-mail the identity provider has not verified is no identity. A provider that lets
// anyone sign up (or change their e-mail) issues tokens with `email_verified: false` for any address;
// taken as the user, one person acts as another. Replayed with the real OpenID Connect provider of the
// test support, which issues such tokens, against the real service and kube-apiserver.
import assert from 'node:assert/strict';
import { AUDIENCE, startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call, startTestService, type TestService } from '../support/service-harness.js';
import { loadServiceConfig } from '../../server/src/service/config.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const VICTIM = 'teacher@example.com';
const UNVERIFIED = { code: 403, reason: "the token's e-mail is not verified by the identity provider" };

describe('security: unverified e-mails (27.8)', function () {
  const stack = useStack('sec-email', { apps: [BASE_APP] });
  this.timeout(120_000);
  let idp: TestIdentityProvider;
  const services: TestService[] = [];

  const start = async (emailVerified?: 'required' | 'ifPresent' | 'ignored') => {
    const service = await startTestService(stack.kc, stack.namespace, {
      identityProvider: { issuer: idp.issuer, audience: AUDIENCE, ...(emailVerified ? { emailVerified } : {}) },
    });
    services.push(service);
    return service;
  };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const withoutClaim = () => {
    const now = Math.floor(Date.now() / 1000);
    return idp.signWithProviderKey({ iss: idp.issuer, aud: AUDIENCE, email: VICTIM, iat: now, exp: now + 300 });
  };
  const launch = (service: TestService, token: string) =>
    call(service.url, 'POST', '/service/workspace', {
      body: { appId, user: VICTIM, appDefinition: 'python-latest' },
      headers: bearer(token),
    });
  const listing = (service: TestService, token: string) =>
    call(service.url, 'GET', `/service/workspace/${appId}/${encodeURIComponent(VICTIM)}`, { headers: bearer(token) });

  before(async () => {
    idp = await startIdentityProvider({
      // A stranger who signed up with the teacher's address, never confirmed.
      impostor: { email: VICTIM, emailVerified: false },
      teacher: { email: VICTIM },
    });
  });
  stack.cleanUp(async () => {
    for (const service of services) await service.close();
    await idp?.close();
  });

  it('by default refuses a token whose e-mail the provider says is unverified: 403, and writes nothing', async () => {
    const service = await start();
    const impostor = await idp.token('impostor');
    for (const answer of [await launch(service, impostor), await listing(service, impostor)]) {
      assert.equal(answer.status, 403, answer.text);
      assert.deepEqual(answer.json, UNVERIFIED);
    }
    assert.deepEqual(await stack.resources.workspaces.list(), [], 'no workspace was made for the impostor');
    const teacher = await listing(service, await idp.token('teacher'));
    assert.equal(teacher.status, 200, `the verified owner of the address passes: ${teacher.text}`);
  });

  it('by default refuses a token that does not say whether the e-mail is verified', async () => {
    const answer = await listing(await start(), await withoutClaim());
    assert.equal(answer.status, 403, answer.text);
    assert.deepEqual(answer.json, UNVERIFIED);
  });

  it('ifPresent (a provider that never sends the claim) takes a token without it, but still refuses false', async () => {
    const service = await start('ifPresent');
    assert.equal((await listing(service, await withoutClaim())).status, 200);
    const refused = await listing(service, await idp.token('impostor'));
    assert.equal(refused.status, 403, refused.text);
    assert.deepEqual(refused.json, UNVERIFIED);
  });

  it('takes an unverified e-mail only when the installation opts out explicitly (ignored)', async () => {
    const answer = await listing(await start('ignored'), await idp.token('impostor'));
    assert.equal(answer.status, 200, answer.text);
  });

  it('reads the setting from IDENTITY_PROVIDER_EMAIL_VERIFIED, required by default, and refuses other values', () => {
    const env = {
      SERVICE_AUTH_TOKEN: 'service-token-1',
      ADMIN_API_TOKEN: 'admin-token-1',
      IDENTITY_PROVIDER_ISSUER: idp.issuer,
      IDENTITY_PROVIDER_AUDIENCE: AUDIENCE,
    };
    assert.equal(loadServiceConfig(env).identityProvider?.emailVerified, 'required');
    assert.equal(
      loadServiceConfig({ ...env, IDENTITY_PROVIDER_EMAIL_VERIFIED: 'ignored' }).identityProvider?.emailVerified,
      'ignored',
    );
    assert.throws(
      () => loadServiceConfig({ ...env, IDENTITY_PROVIDER_EMAIL_VERIFIED: 'false' }),
      /IDENTITY_PROVIDER_EMAIL_VERIFIED must be required, ifPresent or ignored/,
    );
  });
});

import assert from 'node:assert/strict';
import { ConfigError, loadServiceConfig } from '../../src/service/config.js';

describe('service configuration from the environment', () => {
  const base = { SERVICE_AUTH_TOKEN: 'service-token-1', ADMIN_API_TOKEN: 'admin-token-1' };

  it('has the documented defaults and anonymous mode without an issuer', () => {
    const config = loadServiceConfig(base);
    assert.equal(config.identityProvider, undefined);
    assert.equal(config.namespace, 'ide-cloud');
    assert.equal(config.sessionsPerUser, 1);
    assert.equal(config.launchTimeoutMinutes, 3);
    assert.equal(config.port, 8080);
    assert.equal(config.activityRequiresToken, false);
    assert.equal(loadServiceConfig({ ...base, IDENTITY_PROVIDER_ISSUER: 'disabled' }).identityProvider, undefined);
  });

  it('reads the identity provider, its claims and the limits (sessionsPerUser is a string value)', () => {
    const config = loadServiceConfig({
      ...base,
      IDENTITY_PROVIDER_ISSUER: 'https://sso.example.test/realms/ide',
      IDENTITY_PROVIDER_AUDIENCE: 'ide-cloud',
      IDENTITY_PROVIDER_ADMIN_CLAIM: 'realm_access.roles',
      IDENTITY_PROVIDER_ADMIN_GROUP: 'ide-admin',
      IDE_CLOUD_SESSIONS_PER_USER: '2',
      LAUNCH_TIMEOUT_MINUTES: '0.5',
      PORT: '0',
    });
    assert.deepEqual(config.identityProvider, {
      issuer: 'https://sso.example.test/realms/ide',
      audience: 'ide-cloud',
      userClaim: 'email',
      adminClaim: 'realm_access.roles',
      adminGroup: 'ide-admin',
      jwksCooldownSeconds: 30,
      emailVerified: 'required',
    });
    assert.equal(config.sessionsPerUser, 2);
    assert.equal(config.launchTimeoutMinutes, 0.5);
    assert.equal(config.port, 0);
  });

  it('reads the activity-token hardening (service.activity.requireToken)', () => {
    assert.equal(loadServiceConfig({ ...base, ACTIVITY_REQUIRE_TOKEN: 'true' }).activityRequiresToken, true);
    assert.equal(loadServiceConfig({ ...base, ACTIVITY_REQUIRE_TOKEN: 'false' }).activityRequiresToken, false);
    assert.throws(() => loadServiceConfig({ ...base, ACTIVITY_REQUIRE_TOKEN: 'yes' }), /ACTIVITY_REQUIRE_TOKEN/);
  });

  it('fails fast naming every bad variable, never printing a value', () => {
    assert.throws(
      () =>
        loadServiceConfig({
          ADMIN_API_TOKEN: 'short',
          IDE_CLOUD_SESSIONS_PER_USER: 'many',
          IDENTITY_PROVIDER_ISSUER: 'not a url',
        }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /SERVICE_AUTH_TOKEN is required/);
        assert.match(error.message, /ADMIN_API_TOKEN must be at least 8 characters/);
        assert.match(error.message, /IDE_CLOUD_SESSIONS_PER_USER must be a number/);
        assert.match(error.message, /IDENTITY_PROVIDER_ISSUER must be a URL/);
        assert.ok(!error.message.includes('short'));
        return true;
      },
    );
  });

  it('reads the progress stream caps: 4 per user, 500 in total, 30 minutes each by default', () => {
    const defaults = loadServiceConfig(base);
    assert.deepEqual(
      [defaults.progressStreamsPerUser, defaults.progressStreamsTotal, defaults.progressStreamMaxSeconds],
      [4, 500, 1800],
    );
    const set = loadServiceConfig({
      ...base,
      PROGRESS_STREAMS_PER_USER: '2',
      PROGRESS_STREAMS_TOTAL: '50',
      PROGRESS_STREAM_MAX_SECONDS: '90.5',
    });
    assert.deepEqual(
      [set.progressStreamsPerUser, set.progressStreamsTotal, set.progressStreamMaxSeconds],
      [2, 50, 90.5],
    );
    assert.throws(() => loadServiceConfig({ ...base, PROGRESS_STREAMS_PER_USER: '0' }), /PROGRESS_STREAMS_PER_USER/);
    assert.throws(
      () => loadServiceConfig({ ...base, PROGRESS_STREAM_MAX_SECONDS: '-1' }),
      /PROGRESS_STREAM_MAX_SECONDS/,
    );
  });
});

import assert from 'node:assert/strict';
import {
  AppDefinitionUpdateRequestSchema,
  ConfigValueRequestSchema,
  LaunchRequestSchema,
  SessionActivityRequestSchema,
} from '../../src/model/requests.js';

describe('request models', () => {
  const launch = { appId: 't', appDefinition: 'python-latest' };

  it('accepts a minimal launch and every documented field', () => {
    assert.ok(LaunchRequestSchema.safeParse(launch).success);
    const full = {
      ...launch,
      user: 'a@example.com',
      workspaceName: 'ws-a',
      label: 'Exercise',
      ephemeral: false,
      timeout: 3,
      env: { fromMap: { IDE: 'true' }, fromConfigMaps: ['cm-a'], fromSecrets: ['secret-a'] },
    };
    assert.deepEqual(LaunchRequestSchema.parse(full), full);
  });

  it('is strict: unknown fields and wrong types are refused', () => {
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, gitToken: 'x' }).success, false);
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, env: { fromMap: { A: 1 } } }).success, false);
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, env: { other: {} } }).success, false);
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, ephemeral: 'true' }).success, false);
    assert.equal(SessionActivityRequestSchema.safeParse({ appId: 't' }).success, false);
  });

  it('takes the timeout in minutes: fractions allowed, positive, at most an hour', () => {
    assert.ok(LaunchRequestSchema.safeParse({ ...launch, timeout: 0.02 }).success);
    for (const timeout of [0, -1, 61, '3']) {
      assert.equal(LaunchRequestSchema.safeParse({ ...launch, timeout }).success, false, String(timeout));
    }
  });

  it('never echoes a refused value in its issue messages', () => {
    const secret = 'https://user:tok3n@host/repo.git';
    const result = LaunchRequestSchema.safeParse({ ...launch, env: { fromConfigMaps: [secret] } });
    assert.equal(result.success, false);
    assert.ok(!JSON.stringify(result.error?.issues.map((i) => i.message)).includes('tok3n'));
  });

  describe('AppDefinitionUpdateRequest (admin PATCH rules)', () => {
    const cases: [unknown, boolean, string][] = [
      [{}, false, 'no field present'],
      [{ appId: 't' }, false, 'appId alone'],
      [{ minInstances: 0 }, true, 'min only'],
      [{ maxInstances: 0 }, true, 'max only'],
      [{ maxInstances: null }, true, 'null max: unbounded'],
      [{ minInstances: 5, maxInstances: null }, true, 'min with unbounded max'],
      [{ minInstances: 2, maxInstances: 2 }, true, 'equal'],
      [{ minInstances: 3, maxInstances: 2 }, false, 'min > max'],
      [{ minInstances: -1 }, false, 'negative min'],
      [{ maxInstances: -1 }, false, 'negative max'],
      [{ minInstances: 1.5 }, false, 'fraction'],
      [{ minInstances: null }, false, 'null min'],
      [{ minInstances: 1, extra: true }, false, 'unknown field'],
    ];
    for (const [body, ok, what] of cases) {
      it(`${ok ? 'accepts' : 'refuses'} ${what}`, () => {
        assert.equal(AppDefinitionUpdateRequestSchema.safeParse(body).success, ok);
      });
    }
  });

  it('config values need a config map key', () => {
    assert.ok(ConfigValueRequestSchema.safeParse({ appId: 't', key: 'editor.font-size_1', value: '' }).success);
    assert.equal(ConfigValueRequestSchema.safeParse({ appId: 't', key: 'a/b', value: 'v' }).success, false);
    assert.equal(ConfigValueRequestSchema.safeParse({ appId: 't', key: '', value: 'v' }).success, false);
  });
});

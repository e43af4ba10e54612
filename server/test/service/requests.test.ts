import assert from 'node:assert/strict';
import {
  AppDefinitionUpdateRequestSchema,
  ConfigValueRequestSchema,
  LaunchRequestSchema,
  SessionActivityRequestSchema,
  SessionStopRequestSchema,
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

  it('is a tolerant reader: unknown fields are dropped, wrong types of known fields refused', () => {
    assert.deepEqual(LaunchRequestSchema.parse({ ...launch, gitToken: 'x', env: { other: {} } }), {
      ...launch,
      env: {},
    });
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, env: { fromMap: { A: 1 } } }).success, false);
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, ephemeral: 'true' }).success, false);
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, env: { fromSecrets: ['Not_A_Name'] } }).success, false);
    assert.equal(SessionActivityRequestSchema.safeParse({ appId: 't' }).success, false);
  });

  it('refuses a launch for a user that is a dot segment, which no URL path could name; a stop still names it', () => {
    for (const user of ['.', '..']) {
      assert.equal(LaunchRequestSchema.safeParse({ ...launch, user }).success, false, user);
      assert.ok(SessionStopRequestSchema.safeParse({ appId: 't', user, sessionName: 's' }).success, user);
    }
    for (const user of ['.a', 'a.', '...', 'a..b'])
      assert.ok(LaunchRequestSchema.safeParse({ ...launch, user }).success, user);
  });

  it("accepts the clients' envelope: its own kind in any case, and serviceUrl", () => {
    const envelope = { kind: 'launchRequest', serviceUrl: 'https://ide.example.org' };
    assert.deepEqual(LaunchRequestSchema.parse({ ...launch, ...envelope }), { ...launch, ...envelope });
    assert.ok(LaunchRequestSchema.safeParse({ ...launch, kind: 'LaunchRequest' }).success);
    const models: [{ safeParse(v: unknown): { success: boolean } }, string, Record<string, unknown>][] = [
      [SessionActivityRequestSchema, 'sessionActivityRequest', { appId: 't', sessionName: 's' }],
      [ConfigValueRequestSchema, 'sessionSetConfigValueRequest', { appId: 't', key: 'k', value: null }],
      [AppDefinitionUpdateRequestSchema, 'appDefinitionUpdateRequest', { minInstances: 1 }],
    ];
    for (const [schema, kind, body] of models) assert.ok(schema.safeParse({ ...body, kind }).success, kind);
  });

  it('refuses a kind that names another model, quoting only known model names', () => {
    const other = LaunchRequestSchema.safeParse({ ...launch, kind: 'sessionStopRequest' });
    assert.equal(other.success, false);
    assert.deepEqual(
      other.error?.issues.map((i) => [i.path.join('.'), i.message]),
      [['kind', "kind 'sessionStopRequest' names another model; this endpoint takes 'launchRequest'"]],
    );
    const unknown = LaunchRequestSchema.safeParse({ ...launch, kind: 'https://user:tok3n@host' });
    assert.equal(unknown.success, false);
    assert.ok(!JSON.stringify(unknown.error?.issues).includes('tok3n'));
    assert.equal(LaunchRequestSchema.safeParse({ ...launch, kind: 7 }).success, false);
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
      [{ minInstances: 1, extra: true }, true, 'an unknown field (ignored)'],
      [{ extra: true }, false, 'only an unknown field'],
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

// Where launch values come from: the data-bridge strategy against a fake `dataBridge.getEnv` (pure
// polling logic on a virtual clock), and the environment strategy.
import assert from 'node:assert/strict';
import { readFromDataBridge, resolveSessionValues, bridgeTuning, type GetEnv } from '../src/core/index.js';

/** A virtual clock: sleep advances it instantly, so a 120 s timeout takes no real time. */
function virtualClock() {
  let t = 0;
  const sleeps: number[] = [];
  return {
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
    sleeps,
  };
}

const FULL = {
  GIT_URI: 'https://u:secret-tok@git.example/a.git',
  GIT_USER: 'alice',
  GIT_MAIL: 'a@example.org',
  PLATFORM_TOKEN: 'pt-123456',
};

/** The bridge holds `values` from virtual time `at` on, and answers only the keys asked for and present. */
function bridgeFrom(clock: { now: () => number }, at: number, values: Record<string, string>) {
  const calls: string[][] = [];
  const getEnv: GetEnv = async (keys) => {
    calls.push([...keys]);
    if (clock.now() < at) return {};
    return Object.fromEntries(keys.filter((k) => k in values).map((k) => [k, values[k]]));
  };
  return { getEnv, calls };
}

describe('agent values: data-bridge strategy', () => {
  it('polls until the values arrive after a delay, then stops', async () => {
    const clock = virtualClock();
    const bridge = bridgeFrom(clock, 5_000, FULL);
    const lines: string[] = [];
    const result = await readFromDataBridge({
      getEnv: bridge.getEnv,
      env: {},
      intervalMs: 1000,
      timeoutMs: 60_000,
      log: (l) => lines.push(l),
      ...clock,
    });
    assert.equal(result.outcome, 'complete');
    assert.deepEqual(result.values, FULL);
    assert.equal(result.origins.GIT_URI, 'data-bridge');
    assert.equal(bridge.calls.length, 6, 'polled at 0..5 s');
    assert.ok(clock.sleeps.every((ms) => ms === 1000));
    assert.ok(bridge.calls[0]?.includes('PLATFORM_URL') && bridge.calls[0]?.includes('TEMPLATE'));
    assert.ok(!lines.join('\n').includes('secret-tok') && !lines.join('\n').includes('pt-123456'));
  });

  it('accepts partial values only when the timeout ends, filling the rest from the environment', async () => {
    const clock = virtualClock();
    const bridge = bridgeFrom(clock, 2_000, { GIT_URI: FULL.GIT_URI, GIT_USER: 'alice' });
    const lines: string[] = [];
    const result = await readFromDataBridge({
      getEnv: bridge.getEnv,
      env: { GIT_USER: 'from-env', GIT_MAIL: 'env@example.org', TEMPLATE: '' },
      intervalMs: 1000,
      timeoutMs: 10_000,
      log: (l) => lines.push(l),
      ...clock,
    });
    assert.equal(result.outcome, 'timeout');
    assert.equal(clock.now(), 10_000, 'waited the whole timeout, not less');
    assert.deepEqual(result.values, { GIT_URI: FULL.GIT_URI, GIT_USER: 'alice', GIT_MAIL: 'env@example.org' });
    assert.deepEqual(result.origins, { GIT_URI: 'data-bridge', GIT_USER: 'data-bridge', GIT_MAIL: 'environment' });
    assert.match(lines.join('\n'), /timeout after 10 s; not received: GIT_MAIL, PLATFORM_TOKEN/);
  });

  it('falls back to the environment when the values never arrive', async () => {
    const clock = virtualClock();
    const bridge = bridgeFrom(clock, Number.POSITIVE_INFINITY, FULL);
    const result = await readFromDataBridge({
      getEnv: bridge.getEnv,
      env: { GIT_URI: 'https://git.example/public.git', PLATFORM_URL: 'https://lms.example' },
      intervalMs: 500,
      timeoutMs: 3_000,
      ...clock,
    });
    assert.equal(result.outcome, 'timeout');
    assert.equal(bridge.calls.length, 7);
    assert.deepEqual(result.values, { GIT_URI: 'https://git.example/public.git', PLATFORM_URL: 'https://lms.example' });
    assert.deepEqual(result.origins, { GIT_URI: 'environment', PLATFORM_URL: 'environment' });
  });

  it('treats a missing bridge command as activating for a grace period, then uses the environment', async () => {
    const clock = virtualClock();
    let calls = 0;
    const getEnv: GetEnv = async () => {
      calls++;
      throw new Error("command 'dataBridge.getEnv' not found");
    };
    const lines: string[] = [];
    const result = await readFromDataBridge({
      getEnv,
      env: { GIT_URI: 'https://git.example/x.git' },
      intervalMs: 1000,
      timeoutMs: 120_000,
      bridgeGraceMs: 5_000,
      log: (l) => lines.push(l),
      ...clock,
    });
    assert.equal(result.outcome, 'bridge-missing');
    assert.equal(clock.now(), 5_000, 'gave up after the grace period, long before the timeout');
    assert.equal(calls, 6);
    assert.deepEqual(result.values, { GIT_URI: 'https://git.example/x.git' });
    assert.match(lines.join('\n'), /data bridge not available after 5 s; using the process environment/);
    assert.equal(lines.filter((l) => l.startsWith('waiting for the data bridge')).length, 1, 'same error logged once');
  });

  it('keeps polling through a bridge that registers its command late', async () => {
    const clock = virtualClock();
    const getEnv: GetEnv = async (keys) => {
      if (clock.now() < 3_000) throw new Error("command 'dataBridge.getEnv' not found");
      return Object.fromEntries(keys.filter((k) => k in FULL).map((k) => [k, FULL[k as keyof typeof FULL]]));
    };
    const result = await readFromDataBridge({ getEnv, env: {}, intervalMs: 1000, bridgeGraceMs: 10_000, ...clock });
    assert.equal(result.outcome, 'complete');
    assert.equal(clock.now(), 3_000);
    assert.equal(result.values.PLATFORM_TOKEN, FULL.PLATFORM_TOKEN);
  });

  it('does not wait past its timeout for a getEnv that never answers', async () => {
    const started = Date.now();
    const result = await readFromDataBridge({
      getEnv: () => new Promise(() => {}),
      env: { GIT_USER: 'env-user' },
      intervalMs: 50,
      timeoutMs: 200,
    });
    assert.equal(result.outcome, 'timeout');
    assert.ok(Date.now() - started < 2_000);
    assert.deepEqual(result.values, { GIT_USER: 'env-user' });
  });

  it('ignores keys it does not know and values that are not non-empty strings', async () => {
    const clock = virtualClock();
    const result = await readFromDataBridge({
      getEnv: async () => ({ ...FULL, GIT_MAIL: '', OTHER: 'x', TEMPLATE: 42 }),
      env: {},
      requiredKeys: ['GIT_URI'],
      ...clock,
    });
    assert.equal(result.outcome, 'complete');
    assert.deepEqual(Object.keys(result.values).sort(), ['GIT_URI', 'GIT_USER', 'PLATFORM_TOKEN']);
  });
});

describe('agent values: strategy selection', () => {
  it('reads the process environment directly unless SESSION_ENV_STRATEGY is data-bridge', async () => {
    let called = false;
    const getEnv: GetEnv = async () => {
      called = true;
      return {};
    };
    const result = await resolveSessionValues({
      env: { SESSION_ENV_STRATEGY: 'env', GIT_URI: 'https://h/r.git', IDE: 'vscode' },
      getEnv,
    });
    assert.equal(called, false);
    assert.equal(result.outcome, 'environment');
    assert.deepEqual(result.values, { GIT_URI: 'https://h/r.git', IDE: 'vscode' });
  });

  it('uses the bridge with SESSION_ENV_STRATEGY=data-bridge, tuned by the environment', async () => {
    const result = await resolveSessionValues({
      env: {
        SESSION_ENV_STRATEGY: 'data-bridge',
        SESSION_ENV_REQUIRED_KEYS: 'GIT_URI, NOPE',
        SESSION_ENV_TIMEOUT_SECONDS: '1',
      },
      getEnv: async () => ({ GIT_URI: 'https://h/r.git' }),
    });
    assert.equal(result.outcome, 'complete');
    assert.deepEqual(result.origins, { GIT_URI: 'data-bridge' });
  });

  it('falls back to the environment in a front without the bridge (the CLI)', async () => {
    const lines: string[] = [];
    const result = await resolveSessionValues({
      env: { SESSION_ENV_STRATEGY: 'data-bridge', GIT_MAIL: 'm@x.org' },
      log: (l) => lines.push(l),
    });
    assert.equal(result.outcome, 'environment');
    assert.deepEqual(result.values, { GIT_MAIL: 'm@x.org' });
    assert.match(lines.join('\n'), /reachable only from the IDE/);
  });

  it('parses tuning variables and ignores invalid ones', () => {
    assert.deepEqual(bridgeTuning({ SESSION_ENV_TIMEOUT_SECONDS: '30', SESSION_ENV_POLL_INTERVAL_MS: '250' }), {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    assert.deepEqual(bridgeTuning({ SESSION_ENV_TIMEOUT_SECONDS: 'soon', SESSION_ENV_POLL_INTERVAL_MS: '-1' }), {
      timeoutMs: 120_000,
      intervalMs: 1000,
    });
  });
});

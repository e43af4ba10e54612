import assert from 'node:assert/strict';
import { isDnsLabel } from '../../src/model/names.js';
import { lifetimeMinutes, stopReason } from '../../src/operator/session/activity.js';
import { loadOperatorConfig } from '../../src/operator/config.js';
import { withRoute } from '../../src/operator/routes/ingress.js';
import {
  poolInstanceName,
  routePath,
  sessionOfRoutePath,
  sessionPodApp,
  sessionUrl,
  sidecarName,
} from '../../src/operator/manifests.js';

describe('operator names, routes, configuration and stop reasons', () => {
  it('pool instance, pod app label and sidecar names are DNS labels, cut with a hash', () => {
    assert.equal(poolInstanceName('python-latest', 3), 'python-latest-pool-3');
    const long = 'session-' + 'x'.repeat(60);
    const app = sessionPodApp({ metadata: { name: long, uid: '0f6b7c1e-0000-4000-8000-000000000000' } });
    assert.ok(isDnsLabel(app));
    assert.notEqual(app, sessionPodApp({ metadata: { name: long, uid: '1f6b7c1e-0000-4000-8000-000000000000' } }));
    assert.ok(isDnsLabel(sidecarName(long, { name: 'database' })));
  });

  it('the session URL is its route: the session name, then a key no one derives without the secret', () => {
    const session = (name: string, sessionSecret?: string) => ({
      metadata: { name, uid: '1f6b7c1e-0000-4000-8000-000000000000' },
      spec: { user: 'ada', appDefinition: 'a', workspace: 'w', ...(sessionSecret ? { sessionSecret } : {}) },
    });
    const path = routePath(session('s-1', 'secret-1'));
    assert.match(path, /^\/s-1\/[0-9a-f]{32}\/$/);
    assert.equal(
      sessionUrl({ sessionScheme: 'https', sessionHost: 'ide.example.org' }, session('s-1', 'secret-1')),
      `https://ide.example.org${path}`,
    );
    assert.equal(
      sessionUrl(
        { sessionScheme: 'http', sessionHost: 'ide.localhost', sessionPort: 8082 },
        session('s-1', 'secret-1'),
      ),
      `http://ide.localhost:8082${path}`,
      'a port of its own (a local ingress) in the URL, never in the route',
    );
    assert.equal(routePath(session('s-1', 'secret-1')), path, 'the same session, the same path on every pass');
    assert.notEqual(routePath(session('s-1', 'secret-2')), path);
    assert.notEqual(routePath(session('s-2', 'secret-1')), path);
    assert.match(routePath(session('s-1')), /^\/s-1\/[0-9a-f]{32}\/$/, 'without a secret, from the uid');
    assert.equal(sessionOfRoutePath(path), 's-1', "the route's session, read back from its path");
    assert.equal(sessionOfRoutePath('/'), undefined);
  });

  it('adds and removes one path per session without touching the others', () => {
    const a = { host: 'h', path: '/a/', serviceName: 'a' };
    const b = { host: 'h', path: '/b/', serviceName: 'b' };
    const one = withRoute(undefined, a, true)!;
    const two = withRoute(one, b, true)!;
    assert.deepEqual(
      two.rules?.[0]?.http?.paths.map((p) => p.path),
      ['/a/', '/b/'],
    );
    assert.equal(withRoute(two, a, true), undefined, 'unchanged');
    const back = withRoute(two, a, false)!;
    assert.deepEqual(
      back.rules?.[0]?.http?.paths.map((p) => p.path),
      ['/b/'],
    );
    assert.deepEqual(withRoute(back, b, false)!.rules, []);
    assert.equal(withRoute(back, a, false), undefined);
  });

  it('reads the configuration from the environment, with defaults and clear errors', () => {
    const config = loadOperatorConfig({
      IDE_CLOUD_NAMESPACE: 'ide',
      IDE_CLOUD_EAGER_START: 'false',
      IDE_CLOUD_SESSIONS_PER_USER: '3',
    });
    assert.equal(config.namespace, 'ide');
    assert.equal(config.eagerStart, false);
    assert.equal(config.sessionsPerUser, 3);
    // Leader election is on by default, also for a single replica; only an explicit setting turns it off.
    assert.equal(config.leaderElection, true);
    assert.equal(loadOperatorConfig({ IDE_CLOUD_LEADER_ELECTION: 'false' }).leaderElection, false);
    // Two operators started in one process never share a Lease holder identity.
    assert.notEqual(loadOperatorConfig({}).identity, loadOperatorConfig({}).identity);
    assert.equal(config.sessionHost, 'ide.localtest.me');
    assert.equal(config.bridgeHealthAttempts, 60);
    assert.equal(config.bridgeHealthIntervalMs, 1000);
    assert.equal(config.activityIntervalMs, 60_000);
    assert.throws(() => loadOperatorConfig({ IDE_CLOUD_SESSIONS_PER_USER: 'many' }), /sessionsPerUser/);
  });

  it('stops idle sessions past the timeout, from lastActivity or else the creation time', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    const session = (created: string, lastActivity?: string) => ({
      metadata: { name: 's', creationTimestamp: created },
      status: lastActivity ? { lastActivity } : {},
    });
    const base = { timeoutMinutes: 10, maxLifetimeMinutes: 0, idleCheck: true, now };
    assert.match(stopReason({ ...base, session: session('2026-01-01T11:00:00Z') }) ?? '', /^Idle/);
    assert.equal(stopReason({ ...base, session: session('2026-01-01T11:00:00Z', '2026-01-01T11:55:00Z') }), undefined);
    assert.equal(stopReason({ ...base, idleCheck: false, session: session('2026-01-01T11:00:00Z') }), undefined);
    assert.equal(stopReason({ ...base, timeoutMinutes: 0, session: session('2026-01-01T11:00:00Z') }), undefined);
    assert.match(
      stopReason({
        ...base,
        maxLifetimeMinutes: 30,
        session: session('2026-01-01T11:00:00Z', '2026-01-01T11:59:00Z'),
      }) ?? '',
      /^MaxLifetime/,
    );
  });

  it("takes an app definition's lifetime over the operator's", () => {
    const app = (maxLifetimeMinutes?: number) =>
      ({ metadata: { name: 'a' }, spec: { maxLifetimeMinutes } }) as Parameters<typeof lifetimeMinutes>[0];
    assert.equal(lifetimeMinutes(app(90), 240), 90);
    assert.equal(lifetimeMinutes(app(0), 240), 0, '0 on the app definition: none, whatever the operator says');
    assert.equal(lifetimeMinutes(app(), 240), 240);
    assert.equal(lifetimeMinutes(undefined, 0), 0);
  });
});

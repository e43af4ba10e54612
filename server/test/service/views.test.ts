import assert from 'node:assert/strict';
import type { Session } from '../../src/model/session.js';
import { secretEquals } from '../../src/service/auth.js';
import { judgeSession } from '../../src/service/session-watch.js';
import { splitQuantity, toPerformance, toSessionItem, toWorkspaceItem } from '../../src/service/views.js';

const session: Session = {
  metadata: { name: 'session-a', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: {
    user: 'a@example.com',
    appDefinition: 'python-latest',
    workspace: 'ws-a',
    envVars: { PLATFORM_TOKEN: 'secret-1', GIT_URI: 'https://u:secret-2@host/r.git' },
    envVarsFromSecrets: ['secret-object'],
    sessionSecret: 'secret-3',
  },
  status: { phase: 'Running', url: 'https://ide/a/', startStrategy: 'eager', lastActivity: '2026-01-01T00:01:00Z' },
};

describe('listing items', () => {
  it('show exactly the DESIGN.md fields of a session and never its env or secret', () => {
    const item = toSessionItem(session);
    assert.deepEqual(item, {
      name: 'session-a',
      workspace: 'ws-a',
      appDefinition: 'python-latest',
      user: 'a@example.com',
      url: 'https://ide/a/',
      phase: 'Running',
      startStrategy: 'eager',
      creationTimestamp: '2026-01-01T00:00:00Z',
      lastActivity: '2026-01-01T00:01:00Z',
    });
    assert.ok(!JSON.stringify(item).includes('secret'));
  });

  it('show the DESIGN.md fields of a workspace', () => {
    const item = toWorkspaceItem(
      {
        metadata: { name: 'ws-a', creationTimestamp: new Date('2026-01-01T00:00:00Z') },
        spec: { user: 'a', label: 'L' },
      },
      true,
    );
    assert.deepEqual(item, {
      name: 'ws-a',
      label: 'L',
      appDefinition: undefined,
      user: 'a',
      active: true,
      creationTimestamp: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('performance', () => {
  it('splits quantities into amount and format', () => {
    assert.deepEqual(splitQuantity('12345n'), { amount: '12345', format: 'n' });
    assert.deepEqual(splitQuantity('1024Ki'), { amount: '1024', format: 'Ki' });
    assert.deepEqual(splitQuantity('2'), { amount: '2', format: '' });
    assert.deepEqual(splitQuantity('1.5e3m'), { amount: '1.5e3', format: 'm' });
  });

  it('reads the container named after the app definition', () => {
    const metrics = {
      containers: [
        { name: 'auth-proxy', usage: { cpu: '1m', memory: '10Mi' } },
        { name: 'python-latest', usage: { cpu: '250000n', memory: '300Mi' } },
      ],
    };
    assert.deepEqual(toPerformance(metrics, 'python-latest'), {
      cpuAmount: '250000',
      cpuFormat: 'n',
      memoryAmount: '300',
      memoryFormat: 'Mi',
    });
    assert.equal(toPerformance(metrics, 'rust-latest'), undefined);
  });
});

describe('session readiness', () => {
  it('is ready with a URL and phase Running, failed with the operator error, else waiting', () => {
    assert.deepEqual(judgeSession(session), { ready: true, url: 'https://ide/a/' });
    assert.deepEqual(judgeSession({ ...session, status: { phase: 'Starting', url: 'https://ide/a/' } }), {
      ready: false,
    });
    const failed = judgeSession({ ...session, status: { phase: 'Failed', error: { code: 553, reason: 'limit' } } });
    assert.equal(failed.ready, false);
    assert.deepEqual(!failed.ready && failed.error?.body, { code: 553, reason: 'limit' });
    const odd = judgeSession({ ...session, status: { phase: 'Failed', error: { code: 42, reason: 'odd' } } });
    assert.equal(!odd.ready && odd.error?.code, 500);
  });
});

describe('secret comparison', () => {
  it('compares in constant time, whatever the lengths', () => {
    assert.equal(secretEquals('abc', 'abc'), true);
    assert.equal(secretEquals('abc', 'abd'), false);
    assert.equal(secretEquals('abc', 'abcd'), false);
    assert.equal(secretEquals('', 'x'), false);
  });
});

describe('session pod label', () => {
  it('is the same value the operator gives the pod', async () => {
    const { sessionPodAppLabel } = await import('../../src/model/names.js');
    const { sessionPodApp } = await import('../../src/operator/manifests.js');
    for (const name of ['session-a', `session-${'x'.repeat(60)}`]) {
      const session = { metadata: { name, uid: '0b7e4a4e-7c1f-4b55-9a55-0d4c3f6a2e11' } };
      assert.equal(sessionPodAppLabel(session), sessionPodApp(session));
    }
  });
});

describe('activity token', () => {
  it('is bound to the session secret and the session name', async () => {
    const { activityToken } = await import('../../src/model/activity-token.js');
    const token = activityToken('secret-a', 'session-a');
    assert.match(token, /^[0-9a-f]{64}$/);
    assert.equal(activityToken('secret-a', 'session-a'), token);
    assert.notEqual(activityToken('secret-a', 'session-b'), token);
    assert.notEqual(activityToken('secret-b', 'session-a'), token);
  });
});

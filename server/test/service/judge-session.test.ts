import assert from 'node:assert/strict';
import type { Session, SessionStatus } from '../../src/model/session.js';
import { judgeSession } from '../../src/service/session-watch.js';

const session = (status: SessionStatus): Session => ({
  metadata: { name: 's', uid: 'u' },
  spec: { user: 'alice', appDefinition: 'python' },
  status,
});
const ready = (status: 'True' | 'False', reason: string) => ({
  type: 'Ready',
  status,
  reason,
  lastTransitionTime: '2025-01-01T00:00:00Z',
});

describe('service: a waited-for session is judged by its conditions, not its phase', () => {
  it('is ready when Ready is True and a URL is set, whatever the phase says', () => {
    assert.deepEqual(
      judgeSession(session({ phase: 'Starting', url: 'https://x/', conditions: [ready('True', 'PodReady')] })),
      {
        ready: true,
        url: 'https://x/',
      },
    );
    assert.deepEqual(
      judgeSession(session({ phase: 'Running', url: 'https://x/', conditions: [ready('False', 'PodNotReady')] })),
      { ready: false },
    );
  });

  it('fails with the operator’s error when Ready is False for reason Failed', () => {
    const verdict = judgeSession(
      session({
        phase: 'Starting',
        error: { code: 552, reason: 'at maxInstances' },
        conditions: [ready('False', 'Failed')],
      }),
    );
    assert.equal(verdict.ready, false);
    assert.deepEqual(!verdict.ready && verdict.error?.body, { code: 552, reason: 'at maxInstances' });
  });

  it('reads a status without conditions by its phase (a stand-in for the operator)', () => {
    assert.deepEqual(judgeSession(session({ phase: 'Running', url: 'https://x/' })), {
      ready: true,
      url: 'https://x/',
    });
    const failed = judgeSession(session({ phase: 'Failed' }));
    assert.deepEqual(!failed.ready && failed.error?.body, { code: 500, reason: 'the session failed to start' });
    assert.deepEqual(judgeSession(session({ phase: 'Pending' })), { ready: false });
  });
});

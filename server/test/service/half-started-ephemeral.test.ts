import assert from 'node:assert/strict';
import { ANNOTATIONS } from '../../src/model/api-group.js';
import { SessionCondition, SessionReadyReason, type Session } from '../../src/model/session.js';
import { isHalfStartedEphemeral } from '../../src/service/launcher.js';

describe('a half-started ephemeral session (what a launch at a limit may adopt or replace)', () => {
  const user = 'hal@example.com';
  const starting = (): Session =>
    ({
      metadata: { name: 'session-python-hal', uid: 'u1', annotations: { [ANNOTATIONS.launchDigest]: 'digest' } },
      spec: { user, appDefinition: 'python', sessionSecret: '0123456789abcdef0123456789abcdef' },
      status: { phase: 'Starting' },
    }) as Session;
  const readyCondition = (status: 'True' | 'False', reason: string) => ({
    type: SessionCondition.ready,
    status,
    reason,
    lastTransitionTime: new Date().toISOString(),
  });

  it('is one the service created for this user and app definition that is still starting', () => {
    assert.ok(isHalfStartedEphemeral(starting(), user, 'python'));
  });

  it('is not one of another user, app definition or a workspace, nor one without the service mark', () => {
    assert.ok(!isHalfStartedEphemeral(starting(), 'ida@example.com', 'python'));
    assert.ok(!isHalfStartedEphemeral(starting(), user, 'rstudio'));
    const s = starting();
    assert.ok(!isHalfStartedEphemeral({ ...s, spec: { ...s.spec, workspace: 'ws' } }, user, 'python'));
    assert.ok(!isHalfStartedEphemeral({ ...s, metadata: { ...s.metadata, annotations: {} } }, user, 'python'));
  });

  it('is not one that serves, failed, or is being deleted', () => {
    const s = starting();
    assert.ok(!isHalfStartedEphemeral({ ...s, status: { phase: 'Running', url: 'https://x/' } }, user, 'python'));
    assert.ok(
      !isHalfStartedEphemeral(
        { ...s, status: { phase: 'Failed', conditions: [readyCondition('False', SessionReadyReason.failed)] } },
        user,
        'python',
      ),
    );
    assert.ok(
      !isHalfStartedEphemeral(
        { ...s, metadata: { ...s.metadata, deletionTimestamp: new Date().toISOString() } },
        user,
        'python',
      ),
    );
  });

  it('is one that serves but whose launch never answered it (the service was killed), unless activity was reported', () => {
    const s = starting();
    const unanswered = { ...s.metadata, annotations: { ...s.metadata.annotations, [ANNOTATIONS.unanswered]: 'true' } };
    const serving = { phase: 'Running' as const, url: 'https://x/' };
    assert.ok(isHalfStartedEphemeral({ ...s, metadata: unanswered, status: serving }, user, 'python'));
    assert.ok(
      !isHalfStartedEphemeral(
        { ...s, metadata: unanswered, status: { ...serving, lastActivity: new Date().toISOString() } },
        user,
        'python',
      ),
    );
  });

  it('is not one being stopped, by its Ready condition or by its phase (adopted, it would answer 474)', () => {
    const s = starting();
    assert.ok(
      !isHalfStartedEphemeral(
        { ...s, status: { phase: 'Starting', conditions: [readyCondition('False', SessionReadyReason.stopping)] } },
        user,
        'python',
      ),
    );
    assert.ok(!isHalfStartedEphemeral({ ...s, status: { phase: 'Stopping' } }, user, 'python'));
  });
});

import assert from 'node:assert/strict';
import { ANNOTATIONS } from '../../src/model/api-group.js';
import { setCondition } from '../../src/model/conditions.js';
import { ErrorCode } from '../../src/model/error-codes.js';
import { countSessions, limitIndexers, sessionLimitRefusal } from '../../src/model/limits.js';
import { observedInformer } from './observed-informer.js';
import { SessionCondition, isActiveSession, decidedStartStrategy, type Session } from '../../src/model/session.js';

type Shape = { user: string; app: string; state: 'pending' | 'failed' | 'stopping' | 'deleting'; decided: boolean };

function session(name: string, { user, app, state, decided }: Shape, version = 1): Session {
  const reason = { pending: 'Pending', failed: 'Failed', stopping: 'Stopping', deleting: 'Pending' }[state];
  return {
    metadata: {
      name,
      namespace: 'ns',
      resourceVersion: String(version),
      creationTimestamp: `2026-01-01T00:00:${name.slice(1).padStart(2, '0')}Z`,
      ...(state === 'deleting' ? { deletionTimestamp: '2026-01-02T00:00:00Z' } : {}),
      // A decision made by a pass whose status write was lost: in the annotation only.
      ...(decided && name.length % 2 ? { annotations: { [ANNOTATIONS.startStrategy]: 'lazy' } } : {}),
    },
    spec: { user, appDefinition: app },
    status: {
      conditions: setCondition(undefined, {
        type: SessionCondition.ready,
        status: state === 'pending' ? 'Unknown' : 'False',
        reason,
      }),
      ...(decided && name.length % 2 === 0 ? { startStrategy: 'eager' as const } : {}),
    },
  };
}

function cacheOf(sessions: Session[]) {
  return observedInformer(sessions, limitIndexers);
}

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('session limits, counted from the indexes', () => {
  it('agrees with a count over every session, for random sessions, with and without a session left out', () => {
    const next = random(29);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
    for (let round = 0; round < 200; round++) {
      const sessions = Array.from({ length: 1 + Math.floor(next() * 30) }, (_, i) =>
        session(`s${i}`, {
          user: pick(['u1', 'u2', 'u3']),
          app: pick(['a', 'b']),
          state: pick(['pending', 'pending', 'pending', 'failed', 'stopping', 'deleting'] as const),
          decided: next() < 0.5,
        }),
      );
      const cache = cacheOf(sessions);
      const self = pick(sessions);
      const later = (s: Session) => s.metadata.name > self.metadata.name;
      // The operator's rule: a session not decided yet counts only if it comes first.
      const counts = (s: Pick<Session, 'metadata' | 'status'>) => !!decidedStartStrategy(s) || !later(s as Session);
      const brute = (excluding: string | undefined, keep: (s: Session) => boolean) => {
        const counted = sessions.filter((s) => s.metadata.name !== excluding && isActiveSession(s) && keep(s));
        return {
          ofDefinition: counted.filter((s) => s.spec.appDefinition === self.spec.appDefinition).length,
          ofUser: counted.filter((s) => s.spec.user === self.spec.user).length,
        };
      };
      const input = { appDefinition: self.spec.appDefinition, user: self.spec.user };
      assert.deepEqual(
        countSessions(cache, input),
        brute(undefined, () => true),
        `round ${round}: all`,
      );
      assert.deepEqual(
        countSessions(cache, { ...input, excluding: self.metadata.name, counts }),
        brute(self.metadata.name, counts),
        `round ${round}: before ${self.metadata.name}`,
      );
    }
  });

  it('follows a session from undecided to decided to failed', () => {
    const shape: Shape = { user: 'u', app: 'a', state: 'pending', decided: false };
    const cache = cacheOf([session('s1', shape), session('s2', { ...shape, user: 'v' })]);
    const leaveOutUndecided = { appDefinition: 'a', user: 'u', counts: () => false };
    assert.deepEqual(countSessions(cache, leaveOutUndecided), { ofDefinition: 0, ofUser: 0 });
    cache.observe(session('s2', { ...shape, user: 'v', decided: true }, 2));
    assert.deepEqual(countSessions(cache, leaveOutUndecided), { ofDefinition: 1, ofUser: 0 }, 'decided: counted');
    cache.observe(session('s2', { ...shape, user: 'v', decided: true, state: 'failed' }, 3));
    assert.deepEqual(countSessions(cache, { appDefinition: 'a', user: 'u' }), { ofDefinition: 1, ofUser: 1 });
  });

  it('refuses at maxInstances, then at sessionsPerUser; null has no ceiling', () => {
    const refusal = (ofDefinition: number, ofUser: number, maxInstances: number | null) =>
      sessionLimitRefusal({
        appDefinition: { name: 'a', maxInstances },
        counts: { ofDefinition, ofUser },
        sessionsPerUser: 2,
      })?.code;
    assert.equal(refusal(3, 2, 3), ErrorCode.maxInstancesReached);
    assert.equal(refusal(2, 2, 3), ErrorCode.sessionsPerUserReached);
    assert.equal(refusal(2, 1, 3), undefined);
    assert.equal(refusal(10_000, 1, null), undefined);
  });
});

import assert from 'node:assert/strict';
import { ANNOTATIONS } from '../../src/model/api-group.js';
import { decidedStartStrategy, onlyAnsweredMark, type Session } from '../../src/model/session.js';

/** A warm launch's session as its status with the URL left it, still unanswered. */
function served(): Session {
  return {
    metadata: {
      name: 's',
      uid: 'uid-s',
      resourceVersion: '10',
      annotations: { [ANNOTATIONS.unanswered]: 'true', [ANNOTATIONS.launchDigest]: 'd' },
      finalizers: ['ide.cloud/session'],
    },
    spec: { user: 'u', appDefinition: 'a' },
    status: { startStrategy: 'eager', instanceId: '3', url: 'https://ide.test/s/k/' },
  };
}

/** What the service's answer writes on it: the mark cleared, the decision's annotations from the status. */
function answered(s: Session): Session {
  const { [ANNOTATIONS.unanswered]: _cleared, ...annotations } = s.metadata.annotations ?? {};
  return {
    ...s,
    metadata: {
      ...s.metadata,
      resourceVersion: '11',
      annotations: { ...annotations, [ANNOTATIONS.startStrategy]: 'eager', [ANNOTATIONS.instanceId]: '3' },
    },
  };
}

describe("the service's answered mark, which wakes no pass of the operator", () => {
  it('the mark and the decision as the status has it: nothing else changed', () => {
    assert.equal(onlyAnsweredMark(served(), answered(served())), true);
  });

  it('anything else in the same change is news: the spec, the status, other annotations, labels, finalizers, deletion', () => {
    const changes: ((s: Session) => void)[] = [
      (s) => (s.spec = { ...s.spec, envVars: { A: '1' } }),
      (s) => (s.status = { ...s.status, lastActivity: '2026-12-04T00:00:00Z' }),
      (s) => (s.metadata.annotations = { ...s.metadata.annotations, [ANNOTATIONS.stopReason]: 'idle' }),
      (s) => (s.metadata.labels = { x: 'y' }),
      (s) => (s.metadata.finalizers = []),
      (s) => (s.metadata.deletionTimestamp = '2026-12-04T00:00:00Z'),
    ];
    for (const change of changes) {
      const next = answered(served());
      change(next);
      assert.equal(onlyAnsweredMark(served(), next), false, String(change));
    }
  });

  it("decision annotations that are not the status's, or missing, are left to a pass", () => {
    const other = answered(served());
    other.metadata.annotations![ANNOTATIONS.instanceId] = '4';
    assert.equal(onlyAnsweredMark(served(), other), false, 'another instance');
    const cleared = served();
    delete cleared.metadata.annotations![ANNOTATIONS.unanswered];
    cleared.metadata.resourceVersion = '11';
    assert.equal(onlyAnsweredMark(served(), cleared), false, 'the mark cleared without the decision');
  });

  it('no mark cleared, no mark: a change of the version only, or a decision annotated on an undecided session', () => {
    const again = answered(served());
    assert.equal(onlyAnsweredMark(again, { ...again, metadata: { ...again.metadata, resourceVersion: '12' } }), false);
    const undecided = served();
    undecided.status = {};
    delete undecided.metadata.annotations![ANNOTATIONS.unanswered];
    const annotated = structuredClone(undecided);
    annotated.metadata.annotations![ANNOTATIONS.startStrategy] = 'lazy';
    assert.equal(onlyAnsweredMark(undecided, annotated), false);
  });
});

describe('the decided start strategy', () => {
  it("the status's, else a valid annotation's, else none", () => {
    const s = served();
    assert.equal(decidedStartStrategy(s), 'eager');
    s.status = {};
    assert.equal(decidedStartStrategy(s), undefined, 'no annotation');
    s.metadata.annotations![ANNOTATIONS.startStrategy] = 'lazy-fallback';
    assert.equal(decidedStartStrategy(s), 'lazy-fallback');
    s.metadata.annotations![ANNOTATIONS.startStrategy] = 'warm';
    assert.equal(decidedStartStrategy(s), undefined, 'not a strategy');
  });
});

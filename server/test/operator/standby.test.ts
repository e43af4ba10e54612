import assert from 'node:assert/strict';
import { claimBinderName, claimBinderPod } from '../../src/operator/manifests.js';
import { planStandby, type StandbyClaimState } from '../../src/operator/standby/reconciler.js';

const claim = (name: string, bound: boolean, created: number): StandbyClaimState => ({ name, bound, created });

describe('standby claims: the plan', () => {
  it('creates the missing claims', () => {
    assert.deepEqual(planStandby({ desired: 3, claims: [claim('a', true, 1)], binders: [] }), {
      create: 2,
      deleteClaims: [],
      bind: [],
      deleteBinders: [],
    });
  });

  it('gives each unbound claim kept one binder, and deletes the binders of claims bound, taken or gone', () => {
    const plan = planStandby({
      desired: 3,
      claims: [claim('bound', true, 1), claim('new', false, 2), claim('binding', false, 3)],
      binders: [claimBinderName('bound'), claimBinderName('binding'), claimBinderName('taken')],
    });
    assert.deepEqual(plan, {
      create: 0,
      deleteClaims: [],
      bind: ['new'],
      deleteBinders: [claimBinderName('bound'), claimBinderName('taken')],
    });
  });

  it('keeps the bound claims first, then the oldest, when more are there than desired', () => {
    const plan = planStandby({
      desired: 2,
      claims: [claim('old-unbound', false, 1), claim('bound', true, 5), claim('young-unbound', false, 3)],
      binders: [claimBinderName('old-unbound'), claimBinderName('young-unbound')],
    });
    assert.deepEqual(plan.deleteClaims, ['young-unbound']);
    assert.deepEqual(plan.deleteBinders, [claimBinderName('young-unbound')]);
    assert.equal(plan.create, 0);
    assert.deepEqual(plan.bind, []);
  });

  it('with none desired, deletes every claim and binder', () => {
    const plan = planStandby({
      desired: 0,
      claims: [claim('a', true, 1), claim('b', false, 2)],
      binders: [claimBinderName('b')],
    });
    assert.deepEqual(plan, { create: 0, deleteClaims: ['a', 'b'], bind: [], deleteBinders: [claimBinderName('b')] });
  });
});

describe('standby claims: the binder pod', () => {
  const pod = claimBinderPod({
    claim: { metadata: { name: 'ide-cloud-standby-0a1b2c3d', uid: 'u-1' } },
    namespace: 'ns',
    config: {
      claimBinderImage: 'registry.k8s.io/pause:3.10',
      sessionNodeSelector: { pool: 'ide' },
      sessionTolerations: [{ key: 'ide', operator: 'Exists', effect: 'NoSchedule' }],
    },
  });

  it('mounts only its claim, read-only, where session pods go, and goes with the claim', () => {
    assert.deepEqual(pod.spec?.volumes, [
      { name: 'claim', persistentVolumeClaim: { claimName: 'ide-cloud-standby-0a1b2c3d', readOnly: true } },
    ]);
    assert.deepEqual(pod.spec?.nodeSelector, { pool: 'ide' });
    assert.equal(pod.spec?.tolerations?.length, 1);
    assert.deepEqual(
      pod.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['PersistentVolumeClaim', 'ide-cloud-standby-0a1b2c3d', 'u-1']],
    );
  });

  it('runs restricted: no token, no privilege, non-root, nothing written', () => {
    const spec = pod.spec!;
    assert.equal(spec.automountServiceAccountToken, false);
    assert.equal(spec.securityContext?.runAsNonRoot, true);
    assert.equal(spec.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    const container = spec.containers[0]!.securityContext!;
    assert.equal(container.allowPrivilegeEscalation, false);
    assert.equal(container.readOnlyRootFilesystem, true);
    assert.deepEqual(container.capabilities?.drop, ['ALL']);
  });
});

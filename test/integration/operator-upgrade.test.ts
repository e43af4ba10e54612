// An upgrade from an operator whose reservations were written on the warm instances' Deployments (a
// session's label and an owner reference to it, no Lease): the world that operator leaves is made
// here with its own writes, against a real API server, while no operator runs. The operator started
// on it keeps the running session's instance for that session (it makes the instance's Lease from the
// Deployment's reservation), also beside a free Lease (one the new operator made before an older
// operator's last claim landed), never hands it to another launch, serves new launches from the other
// instances, and returns the instance to the pool once its session ends.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { API_VERSION, LABELS } from '../../server/src/model/api-group.js';
import type { Session } from '../../server/src/model/session.js';
import { COMPONENT, ownerReference } from '../../server/src/operator/manifests.js';
import { eventually } from '../support/kube.js';
import {
  appDefinitionSpec,
  createSession,
  instanceReservations,
  running,
  waitForSession,
} from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'python-latest';
const POOL_SELECTOR = `${LABELS.component}=${COMPONENT.poolInstance},${LABELS.appDefinition}=${APP}`;

describe('operator: upgrade from reservations on Deployments', function () {
  const stack = useStack('op-upgrade', {
    apps: [appDefinitionSpec(APP, { minInstances: 3, maxInstances: 20 })],
    operator: { eagerStart: true, sessionsPerUser: 10 },
  });
  this.timeout(300_000);

  const coordination = () => stack.kc.makeApiClient(k8s.CoordinationV1Api);
  const reservations = () => instanceReservations(stack.kc, stack.namespace, POOL_SELECTOR);
  const deployment = (name: string) => stack.apps.readNamespacedDeployment({ name, namespace: stack.namespace });
  /** The instance whose reservation (Lease) names `session`, with the Lease. */
  async function heldBy(session: string): Promise<[string, k8s.V1Lease]> {
    const held = [...(await reservations())].filter(([, l]) => l.metadata?.labels?.[LABELS.session] === session);
    assert.equal(held.length, 1, `one reservation names ${session}: ${held.map(([n]) => n).join(', ')}`);
    return held[0]!;
  }
  const launch = (name: string, user: string) =>
    createSession(stack.resources, name, { user, appDefinition: APP, sessionSecret: 'k'.repeat(32) });

  it("keeps the older operator's reservation for its session, serves new launches from the rest, and returns it when the session ends", async () => {
    await eventually(async () => {
      assert.deepEqual((await stack.resources.appDefinitions.get(APP)).status?.pool, { desired: 3, ready: 3 });
      assert.equal([...(await reservations()).values()].filter((l) => !l.metadata?.labels?.[LABELS.session]).length, 3);
    }, 60_000);
    await launch('before-upgrade', 'first@example.com');
    await launch('claimed-late', 'late@example.com');
    const first: Session = await waitForSession(stack.resources, 'before-upgrade', running);
    const late: Session = await waitForSession(stack.resources, 'claimed-late', running);
    const [instance] = await heldBy('before-upgrade');
    const [lateInstance, lateLease] = await heldBy('claimed-late');

    // The world the older operator leaves: its claims on the Deployments, and no Leases, except a free
    // one beside the claim that landed last.
    await stack.operator.stop();
    for (const [name, session] of [
      [instance, first],
      [lateInstance, late],
    ] as const) {
      const d = await deployment(name);
      d.metadata!.labels = { ...d.metadata!.labels, [LABELS.session]: session.metadata.name };
      d.metadata!.ownerReferences = [
        ...(d.metadata!.ownerReferences ?? []),
        ownerReference({ apiVersion: API_VERSION, kind: 'Session', metadata: session.metadata }, false),
      ];
      await stack.apps.replaceNamespacedDeployment({ name, namespace: stack.namespace, body: d });
    }
    const { [LABELS.session]: _held, ...freeLabels } = lateLease.metadata!.labels!;
    const free = await coordination().replaceNamespacedLease({
      name: lateInstance,
      namespace: stack.namespace,
      body: { ...lateLease, metadata: { ...lateLease.metadata, labels: freeLabels }, spec: {} },
    });
    for (const [name, lease] of await reservations()) {
      if (name !== lateInstance) await coordination().deleteNamespacedLease({ name, namespace: stack.namespace });
      else assert.equal(lease.metadata?.labels?.[LABELS.session], undefined);
    }
    assert.deepEqual([...(await reservations()).keys()], [lateInstance]);

    await stack.restartOperator();
    // Each running session's instance has its Lease, held by that session (its uid); the third a free one.
    await eventually(async () => {
      const leases = await reservations();
      for (const [name, session] of [
        [instance, first],
        [lateInstance, late],
      ] as const) {
        assert.equal(leases.get(name)?.metadata?.labels?.[LABELS.session], session.metadata.name);
        assert.equal(leases.get(name)?.spec?.holderIdentity, session.metadata.uid);
      }
      assert.equal(leases.size, 3);
      assert.equal([...leases.values()].filter((l) => !l.metadata?.labels?.[LABELS.session]).length, 1);
    }, 60_000);
    assert.notEqual(
      (await reservations()).get(lateInstance)?.metadata?.resourceVersion,
      free.metadata?.resourceVersion,
    );
    for (const session of [first, late]) {
      const after = await stack.resources.sessions.get(session.metadata.name);
      assert.ok(running(after), `${session.metadata.name}: ${JSON.stringify(after.status)}`);
      assert.equal(after.status?.url, session.status?.url, 'a running session keeps its URL');
    }

    // A new launch is served from the third instance, never from one a session holds.
    await launch('after-upgrade', 'second@example.com');
    await waitForSession(stack.resources, 'after-upgrade', running);
    const [served] = await heldBy('after-upgrade');
    assert.ok(![instance, lateInstance].includes(served), `served from ${served}`);
    assert.equal((await heldBy('before-upgrade'))[0], instance);
    assert.equal((await heldBy('claimed-late'))[0], lateInstance);

    // The session's end returns its instance to the pool: the older claim is gone from the
    // Deployment, and its reservation is free again.
    await stack.resources.sessions.delete(first.metadata.name);
    await eventually(async () => {
      const returned = await deployment(instance);
      assert.equal(returned.metadata?.labels?.[LABELS.session], undefined);
      assert.deepEqual(
        (returned.metadata?.ownerReferences ?? []).filter((o) => o.kind === 'Session'),
        [],
        'no owner reference to the ended session',
      );
      const lease = (await reservations()).get(instance);
      assert.ok(lease, 'the returned instance has its reservation');
      assert.equal(lease.metadata?.labels?.[LABELS.session], undefined);
    }, 60_000);
    assert.equal((await heldBy('after-upgrade'))[0], served);
  });
});

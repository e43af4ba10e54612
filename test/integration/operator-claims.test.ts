// Claims under a class's first launches: each warm instance mounts a claim of its own, and a burst of
// launches of new workspaces takes them over at once. No claim is given to two workspaces, none is
// lost or leaked, the launches the pool cannot serve get claims of their own, and every instance
// gets a fresh claim when it returns to the pool.
import assert from 'node:assert/strict';
import { ANNOTATIONS, LABELS } from '../../server/src/model/api-group.js';
import { claimBinderName, COMPONENT, instanceClaimName } from '../../server/src/operator/manifests.js';
import { eventually } from '../support/kube.js';
import {
  appDefinitionSpec,
  createAppDefinition,
  createSession,
  instanceReservations,
  lazySessionPod,
  provideVolume,
  running,
  waitForSession,
} from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'python-latest';
const POOL = 6;
const LAUNCHES = 10;

describe('operator: claims of a warm pool under a burst of new workspaces', function () {
  const stack = useStack('op-claims', {
    apps: [appDefinitionSpec(APP, { minInstances: POOL, maxInstances: 50 })],
    operator: { eagerStart: true, sessionsPerUser: 1 },
  });
  this.timeout(300_000);

  const claims = async () =>
    (await stack.core.listNamespacedPersistentVolumeClaim({ namespace: stack.namespace })).items.filter(
      (c) => !c.metadata?.deletionTimestamp,
    );
  const instances = async () =>
    (
      await stack.apps.listNamespacedDeployment({
        namespace: stack.namespace,
        labelSelector: `${LABELS.component}=pool-instance`,
      })
    ).items.filter((d) => !d.metadata?.deletionTimestamp);

  it('hands each warm claim to one new workspace, gives the rest claims of their own, and leaks none', async () => {
    const free = await eventually(async () => {
      const list = await instances();
      assert.equal(list.length, POOL);
      assert.deepEqual((await stack.resources.appDefinitions.get(APP)).status?.pool, {
        desired: POOL,
        ready: POOL,
      });
      return list;
    }, 60_000);
    const poolClaims = new Set(free.map((d) => instanceClaimName(d)!));
    assert.equal(poolClaims.size, POOL, 'a claim of its own for each instance');
    assert.deepEqual(new Set((await claims()).map((c) => c.metadata!.name!)), poolClaims);

    // The launches at once, each as the service makes it: the workspace, then its session.
    const names = Array.from({ length: LAUNCHES }, (_, i) => `s${i}`);
    await Promise.all(
      names.map(async (n) => {
        const user = `${n}@example.com`;
        await stack.resources.workspaces.create({
          metadata: { name: `ws-${n}`, annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
          spec: { user, appDefinition: APP },
        });
        await createSession(stack.resources, n, { user, appDefinition: APP, workspace: `ws-${n}` });
      }),
    );
    const sessions = await Promise.all(names.map((n) => waitForSession(stack.resources, n, running, 120_000)));
    const eager = sessions.filter((s) => s.status?.startStrategy === 'eager');
    assert.equal(eager.length, POOL, 'every warm instance served a launch');
    assert.equal(sessions.filter((s) => s.status?.startStrategy === 'lazy-fallback').length, LAUNCHES - POOL);

    const workspaces = await eventually(async () => {
      const list = await Promise.all(names.map((n) => stack.resources.workspaces.get(`ws-${n}`)));
      for (const w of list) assert.equal(w.status?.phase, 'Bound', `${w.metadata.name} Bound`);
      return list;
    }, 60_000);
    const byWorkspace = new Map(workspaces.map((w) => [w.metadata.name, w.status!.claimName!]));
    assert.equal(new Set(byWorkspace.values()).size, LAUNCHES, 'no claim given to two workspaces');
    for (const s of sessions) {
      const claim = byWorkspace.get(s.spec.workspace!)!;
      if (s.status?.startStrategy === 'eager') {
        assert.ok(poolClaims.has(claim), `${s.metadata.name}'s workspace took a warm claim`);
        const instance = await stack.apps.readNamespacedDeployment({
          name: `${APP}-pool-${s.status.instanceId}`,
          namespace: stack.namespace,
        });
        assert.equal(instanceClaimName(instance), claim, `${s.metadata.name}'s pod mounts its workspace's claim`);
        assert.equal(instance.metadata?.generation, 1, 'the pod template untouched');
      } else {
        assert.equal(claim, s.spec.workspace, `${s.metadata.name}'s workspace has a claim of its own`);
        const own = await lazySessionPod(stack.core, stack.namespace, s.metadata.name);
        assert.equal(own.spec!.volumes!.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName, claim);
      }
    }
    // Each claim is its workspace's alone, by owner and label; nothing else exists.
    await eventually(async () => {
      const list = await claims();
      assert.equal(list.length, LAUNCHES, list.map((c) => c.metadata?.name).join(', '));
      for (const c of list) {
        const w = workspaces.find((x) => x.status?.claimName === c.metadata!.name)!;
        assert.ok(w, `${c.metadata?.name} is a workspace's`);
        assert.deepEqual(
          c.metadata?.ownerReferences?.map((o) => o.uid),
          [w.metadata.uid],
        );
        assert.equal(c.metadata?.labels?.[LABELS.workspace], w.metadata.name);
        assert.equal(c.metadata?.labels?.[LABELS.poolInstance], undefined);
      }
    });

    // The sessions end: each instance returns on a fresh claim, every workspace keeps its own.
    await Promise.all(names.map((n) => stack.resources.sessions.delete(n)));
    await eventually(async () => {
      const list = await instances();
      assert.equal(list.length, POOL);
      const fresh = list.map((d) => instanceClaimName(d)!);
      for (const c of fresh) assert.ok(!poolClaims.has(c) && !byWorkspace.has(c), `${c} is fresh`);
      assert.deepEqual(
        new Set((await claims()).map((c) => c.metadata!.name!)),
        new Set([...byWorkspace.values(), ...fresh]),
      );
    }, 120_000);

    // The workspaces go (reclaim policy Delete): so do their claims; the pool's stay.
    await Promise.all(names.map((n) => stack.resources.workspaces.delete(`ws-${n}`)));
    await eventually(async () => {
      const left = new Set((await claims()).map((c) => c.metadata!.name!));
      assert.deepEqual(left, new Set((await instances()).map((d) => instanceClaimName(d)!)));
    }, 120_000);
  });

  it('gives a new workspace one warm claim when two sessions start on it at once: the later one waits, then mounts it', async () => {
    await eventually(
      async () =>
        assert.deepEqual((await stack.resources.appDefinitions.get(APP)).status?.pool, {
          desired: POOL,
          ready: POOL,
        }),
      60_000,
    );
    await stack.resources.workspaces.create({
      metadata: { name: 'ws-shared', annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
      spec: { user: 'tess@example.com', appDefinition: APP },
    });
    await Promise.all(
      ['first', 'second'].map((n) =>
        createSession(stack.resources, `shared-${n}`, {
          user: `${n}@example.com`,
          appDefinition: APP,
          workspace: 'ws-shared',
        }),
      ),
    );
    const [first, second] = await Promise.all(
      ['first', 'second'].map((n) => waitForSession(stack.resources, `shared-${n}`, running, 120_000)),
    );
    const strategies = [first!, second!].map((s) => s.status?.startStrategy).sort();
    assert.deepEqual(strategies, ['eager', 'lazy'], 'one warm instance, one pod of its own');
    const reservations = await instanceReservations(stack.kc, stack.namespace);
    const labelled = (await instances()).filter(
      (d) => reservations.get(d.metadata?.name ?? '')?.metadata?.labels?.[LABELS.workspace] === 'ws-shared',
    );
    assert.equal(labelled.length, 1, 'one warm instance reserved for the workspace');
    const claim = (await stack.resources.workspaces.get('ws-shared')).status?.claimName;
    assert.equal(claim, instanceClaimName(labelled[0]!));
    const lazy = [first!, second!].find((s) => s.status?.startStrategy === 'lazy')!;
    const own = await lazySessionPod(stack.core, stack.namespace, lazy.metadata.name);
    assert.equal(
      own.spec!.volumes!.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName,
      claim,
      "the later session mounts the workspace's claim",
    );
  });

  it('a new workspace whose first session starts lazily makes its own claim; a second session at once mounts it', async () => {
    // No warm pool for this app definition: its launches fall back to lazy starts.
    await createAppDefinition(stack.resources, 'rust-latest', { minInstances: 0, maxInstances: 50 });
    await stack.resources.workspaces.create({
      metadata: { name: 'ws-cold', annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
      spec: { user: 'uma@example.com', appDefinition: 'rust-latest' },
    });
    await Promise.all(
      ['a', 'b'].map((n) =>
        createSession(stack.resources, `cold-${n}`, {
          user: `cold-${n}@example.com`,
          appDefinition: 'rust-latest',
          workspace: 'ws-cold',
        }),
      ),
    );
    const both = await Promise.all(
      ['a', 'b'].map((n) => waitForSession(stack.resources, `cold-${n}`, running, 120_000)),
    );
    assert.deepEqual(both.map((s) => s.status?.startStrategy).sort(), ['lazy', 'lazy-fallback']);
    assert.equal((await stack.resources.workspaces.get('ws-cold')).status?.claimName, 'ws-cold', 'its own claim');
    for (const s of both) {
      const own = await lazySessionPod(stack.core, stack.namespace, s.metadata.name);
      assert.equal(own.spec!.volumes!.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName, 'ws-cold');
    }
  });
});

describe('operator: standby claims for new workspaces that start lazily', function () {
  this.timeout(300_000);
  const LAZY_APP = 'go-latest';
  const STANDBY = 2;
  const stack = useStack('op-standby', {
    apps: [appDefinitionSpec(LAZY_APP, { minInstances: 0, maxInstances: 50 })],
    operator: { eagerStart: true, standbyClaims: STANDBY },
  });

  const standby = async () =>
    (
      await stack.core.listNamespacedPersistentVolumeClaim({
        namespace: stack.namespace,
        labelSelector: `${LABELS.component}=${COMPONENT.standbyClaim}`,
      })
    ).items.filter((c) => !c.metadata?.deletionTimestamp);
  const binders = async () =>
    (
      await stack.core.listNamespacedPod({
        namespace: stack.namespace,
        labelSelector: `${LABELS.component}=${COMPONENT.claimBinder}`,
      })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);
  const mounted = async (session: string) =>
    (await lazySessionPod(stack.core, stack.namespace, session)).spec!.volumes!.find((v) => v.name === 'workspace')
      ?.persistentVolumeClaim?.claimName;
  /** The standby claims once each unbound one has its binder pod (mounting it); the test binds them by hand. */
  const standbyWithBinders = () =>
    eventually(async () => {
      const claims = await standby();
      assert.equal(claims.length, STANDBY);
      const pods = await binders();
      for (const c of claims.filter((x) => x.status?.phase !== 'Bound')) {
        const pod = pods.find((p) => p.metadata?.name === claimBinderName(c.metadata!.name!));
        assert.ok(pod, `${c.metadata?.name} has its binder`);
        assert.equal(pod.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName, c.metadata?.name);
      }
      return claims;
    }, 60_000);
  const launch = async (name: string) => {
    await stack.resources.workspaces.create({
      metadata: { name: `ws-${name}`, annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } },
      spec: { user: `${name}@example.com`, appDefinition: LAZY_APP },
    });
    await createSession(stack.resources, name, {
      user: `${name}@example.com`,
      appDefinition: LAZY_APP,
      workspace: `ws-${name}`,
    });
  };

  it("keeps standby claims bound, gives one to a new workspace's lazy start and refills; one claim goes to one workspace", async () => {
    // Each unbound standby claim gets a binder pod; once bound (a volume made for it), the binder goes.
    const first = await standbyWithBinders();
    for (const c of first) await provideVolume(stack.kc, stack.namespace, c.metadata!.name!);
    await eventually(async () => {
      for (const c of await standby()) assert.equal(c.status?.phase, 'Bound', `${c.metadata?.name} bound`);
      assert.deepEqual(
        (await binders()).map((p) => p.metadata?.name),
        [],
        'no binder once its claim is bound',
      );
    }, 60_000);
    const bound = new Set(first.map((c) => c.metadata!.name!));

    // A new workspace's session starts lazily (no pool) on a standby claim: the claim becomes the
    // workspace's by label and owner, its status names it, its pod mounts it.
    await launch('solo');
    const solo = await waitForSession(stack.resources, 'solo', running, 120_000);
    assert.equal(solo.status?.startStrategy, 'lazy-fallback');
    const workspace = await eventually(async () => {
      const w = await stack.resources.workspaces.get('ws-solo');
      assert.equal(w.status?.phase, 'Bound');
      return w;
    }, 60_000);
    const taken = workspace.status!.claimName!;
    assert.ok(bound.has(taken), `ws-solo took a standby claim (${taken})`);
    assert.match(JSON.stringify(workspace.status?.conditions), /ClaimTakenOver/);
    assert.equal(await mounted('solo'), taken);
    const claim = await stack.core.readNamespacedPersistentVolumeClaim({ name: taken, namespace: stack.namespace });
    assert.equal(claim.metadata?.labels?.[LABELS.workspace], 'ws-solo');
    assert.equal(claim.metadata?.labels?.[LABELS.workspaceUid], workspace.metadata.uid);
    assert.equal(claim.metadata?.labels?.[LABELS.component], undefined, 'no longer a standby claim');
    assert.deepEqual(
      claim.metadata?.ownerReferences?.map((o) => o.uid),
      [workspace.metadata.uid],
    );

    // The set refills: a new claim, with its binder, beside the bound one left.
    const refilled = await standbyWithBinders();
    const left = refilled.filter((c) => bound.has(c.metadata!.name!));
    assert.equal(left.length, 1, 'one bound standby claim left');

    // Two launches at once, one bound standby claim (the new one is not bound): one takes it, the
    // other gets its own claim; none gets two, none shares.
    await Promise.all(['duo-a', 'duo-b'].map(launch));
    await Promise.all(['duo-a', 'duo-b'].map((n) => waitForSession(stack.resources, n, running, 120_000)));
    const claims = await eventually(async () => {
      const list = await Promise.all(['duo-a', 'duo-b'].map((n) => stack.resources.workspaces.get(`ws-${n}`)));
      for (const w of list) assert.equal(w.status?.phase, 'Bound');
      return list.map((w) => w.status!.claimName!);
    }, 60_000);
    const standbyName = left[0]!.metadata!.name!;
    assert.equal(claims.filter((c) => c === standbyName).length, 1, `one took the standby claim: ${claims.join(', ')}`);
    const other = claims.findIndex((c) => c !== standbyName);
    assert.equal(claims[other], `ws-${['duo-a', 'duo-b'][other]}`, 'the other made its own');
    for (const n of ['duo-a', 'duo-b'])
      assert.equal(await mounted(n), (await stack.resources.workspaces.get(`ws-${n}`)).status?.claimName);
  });
});

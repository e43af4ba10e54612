// The writes of a launch: the service's finalizer spares the operator a metadata write before the
// URL, the decision's annotations come after the status (or with the service's answered mark), a
// decision whose status was never written is taken up from the world, a route is found for clean-up
// without an annotation, and a ready bridge's values arrive in the status that carries the URL.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ANNOTATIONS, LABELS, SESSION_FINALIZER } from '../../src/model/api-group.js';
import type { AppDefinition } from '../../src/model/app-definition.js';
import type { Session } from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { COMPONENT, routePath, sessionPodApp } from '../../src/operator/manifests.js';
import type { PoolInstance } from '../../src/operator/pool/instances.js';
import type { RouteEntry } from '../../src/operator/routes/ingress.js';
import { createLogger } from '../../src/operator/runtime/logger.js';
import { removeSessionRoute } from '../../src/operator/session/finalize.js';
import { DataInjector } from '../../src/operator/session/injection.js';
import { Pass } from '../../src/operator/session/status.js';
import type { SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { annotateDecision, ensureFinalizer } from '../../src/operator/session/steps/decision.js';
import { guards } from '../../src/operator/session/steps/guards.js';
import { podsCache, sessionsCache } from './cache-fakes.js';

const NAMESPACE = 'ns';
const INGRESS = 'sessions';

const appDefinition = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'AppDefinition',
  metadata: { name: 'java', uid: 'app-uid', generation: 1 },
  spec: { name: 'java', image: 'java:1', port: 3000, ingressname: INGRESS, maxInstances: null },
} as unknown as AppDefinition;

function session(name: string, user: string, extra: Partial<Session['metadata']> = {}, created = 0): Session {
  return {
    apiVersion: 'ide.cloud/v1beta10',
    kind: 'Session',
    metadata: {
      name,
      namespace: NAMESPACE,
      uid: `uid-${name}`,
      generation: 1,
      resourceVersion: '7',
      creationTimestamp: new Date(1_700_000_000_000 + created * 1000).toISOString(),
      ...extra,
    },
    spec: { user, appDefinition: 'java', sessionSecret: 's'.repeat(32) },
  } as unknown as Session;
}

/** The session API: every merge patch recorded, answered with the patched session. */
function sessionsApi(stored: Session) {
  const patches: Record<string, unknown>[] = [];
  return {
    patches,
    api: {
      mergePatch: async (_name: string, patch: { metadata: Record<string, unknown> }) => {
        patches.push(structuredClone(patch));
        const annotations = { ...stored.metadata.annotations, ...(patch.metadata.annotations as object) };
        const finalizers = (patch.metadata.finalizers as string[] | undefined) ?? stored.metadata.finalizers;
        return { ...stored, metadata: { ...stored.metadata, annotations, finalizers, resourceVersion: '8' } };
      },
    },
  };
}

function deps(overrides: Partial<SessionStepDeps> = {}, sessions: Session[] = []): SessionStepDeps {
  return {
    config: parseOperatorConfig({ namespace: NAMESPACE, eagerStart: true, sessionsPerUser: 1 }),
    namespace: NAMESPACE,
    sessions: { ...sessionsCache(() => sessions), observe: () => undefined },
    appDefinitions: { find: async () => appDefinition },
    workspaces: { find: async () => undefined },
    deployments: { get: () => undefined, observe: () => undefined },
    replicaSets: { get: () => undefined, observe: () => undefined },
    pods: podsCache(() => []),
    pool: { findReservation: () => undefined, reserve: async () => undefined },
    envSource: async () => undefined,
    limitsPassed: new Set<string>(),
    newWorkspaceClaimants: new Map<string, string>(),
    // Seconds after the sessions' creation: within their start deadline.
    now: () => 1_700_000_010_000,
    ...overrides,
  } as unknown as SessionStepDeps;
}

/** A lazy session's own pod, as the operator makes it (its labels), in the state given. */
function ownPod(s: Session, status: k8s.V1PodStatus): k8s.V1Pod {
  return {
    metadata: {
      name: `${s.metadata.name}-x1`,
      labels: { [LABELS.session]: s.metadata.name, [LABELS.component]: COMPONENT.session, app: sessionPodApp(s) },
    },
    status,
  };
}

function decided(s: Session, strategy: 'eager' | 'lazy-fallback', instanceId?: string): Pass {
  const pass = new Pass(s);
  pass.ingressName = INGRESS;
  pass.status.startStrategy = strategy;
  if (instanceId) pass.status.instanceId = instanceId;
  return pass;
}

describe("a launch's session metadata: the finalizer before anything, the decision's annotations after the status", () => {
  it('a session created with the finalizer: nothing written before its resources, eager or lazy', async () => {
    for (const [name, strategy] of [
      ['warm-1', 'eager'],
      ['lazy-1', 'lazy-fallback'],
    ] as const) {
      const s = session(name, 'wendy@example.com', { finalizers: [SESSION_FINALIZER] });
      const { api, patches } = sessionsApi(s);
      const d = deps({ sessionsApi: api } as Partial<SessionStepDeps>);
      d.limitsPassed.add(name);
      await ensureFinalizer({
        deps: d,
        session: s,
        pass: decided(s, strategy, strategy === 'eager' ? '2' : undefined),
      });
      assert.deepEqual(patches, [], `${strategy}: nothing written`);
      assert.ok(d.limitsPassed.has(name), 'the limits still count it until its status is cached');
      assert.equal(s.metadata.annotations, undefined, 'no annotation before the status');
    }
  });

  it("after the status: one write of the decision's annotations on the session read, none once they are there", async () => {
    for (const [name, strategy, instanceId] of [
      ['warm-4', 'eager', '2'],
      ['lazy-4', 'lazy-fallback', undefined],
    ] as const) {
      const s = session(name, 'wendy@example.com', { finalizers: [SESSION_FINALIZER] });
      const { api, patches } = sessionsApi(s);
      const d = deps({ sessionsApi: api } as Partial<SessionStepDeps>);
      await annotateDecision({ deps: d, session: s, pass: decided(s, strategy, instanceId) });
      assert.deepEqual(patches, [
        {
          metadata: {
            uid: `uid-${name}`,
            annotations: {
              [ANNOTATIONS.startStrategy]: strategy,
              ...(instanceId ? { [ANNOTATIONS.instanceId]: instanceId } : {}),
            },
          },
        },
      ]);
      const annotated = session(name, 'wendy@example.com', {
        finalizers: [SESSION_FINALIZER],
        annotations: patches[0]!.metadata.annotations as Record<string, string>,
      });
      await annotateDecision({ deps: d, session: annotated, pass: decided(annotated, strategy, instanceId) });
      assert.equal(patches.length, 1, `${strategy}: annotated once`);
    }
  });

  it("an ephemeral launch's session not answered yet: the operator leaves the annotations to the service's answer", async () => {
    const s = session('warm-5', 'wendy@example.com', {
      finalizers: [SESSION_FINALIZER],
      annotations: { [ANNOTATIONS.unanswered]: 'true' },
    });
    const { api, patches } = sessionsApi(s);
    await annotateDecision({
      deps: deps({ sessionsApi: api } as Partial<SessionStepDeps>),
      session: s,
      pass: decided(s, 'eager', '3'),
    });
    assert.deepEqual(patches, []);
  });

  it('the annotations after the status leave a session gone or replaced under the same name alone', async () => {
    for (const code of [404, 409]) {
      const s = session('warm-6', 'wendy@example.com', { finalizers: [SESSION_FINALIZER] });
      const error = Object.assign(new Error('precondition'), { code });
      const api = { mergePatch: async () => Promise.reject(error) };
      await annotateDecision({
        deps: deps({ sessionsApi: api } as Partial<SessionStepDeps>),
        session: s,
        pass: decided(s, 'eager', '1'),
      });
    }
  });

  it('a session created without the finalizer (kubectl) gets it before its route, its decision along in the one write', async () => {
    const s = session('warm-2', 'wendy@example.com');
    const { api, patches } = sessionsApi(s);
    await ensureFinalizer({
      deps: deps({ sessionsApi: api } as Partial<SessionStepDeps>),
      session: s,
      pass: decided(s, 'eager', '1'),
    });
    assert.equal(patches.length, 1);
    const metadata = patches[0]!.metadata as Record<string, unknown>;
    assert.deepEqual(metadata.finalizers, [SESSION_FINALIZER]);
    assert.equal(metadata.resourceVersion, '7', 'the finalizer list is replaced against the version read');
    assert.equal(metadata.uid, 'uid-warm-2', 'on the session read');
    assert.deepEqual(metadata.annotations, { [ANNOTATIONS.startStrategy]: 'eager', [ANNOTATIONS.instanceId]: '1' });
    assert.deepEqual(s.metadata.finalizers, [SESSION_FINALIZER]);
  });

  it('a session changed while its finalizer is written: tried again later, not failed', async () => {
    const s = session('warm-3', 'wendy@example.com');
    const conflict = Object.assign(new Error('resourceVersion precondition'), { code: 409 });
    const api = { mergePatch: async () => Promise.reject(conflict) };
    await assert.rejects(
      ensureFinalizer({
        deps: deps({ sessionsApi: api } as Partial<SessionStepDeps>),
        session: s,
        pass: decided(s, 'eager', '1'),
      }),
      { name: 'RetryLater' },
    );
  });
});

describe('a decision whose status was never written is taken up from the world', () => {
  // An earlier session of the same user holds the only slot: a session checked again would be refused.
  const earlier = session('other-1', 'erin@example.com', { annotations: { [ANNOTATIONS.startStrategy]: 'lazy' } }, 0);

  it('the instance reserved for it: eager, its id, not checked against the limits again', async () => {
    const s = session('warm-4', 'erin@example.com', { finalizers: [SESSION_FINALIZER] }, 5);
    const instance = { id: 3, name: 'java-pool-3', deployment: {} } as unknown as PoolInstance;
    const d = deps(
      {
        pool: { findReservation: (_app, x) => (x.metadata.uid === 'uid-warm-4' ? instance : undefined) },
      } as Partial<SessionStepDeps>,
      [earlier, s],
    );
    const pass = new Pass(s);
    await guards({ deps: d, session: s, pass });
    assert.equal(pass.status.startStrategy, 'eager');
    assert.equal(pass.status.instanceId, '3');
  });

  it("a pod of the session's own, in any state: lazy (a fallback with eager start on)", async () => {
    const s = session('lazy-1', 'erin@example.com', { finalizers: [SESSION_FINALIZER] }, 5);
    const pod = ownPod(s, { phase: 'Failed' });
    const d = deps({ pods: podsCache(() => [pod]) } as unknown as Partial<SessionStepDeps>, [earlier, s]);
    const pass = new Pass(s);
    await guards({ deps: d, session: s, pass });
    assert.equal(pass.status.startStrategy, 'lazy-fallback');
  });

  for (const [kind, cache] of [
    ['ReplicaSet (an earlier operator made it)', 'replicaSets'],
    ['Deployment (an older operator made it)', 'deployments'],
  ] as const) {
    it(`a ${kind} of the session's own: lazy (a fallback with eager start on)`, async () => {
      const s = session('lazy-2', 'erin@example.com', { finalizers: [SESSION_FINALIZER] }, 5);
      const own = { metadata: { name: 'lazy-2', ownerReferences: [{ uid: 'uid-lazy-2' }] } };
      const d = deps(
        { [cache]: { get: (n: string) => (n === 'lazy-2' ? own : undefined) } } as Partial<SessionStepDeps>,
        [earlier, s],
      );
      const pass = new Pass(s);
      await guards({ deps: d, session: s, pass });
      assert.equal(pass.status.startStrategy, 'lazy-fallback');
    });
  }

  it('nothing in the world: undecided, checked against the limits (553)', async () => {
    const s = session('new-1', 'erin@example.com', { finalizers: [SESSION_FINALIZER] }, 5);
    const namesake = { metadata: { name: 'new-1', ownerReferences: [{ uid: 'uid-of-an-earlier-new-1' }] } };
    const earlierNew = session('new-1', 'erin@example.com', {}, 1);
    earlierNew.metadata.uid = 'uid-of-an-earlier-new-1';
    const d = deps(
      {
        replicaSets: { get: () => namesake },
        pods: podsCache(() => [ownPod(earlierNew, { phase: 'Running' })]),
      } as unknown as Partial<SessionStepDeps>,
      [earlier, s],
    );
    await assert.rejects(guards({ deps: d, session: s, pass: new Pass(s) }), { code: 553 });
  });
});

describe("a session's route is removed wherever it is", () => {
  it('found in the Ingress cache when no annotation names its Ingress (a crash before the annotations)', async () => {
    const s = session('warm-5', 'wendy@example.com');
    const removed: [string, RouteEntry, boolean][] = [];
    const routes = {
      holding: (_host: string, path: string) => (path === routePath(s) ? [INGRESS] : []),
      set: async (ingressName: string, entry: RouteEntry, present: boolean) =>
        void removed.push([ingressName, entry, present]),
    };
    await removeSessionRoute({ config: { sessionHost: 'ide.test' }, routes }, s);
    assert.deepEqual(
      removed.map(([i, e, p]) => [i, e.path, p]),
      [
        [INGRESS, routePath(s), false],
        [INGRESS, '/warm-5/', false],
      ],
    );
  });

  it('nowhere: no write', async () => {
    const s = session('warm-6', 'wendy@example.com');
    let writes = 0;
    const routes = { holding: () => [], set: async () => void writes++ };
    await removeSessionRoute({ config: { sessionHost: 'ide.test' }, routes }, s);
    assert.equal(writes, 0);
  });
});

describe("the injection's first try, which a pass waits for before the status with the URL", () => {
  let server: Server;
  let port: number;
  let healthy = true;
  before(async () => {
    // A bridge not up yet answers nothing with 200: its health and the values' post alike.
    server = createServer((req, res) => {
      if (req.url === '/health') res.writeHead(healthy ? 200 : 503).end();
      else req.resume().on('end', () => res.writeHead(healthy ? 200 : 503).end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());

  const core = {
    listNamespacedPod: async () => ({
      items: [
        {
          metadata: { name: 'pod', labels: { [LABELS.poolInstance]: 'java-pool-1' } },
          status: { podIP: '127.0.0.1', phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
        },
      ],
    }),
    readNamespacedSecret: async () => ({ data: { token: Buffer.from('t').toString('base64') } }),
  };
  const injector = (attempts: number) =>
    new DataInjector(
      core as never,
      parseOperatorConfig({ namespace: NAMESPACE, bridgeHealthAttempts: attempts, bridgeHealthIntervalMs: 60_000 }),
      () => undefined,
      createLogger('silent'),
    );
  const target = () => ({ podSelector: `${LABELS.poolInstance}=java-pool-1`, port, tokenSecret: 'java-pool-1-bridge' });

  it('a bridge that takes the values at once: injected when the first try is over', async () => {
    healthy = true;
    const i = injector(3);
    const s = session('warm-7', 'wendy@example.com');
    i.ensure(s, target());
    await i.attempted('uid-warm-7');
    assert.equal(i.state('uid-warm-7')?.phase, 'Injected');
    i.stop();
  });

  it('a bridge not up yet: the first try is over when it waits to try again, still waiting', async () => {
    healthy = false;
    const i = injector(3);
    const s = session('warm-8', 'wendy@example.com');
    i.ensure(s, target());
    await i.attempted('uid-warm-8');
    assert.equal(i.state('uid-warm-8')?.phase, 'WaitingForBridge');
    assert.equal(i.state('uid-warm-8')?.attempts, 1);
    i.stop();
  });

  it('no injection: nothing to wait for', async () => {
    await injector(1).attempted('uid-none');
  });

  const wakes = (attempts: number) => {
    const woken: string[] = [];
    let firstWake!: (name: string) => void;
    const woke = new Promise<string>((resolve) => (firstWake = resolve));
    const i = new DataInjector(
      core as never,
      parseOperatorConfig({ namespace: NAMESPACE, bridgeHealthAttempts: attempts, bridgeHealthIntervalMs: 20 }),
      (name) => {
        woken.push(name);
        firstWake(name);
      },
      createLogger('silent'),
    );
    return { i, woken, woke };
  };

  it('an end that the following pass records wakes no other pass', async () => {
    healthy = true;
    const { i, woken } = wakes(3);
    i.ensure(session('warm-9', 'wendy@example.com'), target());
    const unfollow = i.follow('uid-warm-9');
    await i.attempted('uid-warm-9');
    assert.equal(i.state('uid-warm-9')?.phase, 'Injected');
    unfollow(true); // its status records the end
    assert.deepEqual(woken, []);
    i.stop();
  });

  it('an end that the following pass did not record (it stopped short) wakes the session when the following ends', async () => {
    healthy = true;
    const { i, woken } = wakes(3);
    i.ensure(session('warm-10', 'wendy@example.com'), target());
    const unfollow = i.follow('uid-warm-10');
    await i.attempted('uid-warm-10');
    assert.deepEqual(woken, [], 'not while followed');
    unfollow(false);
    unfollow(false);
    assert.deepEqual(woken, ['warm-10'], 'once');
    i.stop();
  });

  it('an end after the following pass let go wakes the session', async () => {
    healthy = false;
    const { i, woken, woke } = wakes(5);
    i.ensure(session('warm-11', 'wendy@example.com'), target());
    const unfollow = i.follow('uid-warm-11');
    await i.attempted('uid-warm-11');
    assert.equal(i.state('uid-warm-11')?.phase, 'WaitingForBridge');
    unfollow(false);
    assert.deepEqual(woken, [], 'nothing ended yet');
    healthy = true;
    assert.equal(await woke, 'warm-11');
    assert.equal(i.state('uid-warm-11')?.phase, 'Injected');
    i.stop();
  });
});

// A warm launch's route and its bridge's health check are sent beside its claim, not after the
// claim's answer: the route step then waits for that write instead of writing again; a candidate lost
// to another session has its route pointed at the next one, in order; a pass waits for these writes
// before it ends; the injection takes the health answer as its first check.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../src/model/api-group.js';
import { SESSION_FINALIZER } from '../../src/model/api-group.js';
import type { AppDefinition } from '../../src/model/app-definition.js';
import type { Session } from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { routePath } from '../../src/operator/manifests.js';
import type { PoolInstance } from '../../src/operator/pool/instances.js';
import type { RouteEntry } from '../../src/operator/routes/ingress.js';
import { createLogger } from '../../src/operator/runtime/logger.js';
import { DataInjector } from '../../src/operator/session/injection.js';
import { Pass } from '../../src/operator/session/status.js';
import type { GuardedStep, SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { chooseStrategy } from '../../src/operator/session/steps/decision.js';
import { route, routeWritten } from '../../src/operator/session/steps/route.js';

const INGRESS = 'sessions';
const BRIDGE_PORT = 9123;
const appDefinition = {
  metadata: { name: 'java', uid: 'app-uid', generation: 1 },
  spec: {
    name: 'java',
    image: 'java:1',
    port: 3000,
    ingressname: INGRESS,
    minInstances: 2,
    options: { dataBridgeEnabled: 'true', dataBridgePort: String(BRIDGE_PORT) },
  },
} as unknown as AppDefinition;

function session(finalizers: string[] = [SESSION_FINALIZER]): Session {
  return {
    metadata: { name: 's-1', namespace: 'ns', uid: 'uid-1', generation: 1, resourceVersion: '7', finalizers },
    spec: { user: 'ada@example.org', appDefinition: 'java', sessionSecret: 's'.repeat(32) },
  } as unknown as Session;
}

/** A promise with its resolve and reject at hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Routes whose writes are answered when the test says so; each write's entry in the order sent. */
function heldRoutes() {
  const sent: { entry: RouteEntry; answer: ReturnType<typeof deferred<void>> }[] = [];
  return {
    sent,
    routes: {
      set: (ingressName: string, entry: RouteEntry, present: boolean) => {
        assert.equal(ingressName, INGRESS);
        assert.equal(present, true);
        const answer = deferred<void>();
        sent.push({ entry, answer });
        return answer.promise;
      },
    },
  };
}

const instance = (id: number, ready = true) =>
  ({ id, name: `java-pool-${id}`, ready, deployment: { metadata: {} } }) as PoolInstance;

function step(s: Session, deps: Partial<SessionStepDeps>): GuardedStep {
  return {
    deps: {
      config: parseOperatorConfig({ namespace: 'ns', eagerStart: true, sessionHost: 'ide.example.org' }),
      namespace: 'ns',
      injector: { probe: () => undefined },
      ...deps,
    } as SessionStepDeps,
    session: s,
    pass: new Pass(s),
    appDefinition,
  };
}

type Aiming = ((candidate: PoolInstance) => void) | undefined;

/** A pool with no reservation yet whose `reserve` does what `reserve` says with the callback it is given. */
function poolReserving(reserve: (aiming: Aiming) => Promise<PoolInstance | undefined>): SessionStepDeps['pool'] {
  return {
    findReservation: () => undefined,
    reservedFor: () => [],
    reserve: (_app, _min, _session, _workspace, aiming) => reserve(aiming),
  };
}

/** Lets every pending callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("a warm launch's route, sent beside its claim", () => {
  it('is sent before the claim is answered; the route step waits for it and writes nothing more', async () => {
    const { sent, routes } = heldRoutes();
    const claim = deferred<void>();
    const s = session();
    const guarded = step(s, {
      routes: routes as unknown as SessionStepDeps['routes'],
      pool: poolReserving(async (aiming) => {
        aiming?.(instance(2));
        await claim.promise;
        return instance(2);
      }),
    });
    const choosing = chooseStrategy(guarded);
    await settle();
    assert.deepEqual(
      sent.map((w) => w.entry),
      [{ host: 'ide.example.org', path: routePath(s), serviceName: 'java-pool-2' }],
      'the route is on its way while the claim is',
    );
    claim.resolve();
    await choosing;
    assert.equal(guarded.pass.status.startStrategy, 'eager');

    let routed = false;
    const routing = route({ ...guarded, workload: { eager: true, backend: 'java-pool-2' } }).then(
      () => (routed = true),
    );
    await settle();
    assert.equal(routed, false, 'the route step waits for the write sent beside the claim');
    sent[0]!.answer.resolve();
    await routing;
    assert.equal(sent.length, 1, 'written once');
  });

  it('a lost candidate: the next route is sent once the last is answered, and the last one stands', async () => {
    const { sent, routes } = heldRoutes();
    const s = session();
    const guarded = step(s, {
      routes: routes as unknown as SessionStepDeps['routes'],
      pool: poolReserving(async (aiming) => {
        aiming?.(instance(1)); // another session's claim of it wins: 409
        aiming?.(instance(2));
        return instance(2);
      }),
    });
    await chooseStrategy(guarded);
    await settle();
    assert.deepEqual(
      sent.map((w) => w.entry.serviceName),
      ['java-pool-1'],
      'the next waits for the last',
    );
    sent[0]!.answer.reject(new Error('the Ingress is busy'));
    await settle();
    assert.deepEqual(
      sent.map((w) => w.entry.serviceName),
      ['java-pool-1', 'java-pool-2'],
      'a failed write does not stop the next one',
    );
    sent[1]!.answer.resolve();
    await route({ ...guarded, workload: { eager: true, backend: 'java-pool-2' } });
    assert.equal(sent.length, 2);
  });

  it('no instance won after all (lazy): the route to its own Service follows the one sent beside', async () => {
    const { sent, routes } = heldRoutes();
    const s = session();
    const guarded = step(s, {
      routes: routes as unknown as SessionStepDeps['routes'],
      pool: poolReserving(async (aiming) => {
        aiming?.(instance(1));
        return undefined;
      }),
    });
    await chooseStrategy(guarded);
    assert.equal(guarded.pass.status.startStrategy, 'lazy-fallback');
    const routing = route({ ...guarded, workload: { eager: false, backend: 's-1' } });
    await settle();
    assert.equal(sent.length, 1, 'not before the write beside the claim is answered');
    sent[0]!.answer.resolve();
    await settle();
    assert.deepEqual(
      sent.map((w) => w.entry.serviceName),
      ['java-pool-1', 's-1'],
    );
    sent[1]!.answer.resolve();
    await routing;
  });

  it('a session without the finalizer gets no route before its finalizer is written', async () => {
    const { sent, routes } = heldRoutes();
    const guarded = step(session([]), {
      routes: routes as unknown as SessionStepDeps['routes'],
      pool: poolReserving(async (aiming) => {
        assert.equal(aiming, undefined);
        return instance(1);
      }),
    });
    await chooseStrategy(guarded);
    assert.equal(sent.length, 0);
  });

  it('routeWritten settles only once the write sent beside is answered, failed or not', async () => {
    const { sent, routes } = heldRoutes();
    const guarded = step(session(), {
      routes: routes as unknown as SessionStepDeps['routes'],
      pool: poolReserving(async (aiming) => {
        aiming?.(instance(1));
        throw new Error('the API server is away');
      }),
    });
    await assert.rejects(chooseStrategy(guarded), /away/);
    let ended = false;
    const ending = routeWritten(guarded).then(() => (ended = true));
    await settle();
    assert.equal(ended, false, 'the pass waits for its route write');
    sent[0]!.answer.reject(new Error('gone'));
    await ending;
    assert.equal(ended, true);
  });
});

describe("the bridge's health, asked beside the claim", () => {
  it('the candidate being claimed, when ready: its pods and the bridge port', async () => {
    const probed: unknown[] = [];
    const s = session();
    await chooseStrategy(
      step(s, {
        routes: { set: async () => undefined } as unknown as SessionStepDeps['routes'],
        injector: { probe: (target: unknown) => void probed.push(target) } as unknown as SessionStepDeps['injector'],
        pool: poolReserving(async (aiming) => {
          aiming?.(instance(1, false)); // not ready: its bridge is not asked
          aiming?.(instance(2));
          return instance(2);
        }),
      }),
    );
    assert.deepEqual(probed, [{ podSelector: `${LABELS.poolInstance}=java-pool-2`, port: BRIDGE_PORT }]);
  });

  describe('the injection that follows', () => {
    let server: Server;
    let port: number;
    let healthChecks = 0;
    let healthy = true;
    before(async () => {
      server = createServer((req, res) => {
        if (req.url === '/health') {
          healthChecks++;
          res.writeHead(healthy ? 200 : 503).end();
        } else req.resume().on('end', () => res.writeHead(200).end('{}'));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(() => server.close());

    const pod = {
      metadata: { name: 'pod', namespace: 'ns', labels: { [LABELS.poolInstance]: 'java-pool-1' } },
      status: { podIP: '127.0.0.1', phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as k8s.V1Pod;
    const injector = () =>
      new DataInjector(
        {} as never,
        parseOperatorConfig({ namespace: 'ns', bridgeHealthAttempts: 3, bridgeHealthIntervalMs: 60_000 }),
        () => undefined,
        createLogger('silent'),
        {
          pods: { byIndex: () => [pod] },
          secrets: { read: async () => ({ token: 't' }) },
        },
      );
    const target = () => ({
      podSelector: `${LABELS.poolInstance}=java-pool-1`,
      port,
      tokenSecret: 'java-pool-1-bridge',
    });

    it('takes the answer asked beside the claim as its first health check, once', async () => {
      healthy = true;
      healthChecks = 0;
      const i = injector();
      i.probe(target());
      i.ensure(session(), target());
      await i.attempted('uid-1');
      assert.equal(i.state('uid-1')?.phase, 'Injected');
      assert.equal(i.state('uid-1')?.attempts, 1);
      assert.equal(healthChecks, 1, 'the bridge was asked once');
      // Another session's injection into the same bridge asks again: an answer is taken once.
      const other = { ...session(), metadata: { ...session().metadata, name: 's-2', uid: 'uid-2' } } as Session;
      i.ensure(other, target());
      await i.attempted('uid-2');
      assert.equal(healthChecks, 2);
      i.stop();
    });

    it('an unhealthy answer is a failed first check: the injection waits to try again', async () => {
      healthy = false;
      healthChecks = 0;
      const i = injector();
      i.probe(target());
      i.ensure(session(), target());
      await i.attempted('uid-1');
      assert.equal(i.state('uid-1')?.phase, 'WaitingForBridge');
      assert.equal(i.state('uid-1')?.attempts, 1);
      assert.equal(healthChecks, 1);
      i.stop();
    });
  });
});

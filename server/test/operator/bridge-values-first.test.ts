// A warm launch claims its instance first, and nothing else of the launch (no route, no request to the
// bridge) goes before the claim is won; then the values are posted to the ready pod's bridge at once,
// that post its first health check: GET /health only when the bridge does not answer it.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../src/model/api-group.js';
import type { AppDefinition } from '../../src/model/app-definition.js';
import type { Session } from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { instanceReservation, poolInstanceDeployment } from '../../src/operator/manifests.js';
import { PoolInstances, type PoolDeps, type PoolInstance } from '../../src/operator/pool/instances.js';
import { createLogger } from '../../src/operator/runtime/logger.js';
import { DataInjector } from '../../src/operator/session/injection.js';
import { Pass } from '../../src/operator/session/status.js';
import type { GuardedStep, SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { chooseStrategy } from '../../src/operator/session/steps/decision.js';

const BRIDGE_PORT = 9123;
const config = parseOperatorConfig({ namespace: 'ns', eagerStart: true, sessionHost: 'ide.example.org' });
const appDefinition = {
  metadata: { name: 'java', uid: 'app-uid', generation: 1 },
  spec: {
    name: 'java',
    image: 'java:1',
    port: 3000,
    ingressname: 'sessions',
    minInstances: 2,
    options: { dataBridgeEnabled: 'true', dataBridgePort: String(BRIDGE_PORT) },
  },
} as unknown as AppDefinition;

function session(name = 's-1'): Session {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, generation: 1, resourceVersion: '7', finalizers: [] },
    spec: { user: 'ada@example.org', appDefinition: 'java', sessionSecret: 's'.repeat(32) },
  } as unknown as Session;
}

/** A ready warm instance `id` of the app definition. */
function readyInstance(id: number): k8s.V1Deployment {
  const d = poolInstanceDeployment(appDefinition, id, 'ns', config, `java-pool-${id}-work`);
  d.metadata!.uid = `deployment-uid-${id}`;
  d.metadata!.resourceVersion = String(10 + id);
  d.metadata!.generation = 1;
  d.status = { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1 };
  return d;
}

/** The free reservation of a ready warm instance. */
function freeReservation(d: k8s.V1Deployment): k8s.V1Lease {
  const lease = instanceReservation(appDefinition, Number(d.metadata!.labels![LABELS.instanceId]), 'ns', d.metadata!);
  lease.metadata!.uid = `lease-uid-${d.metadata!.name}`;
  lease.metadata!.resourceVersion = d.metadata!.resourceVersion;
  return lease;
}

/** Lets every pending callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('a warm launch: the claim, then the values', () => {
  it('a claim lost to another session (409) goes on to the next candidate, each on the Lease read', async () => {
    const instances = [readyInstance(1), readyInstance(2)];
    const reservations = instances.map(freeReservation);
    const claimed: string[] = [];
    const pool = new PoolInstances({
      namespace: 'ns',
      config,
      deployments: { get: (name: string) => instances.find((d) => d.metadata?.name === name) },
      reservations: { byIndex: () => reservations, observe: () => undefined },
      leases: {
        replaceNamespacedLease: async ({ name, body }: { name: string; body: k8s.V1Lease }) => {
          claimed.push(name);
          // Conditional on the Lease read: a Lease may be created by an update, so its uid goes too.
          assert.equal(body.metadata?.uid, `lease-uid-${name}`);
          assert.equal(
            body.metadata?.resourceVersion,
            reservations.find((l) => l.metadata?.name === name)?.metadata?.resourceVersion,
          );
          await settle();
          // The first one aimed at was another session's a moment before: 409.
          if (claimed.length === 1) throw Object.assign(new Error('conflict'), { code: 409 });
          return body;
        },
      },
    } as unknown as PoolDeps);
    const won = await pool.reserve(appDefinition, 2, session(), undefined);
    assert.ok(won);
    assert.equal(claimed.length, 2);
    assert.notEqual(claimed[0], claimed[1]);
    assert.equal(won.name, claimed[1]);
    // The claim is written into the instance's reservation: the session's name and uid.
    assert.deepEqual(won.reservedBy, { name: 's-1', uid: 'uid-s-1' });
  });

  it('chooseStrategy writes the claim and nothing else: no route, no request to the bridge', async () => {
    const injections: unknown[] = [];
    const routeWrites: unknown[] = [];
    const s = session();
    const step: GuardedStep = {
      deps: {
        config,
        namespace: 'ns',
        routes: { set: async (...args: unknown[]) => void routeWrites.push(args) },
        injector: new Proxy({}, { get: (_t, name) => () => void injections.push(name) }),
        pool: {
          findReservation: () => undefined,
          reservedFor: () => [],
          reserve: async () => ({ id: 2, name: 'java-pool-2', ready: true, deployment: {} }) as PoolInstance,
        },
      } as unknown as SessionStepDeps,
      session: s,
      pass: new Pass(s),
      appDefinition,
    };
    await chooseStrategy(step);
    assert.equal(step.pass.status.startStrategy, 'eager');
    assert.equal(step.pass.status.instanceId, '2');
    assert.deepEqual(routeWrites, [], 'the route waits for the claim');
    assert.deepEqual(injections, [], 'the bridge waits for the claim');
  });

  describe("the values, posted to the ready pod's bridge at once", () => {
    let server: Server;
    let port: number;
    const asked = { health: 0, posts: 0 };
    /** What the bridge does with the next posts, in turn; then it takes them. */
    let nextPosts: ('drop' | 'other')[] = [];
    before(async () => {
      server = createServer((req, res) => {
        if (req.url === '/health') {
          asked.health++;
          res.writeHead(200).end('{"status":"UP"}');
          return;
        }
        asked.posts++;
        const next = nextPosts.shift();
        // Not answered: the connection goes, as a bridge not listening yet answers nothing.
        if (next === 'drop') return void req.socket.destroy();
        req.resume().on('end', () => {
          if (next === 'other') res.writeHead(409).end('{"reservation":"other"}');
          else res.writeHead(200).end('{}');
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });
    beforeEach(() => {
      asked.health = 0;
      asked.posts = 0;
      nextPosts = [];
    });

    const pod = {
      metadata: { name: 'pod', namespace: 'ns', labels: { [LABELS.poolInstance]: 'java-pool-1' } },
      status: { podIP: '127.0.0.1', phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as k8s.V1Pod;
    /** Sessions whose injection ended: the injector wakes each once. */
    let ended: (name: string) => void = () => undefined;
    const injector = (intervalMs = 60_000) =>
      new DataInjector(
        {} as never,
        parseOperatorConfig({ namespace: 'ns', bridgeHealthAttempts: 3, bridgeHealthIntervalMs: intervalMs }),
        (name) => ended(name),
        createLogger('silent'),
        { pods: { byIndex: () => [pod] }, secrets: { read: async () => ({ token: 't' }) } },
      );
    const target = () => ({
      podSelector: `${LABELS.poolInstance}=java-pool-1`,
      port,
      tokenSecret: 'java-pool-1-bridge',
    });

    /** The injection of `s`: its state once it ended, or once its first try is over (`firstTry`). */
    async function injection(i: DataInjector, s: Session, until: 'firstTry' | 'end') {
      const end = new Promise<void>((resolve) => (ended = (name) => name === s.metadata.name && resolve()));
      i.ensure(s, target());
      await (until === 'end' ? end : i.attempted(s.metadata.uid!));
      return i.state(s.metadata.uid!);
    }

    it('a bridge that takes them: one request, no health check', async () => {
      const i = injector();
      const state = await injection(i, session(), 'firstTry');
      assert.equal(state?.phase, 'Injected');
      assert.deepEqual(
        { attempts: state?.attempts, postAttempts: state?.postAttempts },
        { attempts: 1, postAttempts: 1 },
      );
      assert.deepEqual(asked, { health: 0, posts: 1 });
      i.stop();
    });

    it('a post not answered is a failed first health check: the bridge is asked its health, then posted to again', async () => {
      nextPosts = ['drop'];
      const i = injector(60_000);
      const first = await injection(i, session(), 'firstTry');
      assert.equal(first?.phase, 'WaitingForBridge', 'waits to try again');
      assert.equal(first?.attempts, 1);
      assert.equal(first?.postAttempts, 0);
      assert.deepEqual(asked, { health: 0, posts: 1 });
      i.stop();

      nextPosts = ['drop'];
      asked.posts = 0;
      const again = injector(1);
      const state = await injection(again, session('s-2'), 'end');
      assert.equal(state?.phase, 'Injected');
      assert.deepEqual(
        { attempts: state?.attempts, postAttempts: state?.postAttempts },
        { attempts: 2, postAttempts: 1 },
      );
      assert.deepEqual(asked, { health: 1, posts: 2 });
      again.stop();
    });

    it("a bridge that holds another reservation's values refuses for good at the first post: failed, no health check", async () => {
      nextPosts = ['other'];
      const i = injector();
      const state = await injection(i, session(), 'firstTry');
      assert.equal(state?.phase, 'Failed');
      assert.match(state?.lastError ?? '', /another reservation/);
      assert.deepEqual(asked, { health: 0, posts: 1 });
      i.stop();
    });
  });
});

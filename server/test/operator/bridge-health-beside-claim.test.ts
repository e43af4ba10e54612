// A warm launch's bridge health check goes beside its claim, not after the claim's answer: the
// reservation tells of each candidate once its write is on its way, the injection of the session that
// wins takes that answer as its first check, and nothing else of the launch (no route, no value)
// goes before the claim is won.
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

describe("the bridge's health, asked beside the claim", () => {
  it('the reservation tells of each candidate once its write is sent, a lost one (409) and the next; a callback that throws changes nothing', async () => {
    const instances = [readyInstance(1), readyInstance(2)];
    const reservations = instances.map(freeReservation);
    const log: string[] = [];
    const pool = new PoolInstances({
      namespace: 'ns',
      config,
      deployments: { get: (name: string) => instances.find((d) => d.metadata?.name === name) },
      reservations: { byIndex: () => reservations, observe: () => undefined },
      leases: {
        replaceNamespacedLease: async ({ name, body }: { name: string; body: k8s.V1Lease }) => {
          log.push(`claim ${name}`);
          // Conditional on the Lease read: a Lease may be created by an update, so its uid goes too.
          assert.equal(body.metadata?.uid, `lease-uid-${name}`);
          assert.equal(
            body.metadata?.resourceVersion,
            reservations.find((l) => l.metadata?.name === name)?.metadata?.resourceVersion,
          );
          await settle();
          // The first one aimed at was another session's a moment before: 409.
          if (log.filter((l) => l.startsWith('claim')).length === 1)
            throw Object.assign(new Error('conflict'), { code: 409 });
          return body;
        },
      },
    } as unknown as PoolDeps);
    const won = await pool.reserve(appDefinition, 2, session(), undefined, (candidate) => {
      log.push(`aim ${candidate.name} ${candidate.ready ? 'ready' : 'starting'}`);
      // What the caller does beside the claim may fail; the claim goes on.
      throw new Error('beside the claim');
    });
    await settle();
    assert.ok(won);
    const claimed = log.filter((l) => l.startsWith('claim ')).map((l) => l.slice('claim '.length));
    assert.equal(claimed.length, 2);
    for (const name of claimed) {
      assert.ok(
        log.indexOf(`aim ${name} ready`) > log.indexOf(`claim ${name}`),
        `${name}: told after its claim was sent`,
      );
    }
    assert.equal(log.length, 4, log.join(', '));
    assert.equal(won.name, claimed[1]);
    // The claim is written into the instance's reservation: the session's name and uid.
    assert.deepEqual(won.reservedBy, { name: 's-1', uid: 'uid-s-1' });
  });

  it('chooseStrategy asks the health of the candidate being claimed, when ready, and writes nothing else beside it', async () => {
    const probed: unknown[] = [];
    const routeWrites: unknown[] = [];
    const s = session();
    const step: GuardedStep = {
      deps: {
        config,
        namespace: 'ns',
        routes: { set: async (...args: unknown[]) => void routeWrites.push(args) },
        injector: { probe: (target: unknown) => void probed.push(target) },
        pool: {
          findReservation: () => undefined,
          reservedFor: () => [],
          reserve: async (
            _app: unknown,
            _min: unknown,
            _session: unknown,
            _workspace: unknown,
            aiming?: (candidate: PoolInstance) => void,
          ) => {
            aiming?.({ id: 1, name: 'java-pool-1', ready: false } as PoolInstance); // starting: not asked
            aiming?.({ id: 2, name: 'java-pool-2', ready: true } as PoolInstance);
            return { id: 2, name: 'java-pool-2', ready: true, deployment: {} } as PoolInstance;
          },
        },
      } as unknown as SessionStepDeps,
      session: s,
      pass: new Pass(s),
      appDefinition,
    };
    await chooseStrategy(step);
    assert.equal(step.pass.status.startStrategy, 'eager');
    assert.deepEqual(probed, [{ podSelector: `${LABELS.poolInstance}=java-pool-2`, port: BRIDGE_PORT }]);
    assert.deepEqual(routeWrites, [], 'the route waits for the claim');
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
    after(() => {
      server.closeAllConnections();
      server.close();
    });

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
        { pods: { byIndex: () => [pod] }, secrets: { read: async () => ({ token: 't' }) } },
      );
    const target = () => ({
      podSelector: `${LABELS.poolInstance}=java-pool-1`,
      port,
      tokenSecret: 'java-pool-1-bridge',
    });

    /** A probe, then the injection of `s`: its state once its first try is over. */
    async function probedInjection(i: DataInjector, s: Session) {
      i.probe(target());
      i.ensure(s, target());
      await i.attempted(s.metadata.uid!);
      return i.state(s.metadata.uid!);
    }

    it('takes the answer asked beside the claim as its first health check, once', async () => {
      healthy = true;
      healthChecks = 0;
      const i = injector();
      const state = await probedInjection(i, session());
      assert.equal(state?.phase, 'Injected');
      assert.equal(state?.attempts, 1);
      assert.equal(healthChecks, 1, 'the bridge was asked once');
      // Another session's injection into the same bridge asks again: an answer is taken once.
      i.ensure(session('s-2'), target());
      await i.attempted('uid-s-2');
      assert.equal(healthChecks, 2);
      i.stop();
    });

    it('an unhealthy answer is a failed first check: the injection waits to try again', async () => {
      healthy = false;
      healthChecks = 0;
      const i = injector();
      const state = await probedInjection(i, session());
      assert.equal(state?.phase, 'WaitingForBridge');
      assert.equal(state?.attempts, 1);
      assert.equal(healthChecks, 1);
      i.stop();
    });
  });
});

// Every API write a launch costs, Events included, pinned: the service and the operator run in-process
// on one proxy in front of the real kube-apiserver (test/support/kube-write-proxy.ts), which records
// each mutating request but the leader's Lease renewals. A warm launch (an ephemeral session on a
// free warm instance, as a course link makes it) writes the session, the claim (the instance's
// reservation, a Lease of its own: the Deployment and its pod are not touched), the route, the status
// that carries the URL (with the values' arrival) and the service's answered mark, which carries the
// decision's annotations the spec asks for: 5. A lazy launch
// writes the session, its Secret, pod and Service, the route, two status writes (starting,
// then the URL; one when its pod was Ready by the end of the first pass) and the mark: 8 at most. A
// launch that goes well records no Event.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { ANNOTATIONS, LABELS } from '../../server/src/model/api-group.js';
import { findCondition } from '../../server/src/model/conditions.js';
import type { AdminAppDefinitionItem } from '../../server/src/model/requests.js';
import { SessionCondition } from '../../server/src/model/session.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { poolInstanceName } from '../../server/src/operator/manifests.js';
import { Delay } from '../../server/src/operator/runtime/outcome.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import {
  isLeaderLeaseWrite,
  startKubeWriteProxy,
  type KubeWriteProxy,
  type WriteRecord,
} from '../support/kube-write-proxy.js';
import { consistently, createTestNamespace, eventually } from '../support/kube.js';
import {
  bridgeToken,
  cleanUpSuite,
  createAppDefinition,
  ideCloudResources,
  running,
  startBridge,
  testOperator,
  type Bridge,
} from '../support/operator.js';
import {
  ADMIN_API_TOKEN,
  call,
  SERVICE_AUTH_TOKEN,
  startTestService,
  type TestService,
} from '../support/service-harness.js';

const WARM = 'warm-app';
const LAZY = 'lazy-app';
const INSTANCE = poolInstanceName(WARM, 1);
// A port no other suite's bridge stand-ins use (kwok pod IPs are shared loopback addresses).
const BRIDGE_PORT = 16393;

const MUTATING = ['POST', 'PUT', 'PATCH', 'DELETE'];
/**
 * Every mutating request but the leader's Lease (time-driven, whatever the launches do): Events and
 * a warm instance's reservation count. Reads of Secrets are recorded too, apart: a warm launch reads none.
 */
const recorded = (method: string, requestPath: string, query: string) =>
  (MUTATING.includes(method) && !isLeaderLeaseWrite(method, requestPath, query)) ||
  (method === 'GET' && /\/secrets\//.test(requestPath));

describe('the API writes of a launch, Events included', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let proxy: KubeWriteProxy;
  let operator: RunningOperator | undefined;
  let service: TestService | undefined;
  let bridge: Bridge | undefined;
  /** Each launch's writes: from its POST to the end of the suite's barrier (see the last test). */
  const launches = new Map<string, { from: number; to?: number; expected: string[] }>();

  /** A write as `METHOD resource[/subresource]`, names taken out. */
  function signature(w: WriteRecord): string {
    const parts = w.path.split('/');
    const at = parts.indexOf('namespaces');
    const resource = parts[at + 2] ?? '?';
    const sub = parts[at + 4];
    return `${w.method} ${resource}${sub ? `/${sub}` : ''}`;
  }

  /** The launch's requests that `picks`, as signatures. */
  function requestsOf(name: string, picks: (w: WriteRecord) => boolean): string[] {
    const launch = launches.get(name)!;
    return proxy.writes.slice(launch.from, launch.to).filter(picks).map(signature).sort();
  }

  /** The launch's writes, whatever object they changed. */
  const writesOf = (name: string) => requestsOf(name, (w) => MUTATING.includes(w.method));

  /**
   * Launches one at a time (the window of the launch before ends where this one's begins) and keeps
   * the writes it must make: `expected` sees the launch's writes so far (which verb made the route).
   */
  async function launch(
    user: string,
    appDefinition: string,
    expected: (writes: readonly WriteRecord[]) => string[],
  ): Promise<string> {
    for (const l of launches.values()) l.to ??= proxy.writes.length;
    const from = proxy.writes.length;
    const answer = await call(service!.url, 'POST', '/service', {
      body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition, ephemeral: true, env: { fromMap: { K: user } } },
    });
    assert.equal(answer.status, 200, answer.text);
    const name = new URL(answer.text).pathname.split('/')[1]!;
    launches.set(name, {
      from,
      expected: expected(proxy.writes.slice(from).filter((w) => MUTATING.includes(w.method))).sort(),
    });
    return name;
  }

  /** The launch's writes are the ones it must make, once its late ones had time to come. */
  const countedAsExpected = (name: string) =>
    eventually(() => assert.deepEqual(writesOf(name), launches.get(name)!.expected), 10_000, 100);

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'launch-writes');
    r = ideCloudResources(cluster.kc, namespace);
    await createAppDefinition(r, WARM, {
      minInstances: 1,
      maxInstances: null,
      options: { dataBridgeEnabled: 'true', dataBridgePort: String(BRIDGE_PORT) },
    });
    // No warm pool: the lazy path.
    await createAppDefinition(r, LAZY, { minInstances: 0, maxInstances: null, options: {} });
    proxy = await startKubeWriteProxy(cluster.kc, recorded);
    const proxied = new k8s.KubeConfig();
    proxied.loadFromFile(proxy.kubeconfig);
    operator = await testOperator(proxied, namespace, { eagerStart: true, sessionsPerUser: 1 });
    service = await startTestService(proxied, namespace, { sessionsPerUser: 1 });
  });
  after(async () => {
    await service?.close();
    await cleanUpSuite(cluster.kc, namespace, [operator]);
    await bridge?.close();
    await proxy?.close();
  });

  it('a warm launch: session, claim, route, status with the URL, answered mark: 5 writes, no Event', async () => {
    const ip = await eventually(
      async () => {
        assert.deepEqual((await r.appDefinitions.get(WARM)).status?.pool, { desired: 1, ready: 1 });
        const pods = await cluster.kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({
          namespace,
          labelSelector: `${LABELS.poolInstance}=${INSTANCE}`,
        });
        const ready = pods.items.find((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        assert.ok(ready?.status?.podIP, 'the instance pod is ready');
        return ready.status.podIP;
      },
      60_000,
      200,
    );
    bridge = await startBridge(ip, BRIDGE_PORT, { token: await bridgeToken(cluster.kc, namespace, INSTANCE) });
    const name = await launch('wendy@example.com', WARM, (writes) => [
      'POST sessions',
      // The claim: the instance's reservation (a Lease), not its Deployment.
      'PUT leases',
      // The first route creates the Ingress; a later one replaces it.
      `${writes.find((w) => w.path.includes('/ingresses'))?.method ?? 'PUT'} ingresses`,
      'PATCH sessions/status',
      'PATCH sessions',
    ]);
    const session = await r.sessions.get(name);
    assert.ok(running(session));
    assert.equal(session.status?.startStrategy, 'eager');
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.startStrategy], 'eager');
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.instanceId], session.status?.instanceId);
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.unanswered], undefined);
    // The answered mark cleared the API server's record of field ownership (kube/field-record.ts).
    assert.equal(session.metadata.managedFields, undefined);
    // The values reached the bridge before the URL went out: their arrival is in the URL's status write.
    assert.equal(findCondition(session.status?.conditions, SessionCondition.envInjected)?.status, 'True');
    assert.deepEqual(
      (bridge.received as { environment: Record<string, string>; user: string }[]).map((b) => [
        b.environment.K,
        b.user,
      ]),
      [['wendy@example.com', 'wendy@example.com']],
    );
    await countedAsExpected(name);
    // The bridge's token came from the pool's own write of its Secret: the launch read none.
    assert.deepEqual(
      requestsOf(name, (w) => w.method === 'GET'),
      [],
    );
    // The claim wakes the pool's pass a burst's delay later; the reservation changed none of its
    // counts, so it writes nothing.
    await consistently(
      () => assert.deepEqual(writesOf(name), launches.get(name)!.expected),
      Delay.poolPassBatch + 1500,
      200,
    );
    // The reservation is the session's to tell: the admin view and the metrics count it.
    const admin = await call(service!.url, 'GET', '/service/admin/appdefinition', {
      headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
    });
    assert.deepEqual(
      (admin.json as AdminAppDefinitionItem[]).find((d) => d.appDefinitionName === WARM)?.pool,
      { desired: 1, ready: 1, reserved: 1 },
      admin.text,
    );
    const metrics = await call(service!.url, 'GET', '/q/metrics');
    assert.match(metrics.text, /ide_cloud_pool_instances\{app_definition="warm-app",state="reserved"\} 1\n/);
  });

  it('a lazy launch: session, Secret, pod, Service, route, one or two status writes, answered mark: at most 8 writes, no Event', async () => {
    const name = await launch('larry@example.com', LAZY, (writes) => [
      'POST sessions',
      'POST secrets',
      'POST pods',
      'PATCH services',
      'PUT ingresses',
      // Starting, then the URL; both in one write when the pod was Ready by the end of the first
      // pass (the session's readiness is its pod's). Never more than two, never none.
      ...Array<string>(writes.filter((w) => /\/sessions\/[^/]+\/status$/.test(w.path)).length === 1 ? 1 : 2).fill(
        'PATCH sessions/status',
      ),
      'PATCH sessions',
    ]);
    const session = await r.sessions.get(name);
    assert.equal(session.status?.startStrategy, 'lazy-fallback');
    assert.equal(session.metadata.annotations?.[ANNOTATIONS.startStrategy], 'lazy-fallback');
    assert.equal(session.metadata.managedFields, undefined);
    await countedAsExpected(name);
  });

  it('no launch wrote more later: each count holds once a stop of the warm session has gone through', async () => {
    const warm = [...launches.keys()][0]!;
    const to = proxy.writes.length;
    for (const l of launches.values()) l.to ??= to;
    // The stop's writes come after a round of the operator's queue: a late write of either launch
    // (an Event, a second status) would have been sent by the time it is over.
    await r.sessions.delete(warm);
    await eventually(async () => assert.equal(await r.sessions.find(warm), undefined), 60_000, 200);
    for (const [name, l] of launches) {
      const late = proxy.writes
        .slice(to)
        .filter((w) => MUTATING.includes(w.method) && w.path.includes(name) && !w.path.includes(warm));
      assert.deepEqual(late.map(signature), [], `${name}: no write after its count`);
      assert.deepEqual(writesOf(name), l.expected, `${name}'s writes`);
    }
    const events = proxy.writes.filter((w) => /\/events(\/|$)/.test(w.path) && w.index <= to);
    assert.deepEqual(
      events.map((w) => w.path),
      [],
      'no Event written by the launches',
    );
  });
});

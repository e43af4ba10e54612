// A configured client (server/src/kube/client.ts) on the real kube-apiserver, through a TCP relay
// that counts the connections open at once: a burst of calls beyond the limit all succeed on at most
// `requestsInFlight` connections of their own, and watches, each holding a connection, take no call's
// slot.
import assert from 'node:assert/strict';
import net from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { configureClient } from '../../server/src/kube/client.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';

/** Relays TCP to `target`, counting the connections open at once (TLS passes through untouched). */
async function countingRelay(target: URL): Promise<{ url: string; open(): number; most(): number; close(): void }> {
  let open = 0;
  let most = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open++;
    most = Math.max(most, open);
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.once('close', () => {
      open--;
      upstream.destroy();
    });
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    open: () => open,
    most: () => most,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe('kube client: calls in flight on the real API server', function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  let namespace: string;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'kube-client');
  });
  after(async () => {
    await deleteTestNamespace(cluster.kc, namespace);
  });

  it('sends 40 creates at once on at most 4 connections of their own, beside 6 watches', async () => {
    const relay = await countingRelay(new URL(cluster.kc.getCurrentCluster()!.server));
    const controllers: AbortController[] = [];
    try {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(cluster.kubeconfig);
      kc.clusters = kc.clusters.map((c) => ({ ...c, server: relay.url }));
      configureClient(kc, 'ide-cloud-test', { requestsInFlight: 4 });
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        controllers.push(
          await new k8s.Watch(kc).watch(
            `/api/v1/namespaces/${namespace}/configmaps`,
            {},
            (_phase: string, object: k8s.V1ConfigMap) => seen.add(object.metadata!.name!),
            () => undefined,
          ),
        );
      }
      await eventually(() => assert.equal(relay.open(), 6, 'one connection per watch'));
      const core = kc.makeApiClient(k8s.CoreV1Api);
      const names = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
      const created = await Promise.all(
        names.map((name) => core.createNamespacedConfigMap({ namespace, body: { metadata: { name } } })),
      );
      assert.deepEqual(
        created.map((c) => c.metadata?.name),
        names,
      );
      assert.ok(relay.most() <= 6 + 4, `at most 6 watches and 4 calls open at once, saw ${relay.most()}`);
      assert.ok(relay.most() > 6, 'the calls had connections of their own');
      // The watches stayed open through the burst and saw every create.
      await eventually(() => assert.equal(seen.size, 40));
    } finally {
      for (const c of controllers) c.abort();
      relay.close();
    }
  });
});

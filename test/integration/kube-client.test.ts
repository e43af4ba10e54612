// A configured client (server/src/kube/client.ts) on the real kube-apiserver, through a TCP relay
// that counts the connections open at once: a burst of calls beyond the limit all succeed on at most
// `requestsInFlight` connections of their own, and watches, each holding a connection, take no call's
// slot.
import assert from 'node:assert/strict';
import net from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { configureClient, isApiUnavailable, type ClientOptions } from '../../server/src/kube/client.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';

interface Relay {
  url: string;
  /** Connections open now, and the most open at once. */
  open(): number;
  most(): number;
  /** Stops passing on what clients send (their calls hang, as on a paused API server), until release(). */
  hold(): void;
  release(): void;
  close(): void;
}

/** Relays TCP to `target`, counting the connections open at once (TLS passes through untouched). */
async function countingRelay(target: URL): Promise<Relay> {
  let open = 0;
  let most = 0;
  let holding = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    open++;
    most = Math.max(most, open);
    const upstream = net.connect(Number(target.port), target.hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) s.on('error', () => undefined);
    upstream.pipe(client);
    if (!holding) client.pipe(upstream);
    client.once('close', () => {
      open--;
      pairs.delete(pair);
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
    hold: () => {
      holding = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    release: () => {
      holding = false;
      for (const [client, upstream] of pairs) client.pipe(upstream);
    },
    close: () => {
      for (const pair of pairs) for (const s of pair) s.destroy();
      server.close();
    },
  };
}

/** A KubeConfig of the test cluster whose calls go through `relay`, configured with `options`. */
function throughRelay(cluster: TestCluster, relay: Relay, options: ClientOptions): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  kc.clusters = kc.clusters.map((c) => ({ ...c, server: relay.url }));
  return configureClient(kc, 'ide-cloud-test', options);
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
      const kc = throughRelay(cluster, relay, { requestsInFlight: 4 });
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        controllers.push(
          await new k8s.Watch(kc).watch(
            `/api/v1/namespaces/${namespace}/configmaps`,
            {},
            (_phase: string, object: k8s.V1ConfigMap) => {
              if (object.metadata?.name?.startsWith('burst-')) seen.add(object.metadata.name);
            },
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

  it('fails the calls a hung API server holds and those waiting behind them at their deadline; the next call goes', async () => {
    const relay = await countingRelay(new URL(cluster.kc.getCurrentCluster()!.server));
    try {
      const core = throughRelay(cluster, relay, { requestsInFlight: 1, requestTimeoutMs: 1000 }).makeApiClient(
        k8s.CoreV1Api,
      );
      await core.listNamespacedConfigMap({ namespace });
      relay.hold();
      const held = await Promise.allSettled([
        core.listNamespacedConfigMap({ namespace }),
        core.listNamespacedConfigMap({ namespace }),
      ]);
      for (const result of held) {
        assert.equal(result.status, 'rejected');
        const error = (result as PromiseRejectedResult).reason as Error;
        assert.equal(error.name, 'AbortError');
        assert.equal(isApiUnavailable(error), 'timeout');
      }
      relay.release();
      // The slot is free again: the next call goes.
      const listed = await core.listNamespacedConfigMap({ namespace });
      assert.ok(Array.isArray(listed.items));
    } finally {
      relay.close();
    }
  });
});

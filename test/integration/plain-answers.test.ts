// The operator's clients for the writes with large answers (server/src/kube/plain-answers.ts) on the
// real kube-apiserver: the same requests as the generated clients, the answers as parsed JSON, the
// same errors.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../server/src/kube/client.js';
import { plainDeployments, plainIngresses } from '../../server/src/kube/plain-answers.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';

describe('plain answers: Ingress and Deployment writes through the generic object endpoints', function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  let namespace: string;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'plain-answers');
  });
  after(async () => {
    await deleteTestNamespace(cluster.kc, namespace);
  });

  it('creates, reads, replaces and deletes an Ingress; answers are JSON; 404 and 409 as ApiException', async () => {
    const net = plainIngresses(cluster.kc);
    const typed = cluster.kc.makeApiClient(k8s.NetworkingV1Api);
    const path = (p: string) => ({
      path: p,
      pathType: 'Prefix',
      backend: { service: { name: 'svc', port: { number: 80 } } },
    });
    const created = await net.createNamespacedIngress({
      namespace,
      body: { metadata: { name: 'shared' }, spec: { rules: [{ host: 'h.test', http: { paths: [path('/a/')] } }] } },
    });
    assert.equal(typeof created.metadata?.creationTimestamp, 'string', 'a timestamp as the API server wrote it');
    const widened = await net.replaceNamespacedIngress({
      name: 'shared',
      namespace,
      body: { ...created, spec: { rules: [{ host: 'h.test', http: { paths: [path('/a/'), path('/b/')] } }] } },
    });
    const read = await typed.readNamespacedIngress({ name: 'shared', namespace });
    assert.deepEqual(
      widened.spec?.rules?.[0]?.http?.paths.map((p) => p.path),
      read.spec?.rules?.[0]?.http?.paths.map((p) => p.path),
    );
    assert.equal(
      (await net.readNamespacedIngress({ name: 'shared', namespace })).metadata?.resourceVersion,
      read.metadata?.resourceVersion,
    );
    // A replace of what was read before the last write: the API server refuses it.
    await assert.rejects(net.replaceNamespacedIngress({ name: 'shared', namespace, body: created }), isConflict);
    const replaced = await net.replaceNamespacedIngress({
      name: 'shared',
      namespace,
      body: { ...widened, spec: { rules: [{ host: 'h.test', http: { paths: [path('/c/')] } }] } },
    });
    assert.deepEqual(
      replaced.spec?.rules?.[0]?.http?.paths.map((p) => p.path),
      ['/c/'],
    );
    await net.deleteNamespacedIngress({ name: 'shared', namespace });
    await assert.rejects(net.readNamespacedIngress({ name: 'shared', namespace }), isNotFound);
  });

  it('creates, replaces and deletes a Deployment', async () => {
    const apps = plainDeployments(cluster.kc);
    const labels = { app: 'plain' };
    const created = await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'plain', labels },
        spec: {
          replicas: 0,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
        },
      },
    });
    // As the operator claims an instance: once the deployment controller has written its status, from what was read.
    const typed = cluster.kc.makeApiClient(k8s.AppsV1Api);
    const observed = await eventually(async () => {
      const d = await typed.readNamespacedDeployment({ name: 'plain', namespace });
      assert.ok((d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1), 'not observed yet');
      return d;
    });
    const claimed = await apps.replaceNamespacedDeployment({
      name: 'plain',
      namespace,
      body: { ...observed, metadata: { ...observed.metadata, labels: { ...labels, claimed: 'yes' } } },
    });
    assert.equal(claimed.metadata?.labels?.claimed, 'yes');
    assert.equal(typeof claimed.metadata?.creationTimestamp, 'string');
    await assert.rejects(apps.replaceNamespacedDeployment({ name: 'plain', namespace, body: created }), isConflict);
    await apps.deleteNamespacedDeployment({ name: 'plain', namespace });
    await assert.rejects(apps.deleteNamespacedDeployment({ name: 'plain', namespace }), isNotFound);
  });
});

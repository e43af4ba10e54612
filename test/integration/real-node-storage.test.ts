// Volumes on the real node (scripts/cluster/storage.ts): a claim without a storage class (as the
// operator makes it with the chart's default operator.storage.storageClassName '') binds through the
// dynamic provisioner, local-path-provisioner behind the default StorageClass `local-path`, when a pod
// on the real node uses it. What the pod writes as the IDE's user (uid 10001) is on the host under the
// node's volumes directory, a second pod on the claim reads it, and deleting the claim (reclaim Delete)
// removes the directory. On the kwok node of the same control plane (the scheduler's volume plugins are
// on with the real node), a pod whose claim is unbound stays unschedulable, and one whose claim a
// hand-made PersistentVolume is pre-bound to (test/support provideVolume) still runs. On the real node
// the suites share (test/support/real-node.ts), given back without its namespace and volumes; that
// `down` ends the provisioner and removes the volumes left is real-node.test.ts's.
// Root only (CI runs as root). Cold: the real node's builds first (15 minutes or more); warm: about 1 min.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { KWOK_NODE } from '../../scripts/cluster/control-plane.js';
import { REAL_NODE, REAL_NODE_PLACEMENT, type RealNodeState } from '../../scripts/cluster/real-node.js';
import { STORAGE_CLASS, STORAGE_NAMESPACE, STORAGE_PROVISIONER, volumesDir } from '../../scripts/cluster/storage.js';
import { eventually } from '../support/kube.js';
import { provideVolume } from '../support/operator.js';
import {
  borrowSharedRealNode,
  classlessClaim as claim,
  REAL_NODE_HOOK_TIMEOUT_MS,
  seconds,
  shellPod,
} from '../support/real-node.js';

const NAMESPACE = 'storage';
const FILE = 'hello.txt';
const CONTENT = 'written on the real node';

describe('volumes on the real node', function () {
  this.timeout(60 * 60_000);
  let giveBack: (() => Promise<void>) | undefined;
  let node: RealNodeState;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let storage: k8s.StorageV1Api;
  const timings: string[] = [];

  before(async function () {
    this.timeout(REAL_NODE_HOOK_TIMEOUT_MS);
    const since = Date.now();
    const borrowed = await borrowSharedRealNode();
    giveBack = borrowed.giveBack;
    ({ node, kc, core } = borrowed.cluster);
    timings.push(`control plane with the real node (shared) ${seconds(since)}`);
    storage = kc.makeApiClient(k8s.StorageV1Api);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  });

  after(async () => {
    const since = Date.now();
    await giveBack?.();
    timings.push(`given back ${seconds(since)}`);
    if (timings.length) console.log(`      real node storage timings: ${timings.join(', ')}`);
  });

  async function podPhase(name: string, phases: string[], timeoutMs = 120_000): Promise<k8s.V1Pod> {
    return eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name, namespace: NAMESPACE });
        assert.ok(phases.includes(pod.status?.phase ?? ''), `${name}: ${pod.status?.phase}`);
        return pod;
      },
      timeoutMs,
      250,
    );
  }

  async function deletePod(name: string): Promise<void> {
    await core.deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 });
    await eventually(
      async () =>
        assert.equal(
          await core.readNamespacedPod({ name, namespace: NAMESPACE }).then(
            () => 'still there',
            () => 'gone',
          ),
          'gone',
        ),
      60_000,
      250,
    );
  }

  it(`the cluster's default StorageClass is ${STORAGE_CLASS}: ${STORAGE_PROVISIONER}, WaitForFirstConsumer, reclaim Delete`, async () => {
    const classes = (await storage.listStorageClass()).items;
    const defaults = classes.filter(
      (c) => c.metadata?.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true',
    );
    assert.deepEqual(
      defaults.map((c) => [c.metadata?.name, c.provisioner, c.volumeBindingMode, c.reclaimPolicy]),
      [[STORAGE_CLASS, STORAGE_PROVISIONER, 'WaitForFirstConsumer', 'Delete']],
    );
  });

  it('a claim without a class binds through the provisioner for a pod on the real node, keeps its files across pods, and goes with its directory', async () => {
    await core.createNamespacedPersistentVolumeClaim({ namespace: NAMESPACE, body: claim('data') });
    // The default class is given at creation; nothing binds before a pod uses the claim.
    const created = await core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: NAMESPACE });
    assert.equal(created.spec?.storageClassName, STORAGE_CLASS);
    assert.equal(created.status?.phase, 'Pending');

    let since = Date.now();
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: shellPod('writer', 'data', `echo '${CONTENT}' > /data/${FILE}`, REAL_NODE_PLACEMENT),
    });
    const writer = await podPhase('writer', ['Succeeded', 'Failed']);
    assert.equal(writer.status?.phase, 'Succeeded', JSON.stringify(writer.status?.containerStatuses));
    assert.equal(writer.spec?.nodeName, REAL_NODE);
    timings.push(`claim bound and written ${seconds(since)}`);

    const bound = await core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: NAMESPACE });
    assert.equal(bound.status?.phase, 'Bound');
    assert.equal(bound.metadata?.annotations?.['volume.kubernetes.io/selected-node'], REAL_NODE);
    const pv = await core.readPersistentVolume({ name: bound.spec!.volumeName! });
    assert.equal(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], STORAGE_PROVISIONER);
    assert.equal(pv.spec?.storageClassName, STORAGE_CLASS);
    assert.equal(pv.spec?.persistentVolumeReclaimPolicy, 'Delete');
    assert.deepEqual(
      pv.spec?.nodeAffinity?.required?.nodeSelectorTerms.flatMap((t) =>
        (t.matchExpressions ?? []).map((e) => [e.key, e.operator, e.values]),
      ),
      [['kubernetes.io/hostname', 'In', [REAL_NODE]]],
    );
    // On the host: <the node's directory>/volumes/<pv>_<namespace>_<claim>, writable by any user.
    const dir = pv.spec!.hostPath!.path;
    assert.equal(dir, path.join(volumesDir(node.root), `${pv.metadata!.name}_${NAMESPACE}_data`));
    assert.equal(statSync(dir).mode & 0o7777, 0o777);
    assert.equal(readFileSync(path.join(dir, FILE), 'utf8'), `${CONTENT}\n`);
    assert.equal(statSync(path.join(dir, FILE)).uid, 10001);

    // Another pod on the same claim, after the first is gone, reads the file.
    await deletePod('writer');
    since = Date.now();
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: shellPod('reader', 'data', `read -r line < /data/${FILE} && echo "read: $line"`, REAL_NODE_PLACEMENT),
    });
    const reader = await podPhase('reader', ['Succeeded', 'Failed']);
    assert.equal(reader.status?.phase, 'Succeeded', JSON.stringify(reader.status?.containerStatuses));
    assert.equal(await core.readNamespacedPodLog({ name: 'reader', namespace: NAMESPACE }), `read: ${CONTENT}\n`);
    timings.push(`second pod read it ${seconds(since)}`);
    await deletePod('reader');

    // Reclaim Delete: the claim's deletion deletes the volume and its directory (a teardown helper pod).
    since = Date.now();
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: NAMESPACE });
    await eventually(
      async () => {
        assert.equal(existsSync(dir), false, `${dir} is still there`);
        await core.readPersistentVolume({ name: pv.metadata!.name! }).then(
          () => assert.fail(`${pv.metadata!.name} is still there`),
          () => undefined,
        );
      },
      120_000,
      250,
    );
    timings.push(`claim deleted, directory gone ${seconds(since)}`);
    // The helper pods went with their work.
    await eventually(
      async () => assert.deepEqual((await core.listNamespacedPod({ namespace: STORAGE_NAMESPACE })).items, []),
      60_000,
      250,
    );
  });

  it('on the kwok node, a pod with an unbound claim stays unschedulable; one whose claim a PersistentVolume is pre-bound to runs', async () => {
    const onKwok = { nodeSelector: { 'kubernetes.io/hostname': KWOK_NODE } };
    await core.createNamespacedPersistentVolumeClaim({ namespace: NAMESPACE, body: claim('kwok-unbound') });
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: shellPod('kwok-unbound', 'kwok-unbound', 'true', onKwok),
    });
    const unschedulable = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'kwok-unbound', namespace: NAMESPACE });
        const condition = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
        assert.equal(condition?.reason, 'Unschedulable', JSON.stringify(pod.status));
        return condition!;
      },
      60_000,
      250,
    );
    console.log(`      kwok pod with an unbound claim: ${unschedulable.message}`);
    const unbound = await core.readNamespacedPersistentVolumeClaim({ name: 'kwok-unbound', namespace: NAMESPACE });
    assert.equal(unbound.status?.phase, 'Pending');
    assert.equal(unbound.metadata?.annotations?.['volume.kubernetes.io/selected-node'], undefined);

    // The other suites' way (test/support provideVolume): a PersistentVolume of no class pre-bound to the
    // claim, which the default class was still given at creation.
    await provideVolume(kc, NAMESPACE, 'kwok-prebound');
    await core.createNamespacedPersistentVolumeClaim({ namespace: NAMESPACE, body: claim('kwok-prebound') });
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: shellPod('kwok-prebound', 'kwok-prebound', 'true', onKwok),
    });
    const scheduled = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'kwok-prebound', namespace: NAMESPACE });
        assert.equal(pod.spec?.nodeName, KWOK_NODE, JSON.stringify(pod.status));
        return pod;
      },
      60_000,
      250,
    );
    assert.equal(scheduled.spec?.nodeName, KWOK_NODE);
    const prebound = await core.readNamespacedPersistentVolumeClaim({ name: 'kwok-prebound', namespace: NAMESPACE });
    assert.equal(prebound.status?.phase, 'Bound');
    assert.equal(prebound.spec?.volumeName, `${NAMESPACE}-kwok-prebound`);
  });
});

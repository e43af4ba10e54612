// A warm launch writes its route beside the claim of the instance it chose, not after it: the two
// writes go to the API server together. When the claim loses its race (another writer changed the
// instance between the cache's read and the claim), the session takes the next free instance and its
// path is pointed there before its URL is told: the Ingress holds the path once, leading to the
// instance the session holds.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { LABELS, SESSION_FINALIZER } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import { routePath } from '../../server/src/operator/manifests.js';
import { startKubeWriteProxy, type KubeWriteProxy } from '../support/kube-write-proxy.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, freeReadyInstances, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';
import { startWatchHoldProxy, type WatchHoldProxy } from '../support/watch-hold-proxy.js';

const APP = 'python-latest';
const INGRESS = 'route-beside-claim';

describe('operator: the route beside the claim', function () {
  this.timeout(180_000);
  let writes: KubeWriteProxy;
  let proxy: WatchHoldProxy;
  const stack = useStack('op-route-claim', {
    apps: [appDefinitionSpec(APP, { minInstances: 2, maxInstances: 10, ingressname: INGRESS })],
    // The operator's client goes through a proxy that can hold one of its requests.
    setUp: async ({ kc, cleanUp, startOperator }) => {
      writes = await startKubeWriteProxy(kc);
      cleanUp(() => writes.close(), 'last');
      proxy = await startWatchHoldProxy(writes.kubeconfig);
      cleanUp(() => proxy.close(), 'last');
      const operatorKc = new k8s.KubeConfig();
      operatorKc.loadFromFile(proxy.kubeconfig);
      await startOperator({ eagerStart: true }, operatorKc);
    },
  });

  /** The paths of `path` in the shared Ingress, each as the Service it leads to. */
  const backendsOf = async (path: string): Promise<string[]> => {
    const ingress = await stack.net
      .readNamespacedIngress({ name: INGRESS, namespace: stack.namespace })
      .catch(() => undefined);
    return (ingress?.spec?.rules ?? []).flatMap((rule) =>
      (rule.http?.paths ?? []).filter((p) => p.path === path).map((p) => p.backend.service?.name ?? ''),
    );
  };

  it('is written while the claim is on its way; a lost claim takes the next instance and its path is pointed there', async () => {
    await eventually(async () => assert.equal(await freeReadyInstances(stack.kc, stack.namespace, APP), 2), 60_000);
    const instancePath = `/apis/apps/v1/namespaces/${stack.namespace}/deployments/${APP}-pool-`;
    let claimed = '';
    const claimHeld = proxy.holdRequest((method, url) => {
      if (method !== 'PUT' || !url.startsWith(instancePath)) return false;
      claimed = url.split('?')[0]!.split('/').pop()!;
      return true;
    });
    const claims = () => writes.writes.filter((w) => w.method === 'PUT' && w.path.startsWith(instancePath)).length;
    const claimsBefore = claims();
    const user = 'beside@example.com';
    const name = 'route-beside-1';
    // As the service creates it: with the finalizer.
    const session = await stack.resources.sessions.create({
      metadata: {
        name,
        finalizers: [SESSION_FINALIZER],
        labels: { [LABELS.user]: userLabelValue(user), [LABELS.appDefinition]: APP },
      },
      spec: { user, appDefinition: APP },
    });
    const path = routePath(session);
    const send = await claimHeld;
    try {
      // The claim is held at the proxy, the route is not: it is there, to the instance being claimed,
      // while no claim has reached the API server.
      await eventually(async () => assert.deepEqual(await backendsOf(path), [claimed]), 5000);
      assert.equal(claims(), claimsBefore, 'the route came after a claim');
      // Another writer changes that instance first: the held claim, sent now, answers 409.
      await stack.apps.patchNamespacedDeployment(
        {
          name: claimed,
          namespace: stack.namespace,
          body: { metadata: { annotations: { 'test.ide-cloud.io/touched': 'true' } } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    } finally {
      send();
    }
    const served = await waitForSession(stack.resources, name, running);
    const holder = `${APP}-pool-${served.status?.instanceId}`;
    assert.equal(served.status?.startStrategy, 'eager');
    assert.notEqual(holder, claimed, 'the lost claim was not taken');
    assert.deepEqual(await backendsOf(path), [holder], 'the path once, to the instance the session holds');
    const lost = await stack.apps.readNamespacedDeployment({ name: claimed, namespace: stack.namespace });
    assert.equal(lost.metadata?.labels?.[LABELS.session], undefined, 'the instance of the lost claim is free');
    const refused = writes.writes.filter((w) => w.method === 'PUT' && w.path.endsWith(`/deployments/${claimed}`));
    assert.deepEqual(
      refused.map((w) => w.status),
      [409],
      'the claim of the instance changed meanwhile was refused',
    );
  });
});

// A suite's service whose Kubernetes client goes through a watch-hold proxy (behind the
// write-recording TLS proxy), in a namespace of its own: a test can hold one of the service's
// requests and change the objects in that instant. Started in `before`, stopped in `after`.
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { useCluster } from './cluster.js';
import { startKubeWriteProxy, type KubeWriteProxy } from './kube-write-proxy.js';
import { createTestNamespace, deleteTestNamespace } from './kube.js';
import { applyAppDefinitions, resourcesOf, startTestService, type TestService } from './service-harness.js';
import { startWatchHoldProxy, type WatchHoldProxy } from './watch-hold-proxy.js';

export interface HeldService {
  namespace: string;
  r: IdeCloudResources;
  proxy: WatchHoldProxy;
  service: TestService;
}

/** Registers the suite's `before` and `after`; the fields are set once `before` ran. */
export function useHeldService(namespacePrefix: string, options: { sessionsPerUser: number }): HeldService {
  const held = {} as HeldService;
  let tls: KubeWriteProxy | undefined;
  let kc: k8s.KubeConfig | undefined;
  before(async () => {
    kc = (await useCluster()).kc;
    held.namespace = await createTestNamespace(kc, namespacePrefix);
    held.r = resourcesOf(kc, held.namespace);
    await applyAppDefinitions(held.r, [{}]);
    tls = await startKubeWriteProxy(kc);
    held.proxy = await startWatchHoldProxy(tls.kubeconfig);
    const proxied = new k8s.KubeConfig();
    proxied.loadFromFile(held.proxy.kubeconfig);
    held.service = await startTestService(proxied, held.namespace, options);
  });
  after(async () => {
    await held.service?.close();
    await held.proxy?.close();
    await tls?.close();
    if (kc && held.namespace) await deleteTestNamespace(kc, held.namespace);
  });
  return held;
}

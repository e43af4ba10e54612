import * as k8s from '@kubernetes/client-node';
import { Informer, type IndexFunc, type Obj } from '../../src/kube/informer.js';

/**
 * A real informer's cache and indexes, filled as its watch would fill them (`observe`), with no API
 * server: never started, it makes no request.
 */
export function observedInformer<T extends Obj>(objects: readonly T[], indexers: Record<string, IndexFunc<T>> = {}) {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  const informer = new Informer<T>(kc, {
    path: '/objects',
    apiVersion: 'v1',
    kind: 'Object',
    namespace: 'ns',
    rewatchIntervalMs: 60_000,
    indexers,
  });
  for (const o of objects) informer.observe(o);
  return informer;
}

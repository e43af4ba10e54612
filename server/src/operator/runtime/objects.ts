import { isDeepStrictEqual } from 'node:util';
import type * as k8s from '@kubernetes/client-node';

/** A Deployment whose current template runs ready. */
export function deploymentReady(d: k8s.V1Deployment | undefined): boolean {
  if (!d?.status) return false;
  const generation = d.metadata?.generation ?? 0;
  return (
    (d.status.observedGeneration ?? 0) >= generation &&
    (d.status.updatedReplicas ?? 0) >= 1 &&
    (d.status.readyReplicas ?? 0) >= 1 &&
    (d.status.replicas ?? 0) === (d.status.updatedReplicas ?? 0)
  );
}

/** A pod whose Ready condition is True. */
export function podReady(pod: k8s.V1Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

export function finalizersOf(object: { metadata: object }): string[] {
  const f = (object.metadata as { finalizers?: unknown }).finalizers;
  return Array.isArray(f) ? f.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Whether two statuses say the same: as JSON (undefined fields dropped), whatever the key order. The
 * API server answers with sorted keys, so comparing serialised text would see a change on every pass
 * and write the status again.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a ?? {})), JSON.parse(JSON.stringify(b ?? {})));
}

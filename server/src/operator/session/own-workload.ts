/**
 * A lazy session's own workload: the IDE pod the operator makes for it (steps/workload.ts), or the
 * ReplicaSet or Deployment an earlier version of the operator made (such a session keeps it until it
 * ends). Read from the caches only.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.js';
import { LABELS } from '../../model/api-group.js';
import type { Session } from '../../model/session.js';
import { COMPONENT, sessionPodApp } from '../manifests.js';
import { INDEX, labelKey } from '../runtime/cache.js';
import { podReady } from '../runtime/objects.js';

export interface OwnWorkloadCaches {
  pods: Pick<Informer<k8s.V1Pod>, 'byIndex'>;
  replicaSets: { get(name: string): k8s.V1ReplicaSet | undefined };
  deployments: { get(name: string): k8s.V1Deployment | undefined };
}

/**
 * The session's own IDE pods, in any state: its `session` label and its `app`, which carries its uid
 * (a deleted namesake's pods can linger; its sidecars' pods carry no `session` label).
 */
export function lazySessionPods(pods: OwnWorkloadCaches['pods'], session: Pick<Session, 'metadata'>): k8s.V1Pod[] {
  const labelled = pods.byIndex(INDEX.label, labelKey(LABELS.session, session.metadata.name));
  // The app label is a hash of the name and uid: worked out only for a session that has pods (a warm
  // launch asks with none, on every first pass).
  if (labelled.length === 0) return [];
  const app = sessionPodApp(session);
  return labelled.filter(
    (pod) => pod.metadata?.labels?.[LABELS.component] === COMPONENT.session && pod.metadata.labels.app === app,
  );
}

/** A pod that runs or will: not being deleted, and not ended (an evicted pod, or one whose node went, stays Failed). */
export function livePod(pod: k8s.V1Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata?.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
}

/**
 * The session's live pods, the one it keeps first (Ready, else the oldest; a watch event's timestamp
 * is a string, a create's answer a Date): any other is a duplicate (a create whose answer was lost,
 * made again by a later pass), which the pass deletes.
 */
export function liveSessionPods(pods: OwnWorkloadCaches['pods'], session: Pick<Session, 'metadata'>): k8s.V1Pod[] {
  const born = (p: k8s.V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return lazySessionPods(pods, session)
    .filter(livePod)
    .sort(
      (a, b) =>
        Number(podReady(b)) - Number(podReady(a)) ||
        born(a) - born(b) ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
}

/** The ReplicaSet or Deployment an earlier operator made for the session (named after it), if it is the session's. */
function earlierWorkloadOf(
  caches: OwnWorkloadCaches,
  session: Pick<Session, 'metadata'>,
): k8s.V1ReplicaSet | k8s.V1Deployment | undefined {
  const name = session.metadata.name;
  const own = caches.replicaSets.get(name) ?? caches.deployments.get(name);
  const owned = (own?.metadata?.ownerReferences ?? []).some((o) => o.uid === session.metadata.uid);
  return owned ? own : undefined;
}

/** Whether anything of the session's own workload exists, in any state: a lazy start was decided. */
export function hasOwnWorkload(caches: OwnWorkloadCaches, session: Pick<Session, 'metadata'>): boolean {
  return lazySessionPods(caches.pods, session).length > 0 || !!earlierWorkloadOf(caches, session);
}

/**
 * The workload the session is past its gate with and keeps: its live pod, or an earlier operator's
 * workload not being deleted.
 */
export function liveOwnWorkload(
  caches: OwnWorkloadCaches,
  session: Pick<Session, 'metadata'>,
): k8s.V1Pod | k8s.V1ReplicaSet | k8s.V1Deployment | undefined {
  const pod = liveSessionPods(caches.pods, session)[0];
  if (pod) return pod;
  const earlier = earlierWorkloadOf(caches, session);
  return earlier && !earlier.metadata?.deletionTimestamp ? earlier : undefined;
}

import type * as k8s from '@kubernetes/client-node';
import type { Informer, WatchEventType } from '../../kube/informer.js';
import { LABELS } from '../../model/api-group.js';
import { isSessionFailed, onlyAnsweredMark, type Session } from '../../model/session.js';
import { COMPONENT } from '../manifests.js';
import { instanceOf, reservationOf } from '../pool/instances.js';
import type { OperatorCache } from '../runtime/cache.js';
import type { WorkQueue } from '../runtime/work-queue.js';
import type { DataInjector } from './injection.js';

/**
 * What wakes a Session's pass: the session itself, its workload (a lazy one's own pod, or an earlier
 * operator's ReplicaSet or Deployment for it, or a warm instance it reserved: its Deployment and its
 * reservation), a config store of its deleted under it, and a change of a pod it runs on. Not the
 * watch's copy of a write of the session's own pass (its status, its finalizer and annotations, the
 * reservation of its instance):
 * the pass that wrote it knew what it holds, and a change by anyone else is an event of its own. Nor
 * the service's mark that the launch was answered (`onlyAnsweredMark`), which tells the operator
 * nothing its status does not hold.
 */
export function wakeSessions(
  cache: Pick<OperatorCache, 'sessions' | 'deployments' | 'reservations' | 'replicaSets' | 'configStores' | 'pods'>,
  queue: Pick<WorkQueue, 'add' | 'addUnlessOwn'>,
  injector: Pick<DataInjector, 'forget'>,
  arrivals: ArrivalOrder,
): void {
  cache.sessions.on((type, s, ownWrite, previous) => {
    if (type === 'DELETED') arrivals.forget(s.metadata.name);
    else arrivals.see(s.metadata.name);
    if (!ownWrite && !(previous && onlyAnsweredMark(previous, s))) {
      wakeFor(queue, s.metadata.name, cache.sessions, type, s, previous);
    }
    if (type === 'DELETED') injector.forget(s.metadata.uid ?? s.metadata.name);
  });
  cache.deployments.on((type, d, ownWrite, previous) => {
    const session = holderOf(cache, d);
    if (session && !ownWrite) wakeFor(queue, session, cache.deployments, type, d, previous);
  });
  cache.replicaSets.on((type, r, ownWrite, previous) => {
    const session = r.metadata?.labels?.[LABELS.session];
    if (session && !ownWrite) wakeFor(queue, session, cache.replicaSets, type, r, previous);
  });
  cache.reservations.on((type, lease, ownWrite, previous) => {
    const session = lease.metadata?.labels?.[LABELS.session];
    if (session && !ownWrite) wakeFor(queue, session, cache.reservations, type, lease, previous);
  });
  // A config store deleted under its session is made again.
  cache.configStores.on((type, store) => {
    const session = store.metadata?.labels?.[LABELS.session];
    if (type === 'DELETED' && session) queue.add(session);
  });
  // A lazy session's own pod wakes it on every change: its readiness is the session's (a start that
  // cannot succeed fails at once, a lost pod is told and made again). A warm instance's pod wakes the
  // session it starts only; once served, the instance's Deployment tells.
  cache.pods.on((_t, pod) => {
    const labels = pod.metadata?.labels ?? {};
    const own = labels[LABELS.session];
    if (own) queue.add(own);
    else {
      const session = startingSessionOf(cache, labels);
      if (session) queue.add(session.metadata.name);
    }
  });
}

/**
 * Wakes `session` for a change of `object` in `informer`. A change of an object the cache held may be
 * the session's pass in progress writing it, its watch event ahead of the write's answer: it is
 * judged when that pass ends, by whether the pass observed a write at the change's version.
 */
function wakeFor<T extends { metadata?: { name?: string; resourceVersion?: string } }>(
  queue: Pick<WorkQueue, 'add' | 'addUnlessOwn'>,
  session: string,
  informer: Pick<Informer<T>, 'observed'>,
  type: WatchEventType,
  object: T,
  previous: T | undefined,
): void {
  if (type !== 'MODIFIED' || !previous) return queue.add(session);
  const { name = '', resourceVersion } = object.metadata ?? {};
  queue.addUnlessOwn(session, () => informer.observed(name, resourceVersion));
}

/**
 * The session a Deployment serves: a warm instance's is the one its reservation holds; a lazy
 * session's (an earlier operator's) carries its label.
 */
function holderOf(cache: Pick<OperatorCache, 'deployments' | 'reservations'>, d: k8s.V1Deployment): string | undefined {
  if (d.metadata?.labels?.[LABELS.component] !== COMPONENT.poolInstance) return d.metadata?.labels?.[LABELS.session];
  return instanceOf(d, reservationOf(cache.reservations, d)).reservedBy?.name;
}

function startingSessionOf(
  cache: { sessions: Pick<Informer<Session>, 'get'> } & Pick<OperatorCache, 'deployments' | 'reservations'>,
  labels: Record<string, string>,
): Session | undefined {
  const instanceName = labels[LABELS.poolInstance];
  const instance = instanceName ? cache.deployments.get(instanceName) : undefined;
  const name = instance && holderOf(cache, instance);
  const session = name ? cache.sessions.get(name) : undefined;
  return session && !session.status?.url && !isSessionFailed(session) ? session : undefined;
}

/**
 * The order in which this process first saw each Session, the session queue's rank: a pass of an
 * older launch goes before a newer one's, so that in a burst the launches finish in turn instead of
 * all together at its end (each launch takes several passes, and every pass would otherwise wait
 * behind the whole burst's).
 */
export class ArrivalOrder {
  private readonly seen = new Map<string, number>();
  private next = 0;

  see(name: string): void {
    if (!this.seen.has(name)) this.seen.set(name, this.next++);
  }

  forget(name: string): void {
    this.seen.delete(name);
  }

  /** Its arrival; one not seen (yet) goes after all that were. */
  readonly rank = (name: string): number => this.seen.get(name) ?? Number.MAX_SAFE_INTEGER;
}

import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { IngressClient } from '../../kube/plain-answers.js';
import { LABELS } from '../../model/api-group.js';
import { OPERATOR_MANAGER } from '../../model/api-group.js';
import { CLEARED_FIELD_RECORD, clearFieldRecord } from '../../kube/field-record.js';
import { Delay, RetryLater } from '../runtime/outcome.js';
import { withRoute, type RouteChange, type RouteEntry } from './ingress.js';
import { ingressServes } from './served.js';

/** A route check the ingress does not answer in this time counts as not served (asked again). */
const ROUTE_CHECK_TIMEOUT_MS = 2000;

/** What the session reconciler needs of the routes: a session's path present or absent. */
export interface RouteTable {
  set(ingressName: string, entry: RouteEntry, present: boolean): Promise<void>;
  /** The shared Ingresses (cache) whose rule of `host` holds `path`: where a route is, whatever recorded it. */
  holding(host: string, path: string): string[];
  /**
   * Whether the ingress serves `path` of `host` now (routes/served.ts), unanswered within `timeoutMs`
   * (at most ROUTE_CHECK_TIMEOUT_MS) counting as not; true when nothing is there to ask.
   */
  served(host: string, path: string, timeoutMs?: number): Promise<boolean>;
}

export interface RoutesDeps {
  net: IngressClient;
  namespace: string;
  /** The cache of the shared Ingresses; every write's answer goes into it. */
  ingresses: Informer<k8s.V1Ingress>;
  ingressClassName?: string;
  /** The ingress as this process reaches it, to ask whether it serves a route (config.routeCheckUrl). */
  checkUrl?: string;
}

type Waiting = { change: RouteChange; done: (made: boolean) => void };

/**
 * Writes the paths of a shared Ingress in batches: while one write of an Ingress is on its way, the
 * changes asked for meanwhile wait and go together in the next one. A burst of launches or ends so
 * costs a few writes of the Ingress, not one each (every write rewrites the whole object, which grows
 * with the sessions), and the writes never race each other. Each write is the cached Ingress with the
 * batch's changes, replaced on the cached resourceVersion: the API server decodes it once. A JSON
 * patch of the paths cost it half as much again at 150 paths and nearly twice as much at 300 (it
 * encodes the stored object, walks and re-encodes it for the patch, and decodes the result). A cache
 * behind someone else's write is answered 409, and the batch takes the long way. Holds only requests
 * in flight, no state.
 */
class RouteWriter {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly writing = new Set<string>();

  constructor(private readonly deps: RoutesDeps) {}

  /** Resolves true once the Ingress the API server answered shows the change, false when it must take the long way. */
  change(ingressName: string, change: RouteChange): Promise<boolean> {
    return new Promise((done) => {
      const queue = this.waiting.get(ingressName) ?? [];
      queue.push({ change, done });
      this.waiting.set(ingressName, queue);
      void this.flush(ingressName);
    });
  }

  private async flush(ingressName: string): Promise<void> {
    if (this.writing.has(ingressName)) return;
    const batch = this.waiting.get(ingressName);
    if (!batch?.length) return;
    this.waiting.delete(ingressName);
    this.writing.add(ingressName);
    const { net, namespace, ingresses } = this.deps;
    let made = new Set<RouteChange>();
    try {
      const cached = ingresses.get(ingressName);
      const spec = batch.reduce<k8s.V1IngressSpec | undefined>(
        (current, { change }) => withRoute(current, change.entry, change.present) ?? current,
        cached?.spec,
      );
      // An Ingress left with no rule is deleted, and one not there created: both the long way.
      if (cached && spec !== cached.spec && ((spec?.rules ?? []).length > 0 || spec?.defaultBackend)) {
        const { status: _status, ...current } = cached;
        const body = {
          ...current,
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          // The field record would list every path (kube/field-record.ts).
          metadata: { ...cached.metadata, managedFields: CLEARED_FIELD_RECORD },
          spec,
        };
        const answer = await net.replaceNamespacedIngress({ name: ingressName, namespace, body });
        ingresses.observe(answer);
        made = new Set(
          batch.map((w) => w.change).filter(({ entry, present }) => !withRoute(answer.spec, entry, present)),
        );
      }
    } catch {
      // The cache was behind (409) or the Ingress went: every change of the batch takes the long way.
    } finally {
      this.writing.delete(ingressName);
      for (const w of batch) w.done(made.has(w.change));
      void this.flush(ingressName);
    }
  }
}

/**
 * The sessions' paths in the shared Ingresses, read from the operator's cache. A path added to or
 * removed from an existing Ingress is written on the cached one (in batches: RouteWriter). Anything
 * else, and a change the batch could not make, is read from the API server, changed and written with the
 * resourceVersion read, again after a 409: concurrent changes never lose each other's paths. The
 * Ingress is created on first use and deleted (with a precondition) when its last path goes.
 */
export class Routes implements RouteTable {
  private readonly writer: RouteWriter;

  constructor(private readonly deps: RoutesDeps) {
    this.writer = new RouteWriter(deps);
  }

  holding(host: string, path: string): string[] {
    return this.deps.ingresses
      .list()
      .filter((i) =>
        (i.spec?.rules ?? []).some((r) => r.host === host && (r.http?.paths ?? []).some((p) => p.path === path)),
      )
      .map((i) => i.metadata?.name ?? '');
  }

  served(host: string, path: string, timeoutMs = ROUTE_CHECK_TIMEOUT_MS): Promise<boolean> {
    const { checkUrl } = this.deps;
    const timeout = Math.min(timeoutMs, ROUTE_CHECK_TIMEOUT_MS);
    return checkUrl ? ingressServes(checkUrl, host, path, timeout) : Promise.resolve(true);
  }

  async set(ingressName: string, entry: RouteEntry, present: boolean): Promise<void> {
    const { net, namespace, ingresses } = this.deps;
    const cached = ingresses.get(ingressName);
    if (cached && !withRoute(cached.spec, entry, present)) return;
    if (cached && (await this.writer.change(ingressName, { entry, present }))) return;
    // The long way: read from the API server (the cache may be behind), change, write.
    for (let attempt = 0; attempt < 50; attempt++) {
      let current: k8s.V1Ingress | undefined;
      try {
        current = await net.readNamespacedIngress({ name: ingressName, namespace });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      try {
        if (!current) {
          if (!present) return;
          const ingressClassName = this.deps.ingressClassName;
          const spec = { ...withRoute(undefined, entry, true), ...(ingressClassName ? { ingressClassName } : {}) };
          ingresses.observe(
            await net.createNamespacedIngress({
              namespace,
              body: {
                metadata: { name: ingressName, namespace, labels: { [LABELS.managedBy]: OPERATOR_MANAGER } },
                spec,
              },
            }),
          );
          return;
        }
        const spec = withRoute(current.spec, entry, present);
        if (!spec) return;
        if ((spec.rules ?? []).length === 0 && !spec.defaultBackend) {
          await net.deleteNamespacedIngress({
            name: ingressName,
            namespace,
            body: { preconditions: { resourceVersion: current.metadata?.resourceVersion } },
          });
          return;
        }
        const next = { ...structuredClone(current), apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', spec };
        clearFieldRecord(next.metadata!);
        ingresses.observe(await net.replaceNamespacedIngress({ name: ingressName, namespace, body: next }));
        return;
      } catch (error) {
        if (!isConflict(error) && !(isNotFound(error) && current)) throw error;
        const wait = Math.random() * Math.min(Delay.routeRetryMax, Delay.routeRetryStep * (attempt + 1));
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
    throw new RetryLater(`route ${ingressName}: too many concurrent changes`);
  }
}

import * as k8s from '@kubernetes/client-node';
import { isConflict, isNotFound, undefinedIfNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { IngressClient } from '../../kube/plain-answers.js';
import { LABELS } from '../../model/api-group.js';
import { OPERATOR_MANAGER } from '../../model/api-group.js';
import { CLEARED_FIELD_RECORD } from '../../kube/field-record.js';
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

type Waiting = { change: RouteChange; done: (made: boolean) => void; failed: (error: unknown) => void };

/** Writes of one batch that another writer's changes may refuse (409) before it gives up for now. */
const WRITE_ATTEMPTS = 50;

/**
 * Writes the paths of a shared Ingress in batches: while one write of an Ingress is on its way, the
 * changes asked for meanwhile wait and go together in the next one. A burst of launches or ends so
 * costs a few writes of the Ingress, not one each (every write rewrites the whole object, which grows
 * with the sessions), and this process's writes never race each other. A batch is written on the
 * cached Ingress: replaced on the cached resourceVersion, created when there is none, deleted (on its
 * resourceVersion) when its last path goes. The API server decodes a replace once; a JSON patch of
 * the paths cost it half as much CPU again at 150 paths and nearly twice as much at 300 (it encodes
 * the stored object, walks and re-encodes it for the patch, and decodes the result). A write someone
 * else's got ahead of (409, or 404 for one deleted) is made again on the Ingress read then. Holds only
 * requests in flight, no state.
 */
class RouteWriter {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly writing = new Set<string>();

  constructor(private readonly deps: RoutesDeps) {}

  /** Resolves true once the Ingress written shows the change, false when a later change of the batch undid it. */
  change(ingressName: string, change: RouteChange): Promise<boolean> {
    return new Promise((done, failed) => {
      const queue = this.waiting.get(ingressName) ?? [];
      queue.push({ change, done, failed });
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
    try {
      const made = await this.write(
        ingressName,
        batch.map((w) => w.change),
      );
      for (const w of batch) w.done(made.has(w.change));
    } catch (error) {
      for (const w of batch) w.failed(error);
    } finally {
      this.writing.delete(ingressName);
      void this.flush(ingressName);
    }
  }

  /** The batch written, first on the cached Ingress; the changes the Ingress written shows. */
  private async write(ingressName: string, changes: RouteChange[]): Promise<Set<RouteChange>> {
    const { net, namespace, ingresses } = this.deps;
    const shown = (spec: k8s.V1IngressSpec | undefined) =>
      new Set(changes.filter(({ entry, present }) => !withRoute(spec, entry, present)));
    let current = ingresses.get(ingressName);
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      // One the cache does not show is read: the cache may not show it yet.
      if (attempt > 0 || !current) {
        const wait = Math.random() * Math.min(Delay.routeRetryMax, Delay.routeRetryStep * attempt);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        current = await net.readNamespacedIngress({ name: ingressName, namespace }).catch(undefinedIfNotFound);
        if (current) ingresses.observe(current);
      }
      const spec = changes.reduce((next, { entry, present }) => withRoute(next, entry, present) ?? next, current?.spec);
      if (spec === current?.spec) return shown(spec);
      const empty = (spec?.rules ?? []).length === 0 && !spec?.defaultBackend;
      try {
        if (!current) {
          if (empty) return shown(spec);
          const { ingressClassName } = this.deps;
          const body = {
            metadata: { name: ingressName, namespace, labels: { [LABELS.managedBy]: OPERATOR_MANAGER } },
            spec: { ...spec, ...(ingressClassName ? { ingressClassName } : {}) },
          };
          const created = await net.createNamespacedIngress({ namespace, body });
          ingresses.observe(created);
          return shown(created.spec);
        }
        if (empty) {
          const preconditions = { resourceVersion: current.metadata?.resourceVersion };
          await net.deleteNamespacedIngress({ name: ingressName, namespace, body: { preconditions } });
          return shown(undefined);
        }
        const { status: _status, ...written } = current;
        const body = {
          ...written,
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          // The field record would list every path (kube/field-record.ts).
          metadata: { ...current.metadata, managedFields: CLEARED_FIELD_RECORD },
          spec,
        };
        const answer = await net.replaceNamespacedIngress({ name: ingressName, namespace, body });
        ingresses.observe(answer);
        return shown(answer.spec);
      } catch (error) {
        if (!isConflict(error) && !isNotFound(error)) throw error;
      }
    }
    throw new RetryLater(`route ${ingressName}: too many concurrent changes`);
  }
}

/**
 * The sessions' paths in the shared Ingresses, read from the operator's cache and written in batches
 * (RouteWriter): a path already as asked for costs nothing; any other change goes in the next write of
 * its Ingress. The Ingress is created on first use and deleted when its last path goes.
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
    const cached = this.deps.ingresses.get(ingressName);
    if (cached && !withRoute(cached.spec, entry, present)) return;
    if (!(await this.writer.change(ingressName, { entry, present }))) {
      throw new RetryLater(`route ${ingressName}: changed again in the same write`, Delay.conflict);
    }
  }
}

import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../model/api-group.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import { MANAGED_BY, SERVICE_PORT } from '../manifests.js';
import type { OperatorContext } from '../context.js';
import { RetryLater } from '../runtime/outcome.js';

export interface RouteEntry {
  host: string;
  path: string;
  serviceName: string;
}

/** Returns the ingress spec with `entry` present (true) or absent (false); undefined when nothing changes. */
export function withRoute(
  spec: k8s.V1IngressSpec | undefined,
  entry: RouteEntry,
  present: boolean,
): k8s.V1IngressSpec | undefined {
  const rules = structuredClone(spec?.rules ?? []);
  let rule = rules.find((r) => r.host === entry.host);
  const paths = rule?.http?.paths ?? [];
  const index = paths.findIndex((p) => p.path === entry.path);
  const existing = index >= 0 ? paths[index] : undefined;
  if (present) {
    if (existing?.backend.service?.name === entry.serviceName && existing.pathType === 'Prefix') return undefined;
    const next: k8s.V1HTTPIngressPath = {
      path: entry.path,
      pathType: 'Prefix',
      backend: { service: { name: entry.serviceName, port: { number: SERVICE_PORT } } },
    };
    if (!rule) {
      rule = { host: entry.host, http: { paths: [] } };
      rules.push(rule);
    }
    rule.http ??= { paths: [] };
    if (index >= 0) rule.http.paths[index] = next;
    else rule.http.paths.push(next);
  } else {
    if (!existing || !rule?.http) return undefined;
    // Every copy: a path appended twice (a cache that missed the first append) must not outlive its session.
    rule.http.paths = rule.http.paths.filter((p) => p.path !== entry.path);
  }
  return { ...spec, rules: rules.filter((r) => (r.http?.paths.length ?? 0) > 0) };
}

/**
 * The JSON patch that appends `entries` to the rules of their hosts, each rule guarded by a test of
 * its host: concurrent appends never conflict (the API server applies each patch to the latest
 * object), and a rule that moved fails the test instead of receiving a path. Entries whose host has
 * no rule yet, or whose path is there already, are left out: they take the read-modify-write way.
 */
export function appendRoutesPatch(
  spec: k8s.V1IngressSpec | undefined,
  entries: readonly RouteEntry[],
): { patch: object[]; appended: RouteEntry[] } {
  const patch: object[] = [];
  const appended: RouteEntry[] = [];
  const rules = spec?.rules ?? [];
  const tested = new Set<number>();
  const paths = new Set(rules.flatMap((r) => (r.http?.paths ?? []).map((p) => `${r.host} ${p.path}`)));
  for (const entry of entries) {
    const index = rules.findIndex((r) => r.host === entry.host);
    if (index < 0 || !rules[index]!.http || paths.has(`${entry.host} ${entry.path}`)) continue;
    paths.add(`${entry.host} ${entry.path}`);
    if (!tested.has(index)) {
      tested.add(index);
      patch.push({ op: 'test', path: `/spec/rules/${index}/host`, value: entry.host });
    }
    patch.push({
      op: 'add',
      path: `/spec/rules/${index}/http/paths/-`,
      value: {
        path: entry.path,
        pathType: 'Prefix',
        backend: { service: { name: entry.serviceName, port: { number: SERVICE_PORT } } },
      },
    });
    appended.push(entry);
  }
  return { patch, appended };
}

type Waiting = { entry: RouteEntry; done: (appended: boolean) => void };

/**
 * Appends paths to a shared Ingress in batches: while one patch of an Ingress is on its way, the
 * paths asked for meanwhile wait and go together in the next one. A burst of launches so costs a few
 * writes of the Ingress, not one each (every write rewrites the whole object, which grows with the
 * sessions), and the writes never race each other. Holds only requests in flight, no state.
 */
export class RouteAppender {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly writing = new Set<string>();

  constructor(private readonly ctx: Pick<OperatorContext, 'net' | 'namespace' | 'cache'>) {}

  /** Resolves true once the path is in the Ingress, false when it must take the long way. */
  append(ingressName: string, entry: RouteEntry): Promise<boolean> {
    return new Promise((done) => {
      const queue = this.waiting.get(ingressName) ?? [];
      queue.push({ entry, done });
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
    const { net, namespace, cache } = this.ctx;
    let appended = new Set<RouteEntry>();
    try {
      const { patch, appended: carried } = appendRoutesPatch(
        cache.ingresses.get(ingressName)?.spec,
        batch.map((w) => w.entry),
      );
      if (patch.length > 0) {
        cache.ingresses.observe(
          await net.patchNamespacedIngress({ name: ingressName, namespace, body: patch }, jsonPatch),
        );
        appended = new Set(carried);
      }
    } catch {
      // The rule moved or the Ingress went: every entry of the batch takes the long way.
    } finally {
      this.writing.delete(ingressName);
      for (const w of batch) w.done(appended.has(w.entry));
      void this.flush(ingressName);
    }
  }
}

const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);

/**
 * Adds or removes one session's path in the shared Ingress, reading the operator's cache. An
 * addition to an existing host rule is appended (RouteAppender). Anything else is read, change, write with the
 * resourceVersion read, first from the cache, then from the API server after a 409: concurrent
 * changes never lose each other's paths. The Ingress is created on first use and deleted (with a
 * precondition) when its last path goes.
 */
export async function setRoute(
  ctx: Pick<OperatorContext, 'net' | 'namespace' | 'cache' | 'config' | 'routes'>,
  ingressName: string,
  entry: RouteEntry,
  present: boolean,
): Promise<void> {
  const { net, namespace } = ctx;
  const ingresses = ctx.cache.ingresses;
  const cached = ingresses.get(ingressName);
  if (cached && !withRoute(cached.spec, entry, present)) return;
  if (present && cached && (await ctx.routes.append(ingressName, entry))) return;
  // After a failed append the cache is behind: read the API server.
  let current: k8s.V1Ingress | undefined = present ? undefined : cached;
  let fromCache = current !== undefined;
  for (let attempt = 0; attempt < 50; attempt++) {
    if (!fromCache) {
      current = undefined;
      try {
        current = await net.readNamespacedIngress({ name: ingressName, namespace });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    fromCache = false;
    try {
      if (!current) {
        if (!present) return;
        const ingressClassName = ctx.config.ingressClassName;
        const spec = { ...withRoute(undefined, entry, true), ...(ingressClassName ? { ingressClassName } : {}) };
        ingresses.observe(
          await net.createNamespacedIngress({
            namespace,
            body: {
              metadata: { name: ingressName, namespace, labels: { [LABELS.managedBy]: MANAGED_BY } },
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
      ingresses.observe(await net.replaceNamespacedIngress({ name: ingressName, namespace, body: next }));
      return;
    } catch (error) {
      if (!isConflict(error) && !(isNotFound(error) && current)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(500, 20 * (attempt + 1))));
    }
  }
  throw new RetryLater(`route ${ingressName}: too many concurrent changes`);
}

import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../model/api-group.js';
import { isConflict, isNotFound } from '../kube/client.js';
import { MANAGED_BY, SERVICE_PORT } from './manifests.js';
import type { OperatorContext } from './context.js';
import { RetryLater } from './errors.js';

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
    rule.http.paths.splice(index, 1);
  }
  return { ...spec, rules: rules.filter((r) => (r.http?.paths.length ?? 0) > 0) };
}

/**
 * The JSON patch that appends `entry` to the rule of its host, guarded by a test of that rule's
 * host: concurrent appends never conflict (the API server applies each to the latest object), and a
 * rule that moved fails the test instead of receiving the path. Undefined when the host has no rule
 * yet or the path is there with another backend: those take the read-modify-write way.
 */
export function appendRoutePatch(spec: k8s.V1IngressSpec | undefined, entry: RouteEntry): object[] | undefined {
  const index = (spec?.rules ?? []).findIndex((r) => r.host === entry.host);
  const rule = spec?.rules?.[index];
  if (!rule?.http || rule.http.paths.some((p) => p.path === entry.path)) return undefined;
  return [
    { op: 'test', path: `/spec/rules/${index}/host`, value: entry.host },
    {
      op: 'add',
      path: `/spec/rules/${index}/http/paths/-`,
      value: {
        path: entry.path,
        pathType: 'Prefix',
        backend: { service: { name: entry.serviceName, port: { number: SERVICE_PORT } } },
      },
    },
  ];
}

const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);

/**
 * Adds or removes one session's path in the shared Ingress, reading the operator's cache. An
 * addition is one JSON patch (see appendRoutePatch). Anything else is read, change, write with the
 * resourceVersion read, first from the cache, then from the API server after a 409: concurrent
 * changes never lose each other's paths. The Ingress is created on first use and deleted (with a
 * precondition) when its last path goes.
 */
export async function setRoute(
  ctx: Pick<OperatorContext, 'net' | 'namespace' | 'cache' | 'config'>,
  ingressName: string,
  entry: RouteEntry,
  present: boolean,
): Promise<void> {
  const { net, namespace } = ctx;
  const ingresses = ctx.cache.ingresses;
  const cached = ingresses.get(ingressName);
  if (cached && !withRoute(cached.spec, entry, present)) return;
  const append = present ? appendRoutePatch(cached?.spec, entry) : undefined;
  if (append) {
    try {
      ingresses.observe(await net.patchNamespacedIngress({ name: ingressName, namespace, body: append }, jsonPatch));
      return;
    } catch (error) {
      // The rule moved or the Ingress went: read the API server and change it the long way.
      if (!(error instanceof k8s.ApiException) || error.code >= 500) throw error;
    }
  }
  let current: k8s.V1Ingress | undefined = append ? undefined : cached;
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

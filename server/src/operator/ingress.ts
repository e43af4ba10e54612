import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../model/api-group.js';
import { isConflict, isNotFound } from '../kube/client.js';
import { MANAGED_BY, SERVICE_PORT } from './manifests.js';
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
 * Adds or removes one session's path in the shared Ingress. Read, change, write with the
 * resourceVersion read; on 409 (someone else changed it) read again: concurrent launches never lose
 * each other's rules. The Ingress is created on first use and deleted (with a precondition) when its
 * last path goes.
 */
export async function setRoute(
  net: k8s.NetworkingV1Api,
  namespace: string,
  ingressName: string,
  entry: RouteEntry,
  present: boolean,
  ingressClassName?: string,
): Promise<void> {
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
        const spec = { ...withRoute(undefined, entry, true), ...(ingressClassName ? { ingressClassName } : {}) };
        await net.createNamespacedIngress({
          namespace,
          body: {
            metadata: { name: ingressName, namespace, labels: { [LABELS.managedBy]: MANAGED_BY } },
            spec,
          },
        });
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
      current.spec = spec;
      await net.replaceNamespacedIngress({ name: ingressName, namespace, body: current });
      return;
    } catch (error) {
      if (!isConflict(error) && !(isNotFound(error) && current)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(500, 20 * (attempt + 1))));
    }
  }
  throw new RetryLater(`route ${ingressName}: too many concurrent changes`);
}

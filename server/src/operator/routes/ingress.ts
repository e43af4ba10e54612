/** The shape of a shared Ingress with or without one session's path: pure, no API calls. */
import type * as k8s from '@kubernetes/client-node';
import { SERVICE_PORT } from '../manifests.js';

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

/** Where a route of `session` leads to `serviceName`: each such path of the shared Ingresses, as an entry to remove. */
export function sessionRoutesTo(
  ingresses: readonly k8s.V1Ingress[],
  serviceName: string,
  session: string,
): { ingressName: string; entry: RouteEntry }[] {
  return ingresses.flatMap((ingress) =>
    (ingress.spec?.rules ?? []).flatMap((rule) =>
      (rule.http?.paths ?? [])
        .filter((p) => p.backend.service?.name === serviceName && p.path?.startsWith(`/${session}/`))
        .map((p) => ({
          ingressName: ingress.metadata?.name ?? '',
          entry: { host: rule.host ?? '', path: p.path!, serviceName },
        })),
    ),
  );
}

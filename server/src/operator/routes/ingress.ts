/** The shape of a shared Ingress with or without one session's path: pure, no API calls. */
import type * as k8s from '@kubernetes/client-node';
import { SERVICE_PORT } from '../manifests.js';

export interface RouteEntry {
  host: string;
  path: string;
  serviceName: string;
}

/** One session's path to be present in (true) or absent from (false) a shared Ingress. */
export interface RouteChange {
  entry: RouteEntry;
  present: boolean;
}

function ingressPath(entry: RouteEntry): k8s.V1HTTPIngressPath {
  return {
    path: entry.path,
    pathType: 'Prefix',
    backend: { service: { name: entry.serviceName, port: { number: SERVICE_PORT } } },
  };
}

/**
 * Returns the ingress spec with `entry` present (true) or absent (false); undefined when nothing
 * changes. The spec given is not changed, and only the rule of the entry's host is copied: the
 * answer for a path already in place costs no copy of an Ingress that grows with the sessions.
 */
export function withRoute(
  spec: k8s.V1IngressSpec | undefined,
  entry: RouteEntry,
  present: boolean,
): k8s.V1IngressSpec | undefined {
  const rules = spec?.rules ?? [];
  const at = rules.findIndex((r) => r.host === entry.host);
  const paths = rules[at]?.http?.paths ?? [];
  const index = paths.findIndex((p) => p.path === entry.path);
  const existing = paths[index];
  let next: k8s.V1HTTPIngressPath[];
  if (present) {
    if (existing?.backend.service?.name === entry.serviceName && existing.pathType === 'Prefix') return undefined;
    next = existing ? paths.with(index, ingressPath(entry)) : [...paths, ingressPath(entry)];
  } else {
    if (!existing) return undefined;
    // Every copy: a path appended twice (a cache that missed the first append) must not outlive its session.
    next = paths.filter((p) => p.path !== entry.path);
  }
  const rule = { ...rules[at], host: entry.host, http: { ...rules[at]?.http, paths: next } };
  const changed = at >= 0 ? rules.with(at, rule) : [...rules, rule];
  return { ...spec, rules: changed.filter((r) => (r.http?.paths.length ?? 0) > 0) };
}

/**
 * Where a route of `session` (of any session, when undefined) leads to `serviceName`: each such path
 * of the shared Ingresses, as an entry to remove.
 */
export function sessionRoutesTo(
  ingresses: readonly k8s.V1Ingress[],
  serviceName: string,
  session: string | undefined,
): { ingressName: string; entry: RouteEntry }[] {
  return ingresses.flatMap((ingress) =>
    (ingress.spec?.rules ?? []).flatMap((rule) =>
      (rule.http?.paths ?? [])
        .filter(
          (p) =>
            p.backend.service?.name === serviceName && (session === undefined || p.path?.startsWith(`/${session}/`)),
        )
        .map((p) => ({
          ingressName: ingress.metadata?.name ?? '',
          entry: { host: rule.host ?? '', path: p.path!, serviceName },
        })),
    ),
  );
}

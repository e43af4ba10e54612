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
 * The JSON patch that makes `changes` to the rules of their hosts, against `spec` as last read: it
 * tests the host of every rule it changes and the path at every index it takes out. The API server
 * applies a patch to the latest object, so a patch made on a current read never conflicts, and one
 * made on a stale read fails a test instead of changing the wrong path (a stale read that would leave
 * a rule without a path is refused too: an Ingress rule needs one). Removals come first, from the
 * highest index down, so no removal moves a path another one tests. Changes such a patch cannot make
 * are left out of `carried`, for read-modify-write: a host with no rule yet, a path already there, a
 * path the batch names twice, the removals that would leave a rule without a path (the long way drops
 * the rule). A copy of a path that `spec` does not show is not removed: the writer checks the answer.
 */
export function routeChangesPatch(
  spec: k8s.V1IngressSpec | undefined,
  changes: readonly RouteChange[],
): { patch: object[]; carried: RouteChange[] } {
  const rules = spec?.rules ?? [];
  const key = (c: RouteChange) => `${c.entry.host} ${c.entry.path}`;
  const named = new Map<string, number>();
  for (const c of changes) named.set(key(c), (named.get(key(c)) ?? 0) + 1);
  const left = rules.map((r) => r.http?.paths.length ?? 0);
  const planned: { change: RouteChange; rule: number; indexes: number[] }[] = [];
  for (const change of changes) {
    const rule = rules.findIndex((r) => r.host === change.entry.host);
    const paths = rules[rule]?.http?.paths;
    if (!paths || named.get(key(change))! > 1) continue;
    const indexes = paths.flatMap((p, index) => (p.path === change.entry.path ? [index] : []));
    if (change.present === indexes.length > 0) continue;
    left[rule]! += change.present ? 1 : -indexes.length;
    planned.push({ change, rule, indexes });
  }
  const carried = planned.filter((p) => p.change.present || left[p.rule]! > 0);
  // The patch removes no rule, so every rule keeps its index from the first operation to the last.
  const patch: object[] = [...new Set(carried.map((p) => p.rule))]
    .sort((a, b) => a - b)
    .map((rule) => ({ op: 'test', path: `/spec/rules/${rule}/host`, value: rules[rule]!.host }));
  const removals = carried
    .filter((p) => !p.change.present)
    .flatMap((p) => p.indexes.map((index) => ({ rule: p.rule, index, path: p.change.entry.path })))
    .sort((a, b) => a.rule - b.rule || b.index - a.index);
  for (const { rule, index, path } of removals) {
    patch.push({ op: 'test', path: `/spec/rules/${rule}/http/paths/${index}/path`, value: path });
    patch.push({ op: 'remove', path: `/spec/rules/${rule}/http/paths/${index}` });
  }
  for (const { rule, change } of carried.filter((p) => p.change.present)) {
    patch.push({ op: 'add', path: `/spec/rules/${rule}/http/paths/-`, value: ingressPath(change.entry) });
  }
  return { patch, carried: carried.map((p) => p.change) };
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

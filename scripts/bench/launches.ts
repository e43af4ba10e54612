// Where one launch's writes and time go, from kube-apiserver's audit log (auditlog.ts records each
// write of IDE Cloud's own, Events left out, with its timestamps in µs). Each write is attributed to
// the session it serves: the Session's own writes and any object named after it by name; the claim
// by the warm instance (Deployment) that took the session's label; the route by the change of the
// shared Ingress that added the session's path (the harness's watches tell which instance and which
// change). The Session's status write that first carries the URL is the status write the watch saw
// first with it (the n-th status write of the session, n counted on the watch; by time if the counts
// disagree). Nothing here knows the operator's sequence of writes: a write is before the URL (inclusive)
// or after it by the order of the audit log's timestamps only.
import { LEADER_LEASE, type AuditWrite } from './auditlog.js';
import type { Bench } from './harness.js';
import type { Timeline, TimelineStep } from './results.js';
import { round, summarize } from './util.js';

/** One launch as the client saw it (harness.launch). */
export interface LaunchRecord {
  session: string;
  /** Date.now() when the POST was sent and when its answer was read. */
  sentAt: number;
  answeredAt: number;
}

/** A launch answered (`Bench.launch`): its client-side latency (ms) and its URL. */
export interface Launched extends LaunchRecord {
  ms: number;
  url: string;
}

/** A session's writes, attributed (see the top of the file). */
interface Attributed {
  create?: AuditWrite;
  url?: AuditWrite;
  /** The URL write was found by time: the watch's count of status writes disagreed with the log's. */
  urlByTime: boolean;
  claim?: AuditWrite;
  route?: AuditWrite;
  writes: AuditWrite[];
}

const ok = (w: AuditWrite) => w.code >= 200 && w.code < 300;
const key = (resource: string, name: string) => `${resource.split('/')[0]}\t${name}`;

/** IDE Cloud's writes by object (`resource \t name`), each list in the order received. */
function byObject(writes: readonly AuditWrite[]): Map<string, AuditWrite[]> {
  const index = new Map<string, AuditWrite[]>();
  for (const w of writes) {
    const k = key(w.resource, w.name);
    const list = index.get(k) ?? [];
    list.push(w);
    index.set(k, list);
  }
  for (const list of index.values()) list.sort((a, b) => a.receivedMs - b.receivedMs);
  return index;
}

/**
 * The `n`-th successful write (from 1) of a list, if it was received before the watch saw its result
 * (`seenAt`, ms; 1 ms of slack for the watch's ms clock); otherwise the last successful one received
 * before `seenAt`. `byTime`: the second way was taken.
 */
function nthWrite(list: readonly AuditWrite[], n: number | undefined, seenAt: number | undefined) {
  if (seenAt === undefined) return { write: undefined, byTime: false };
  const done = list.filter(ok);
  const nth = n === undefined ? undefined : done[n - 1];
  if (nth && nth.receivedMs <= seenAt + 1) return { write: nth, byTime: false };
  return { write: done.filter((w) => w.receivedMs <= seenAt + 1).at(-1), byTime: true };
}

function attribute(bench: Bench, index: Map<string, AuditWrite[]>, session: string): Attributed {
  const times = bench.sessions.get(session);
  const placement = bench.placements.get(session);
  const own = index.get(key('sessions', session)) ?? [];
  const create = own.find((w) => w.verb === 'create' && ok(w));
  const status = own.filter((w) => w.resource === 'sessions/status');
  const url = nthWrite(status, (times?.statusChangesBeforeUrl ?? NaN) + 1, times?.url);
  // The claim: the write of the instance's reservation that put the session's label on it; later writes of it are the session's too.
  const instanceWrites = placement?.instance ? (index.get(key('leases', placement.instance)) ?? []) : [];
  const since = create?.receivedMs ?? -Infinity;
  const claim = instanceWrites
    .filter((w) => ok(w) && w.receivedMs >= since && w.receivedMs <= (placement?.instanceSeen ?? -Infinity) + 1)
    .at(-1);
  const route = placement?.ingress
    ? nthWrite(index.get(key('ingresses', placement.ingress)) ?? [], placement.ingressChange, placement.routeSeen).write
    : undefined;
  const writes = [...own, ...(claim ? instanceWrites.filter((w) => w.receivedMs >= claim.receivedMs) : [])];
  if (route) writes.push(route);
  // Objects named after the session (a lazy session's Deployment and Service, its config store…).
  for (const [k, list] of index) {
    if (k.endsWith(`\t${session}`) && !k.startsWith('sessions\t')) writes.push(...list.filter((w) => w !== claim));
  }
  return { create, url: url.write, urlByTime: url.byTime, claim, route, writes: [...new Set(writes)] };
}

/**
 * IDE Cloud's writes of a series of launches, before the URL status write (inclusive) and after it,
 * per launch. A write attributed to a launch's session is placed by its session's URL write; any other
 * write received while a launch was in flight (from its POST to its answer; a sequential series leaves
 * none outside) by that launch's. Raw counts: no idle background is subtracted.
 */
export function writesAroundUrl(bench: Bench, launches: readonly LaunchRecord[], until: number) {
  const from = Math.min(...launches.map((l) => l.sentAt));
  // The leader's lease renewals are background (the cost's idle window subtracts them), no launch's.
  const inWindow = bench.audit.writes.filter(
    (w) => w.receivedMs >= from && w.receivedMs <= until && w.resource !== LEADER_LEASE,
  );
  const index = byObject(bench.audit.writes);
  const byKey: Record<string, number> = {};
  const seen = new Set<AuditWrite>();
  let before = 0;
  let after = 0;
  let withoutUrl = 0;
  let byTime = 0;
  const urls: { launch: LaunchRecord; at: number }[] = [];
  for (const launch of launches) {
    const a = attribute(bench, index, launch.session);
    a.writes.forEach((w) => seen.add(w));
    if (!a.url) {
      withoutUrl++;
      continue;
    }
    if (a.urlByTime) byTime++;
    urls.push({ launch, at: a.url.receivedMs });
    for (const w of a.writes) {
      if (w.receivedMs < from || w.receivedMs > until) continue;
      if (w.receivedMs <= a.url.receivedMs) {
        before++;
        byKey[`${w.verb} ${w.resource}`] = (byKey[`${w.verb} ${w.resource}`] ?? 0) + 1;
      } else after++;
    }
  }
  let unattributedBefore = 0;
  let unattributed = 0;
  for (const w of inWindow) {
    if (seen.has(w)) continue;
    unattributed++;
    const during = urls.find(({ launch }) => w.receivedMs >= launch.sentAt && w.receivedMs <= launch.answeredAt);
    if (during && w.receivedMs <= during.at) {
      unattributedBefore++;
      byKey[`${w.verb} ${w.resource} (not attributed)`] = (byKey[`${w.verb} ${w.resource} (not attributed)`] ?? 0) + 1;
    } else after++;
  }
  const n = launches.length - withoutUrl;
  const per = (x: number) => (n ? round(x / n, 2) : null);
  return {
    ideCloudWritesBeforeUrlPerLaunch: per(before + unattributedBefore),
    ideCloudWritesAfterUrlPerLaunch: per(after),
    ideCloudWritesBeforeUrlByVerbAndResource: Object.fromEntries(
      Object.entries(byKey)
        .sort((x, y) => y[1] - x[1])
        .map(([k, v]) => [k, per(v)]),
    ),
    ideCloudWritesNotAttributedPerLaunch: per(unattributed),
    /** Launches whose URL write was not found in the log (left out of the figures above). */
    urlWriteNotFound: withoutUrl,
    urlWriteFoundByTime: byTime,
  };
}

/** The steps of one launch, in order: each from the step before it that happened to its own end. */
export const TIMELINE_STEPS = [
  { key: 'postToCreate', label: 'POST sent (client) → Session create received by the API server' },
  { key: 'createToOperator', label: "create received → the operator's first write for the session received" },
  { key: 'operatorToClaim', label: "operator's first write received → claim answered" },
  { key: 'claimToRoute', label: 'claim answered → route answered' },
  { key: 'routeToUrl', label: 'route answered → URL status write answered' },
  { key: 'urlToAnswer', label: 'URL status write answered → answer read by the client' },
] as const;
export type StepKey = (typeof TIMELINE_STEPS)[number]['key'];

/**
 * The timeline of each launch (audit log timestamps; the client's for the POST and the answer),
 * summarized per step: a step's time runs from the latest of the steps before it that the launch had
 * (a launch without a route write has no `claimToRoute`; its `routeToUrl` starts at the claim). A
 * step that happened before the one listed before it counts 0.
 */
export function timeline(bench: Bench, launches: readonly LaunchRecord[]): Timeline {
  const index = byObject(bench.audit.writes);
  const samples = new Map<StepKey, number[]>(TIMELINE_STEPS.map((s) => [s.key, []]));
  const totals: number[] = [];
  let incomplete = 0;
  for (const launch of launches) {
    const a = attribute(bench, index, launch.session);
    const operator = a.writes
      .filter((w) => w.client === 'ide-cloud-operator')
      .reduce((m, w) => Math.min(m, w.receivedMs), Infinity);
    const at: Record<StepKey, number | undefined> = {
      postToCreate: a.create?.receivedMs,
      createToOperator: Number.isFinite(operator) ? operator : undefined,
      operatorToClaim: a.claim?.answeredMs,
      claimToRoute: a.route?.answeredMs,
      routeToUrl: a.url?.answeredMs,
      urlToAnswer: launch.answeredAt,
    };
    if (!a.create || !a.url) incomplete++;
    let previous = launch.sentAt;
    for (const { key: k } of TIMELINE_STEPS) {
      const t = at[k];
      if (t === undefined) continue;
      samples.get(k)!.push(Math.max(0, t - previous));
      previous = Math.max(previous, t);
    }
    totals.push(launch.answeredAt - launch.sentAt);
  }
  const steps = {} as Record<StepKey, TimelineStep>;
  for (const { key: k } of TIMELINE_STEPS) {
    const s = summarize(samples.get(k)!);
    steps[k] = { n: s.n, p50Ms: s.p50Ms, p95Ms: s.p95Ms, meanMs: s.meanMs };
  }
  const total = summarize(totals);
  const largest = TIMELINE_STEPS.map((s) => s.key)
    .filter((k) => steps[k].n > 0)
    .sort((x, y) => steps[y].meanMs - steps[x].meanMs)[0];
  return { n: launches.length, incomplete, totalP50Ms: total.p50Ms, totalP95Ms: total.p95Ms, steps, largest };
}

// The prose of BENCHMARKS.md: method, comparison with published figures, and why targets are missed.
// Numbers come from the run; the explanations name the operator and service code that causes them.
import type { Results } from './report.js';

type Figures = Record<string, unknown>;

const v = (f: Figures | undefined, key: string): string => {
  const x = f?.[key];
  if (typeof x !== 'number' || !Number.isFinite(x)) return 'n/a';
  return Math.abs(x) >= 100 ? String(Math.round(x)) : String(Math.round(x * 10) / 10);
};

export function ANALYSIS(r: Results): string {
  const s = r.sizes as Record<string, unknown>;
  const levels = (s.scaleLevels as number[] | undefined)?.join(' → ') ?? '';
  const first = r.scale?.[0];
  const last = r.scale?.at(-1);
  const settings = Object.entries(r.operatorSettings)
    .map(([k, x]) => `${k}=${String(x)}`)
    .join(', ');
  const cost = (c: Figures | undefined) => breakdown(c?.perLaunchByVerbAndResource, 14);
  return `## Method

- **Cluster.** The benchmark starts its own control plane in a temporary directory
  (\`scripts/cluster/control-plane.ts\`: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
  and kwok with one fake node). Pods become Running and Ready without running anything, so **pod
  start-up (image pull, container start, IDE boot) is not measured**: every figure is the control
  plane's part. kwok gives pods loopback addresses, so one HTTP server on \`0.0.0.0:<port>\` plays
  the data bridge of every pod (GET /health 200, POST /data 200).
${processes(r, settings)}
${memoryAtStart(r)}
- **Launches** are \`POST /service\` with \`ephemeral: true\` (no claim is mounted), timed by the client
  from the request to the URL in the answer. One warm pool of ${v(s, 'pool')} instances serves the
  eager scenarios: the ${v(s, 'eagerSequential')} sequential launches; then, with those sessions ended
  and the pool refilled, the ${v(s, 'eagerConcurrent')} concurrent launches (all sent at once), the
  cost launches, and the throughput burst, which takes the rest of the pool
  (${v(r.claimThroughput, 'launches')} launches, ${v(s, 'burstConcurrency')} in flight) until it is
  exhausted. The pool is never exhausted before the burst. Lazy launches
  use an app definition without a warm pool (start strategy \`lazy-fallback\`): the operator creates a
  Deployment and Service and the launch returns once kwok reports the pod Ready.
- **Timelines** of sessions and pods come from this process's own watches (millisecond timestamps
  when each change is first seen), not from Kubernetes timestamps, which have 1 s granularity.
- **Cost per launch** (4) is counted in the window from just before ${v(s, 'costLaunches')}
  sequential launches to 2 s after the last one answered (for the work a launch sets off after its
  answer: injection, events, pool status), in two ways. **IDE Cloud's own requests**
  (\`ideCloud*PerLaunch\`, the target's figure) come from kube-apiserver's audit log, which the
  benchmark turns on (\`startControlPlane\` with \`auditLog\`: level Metadata for every request,
  RequestReceived stage omitted, JSON lines, batch mode): only the requests whose \`userAgent\` starts
  with \`ide-cloud-operator\` or \`ide-cloud-service\` (each component names itself on every request,
  watches included), so the service's Session create counts, and the controller manager's, the
  scheduler's, kwok's and this benchmark's requests do not. Reads are get/list, writes
  create/update/patch/delete/deletecollection, subresources included; watches are counted apart (a
  launch opens none, and the informers renew theirs every few minutes whatever happens). The window is cut in the log itself: each snapshot's \`GET /metrics\` carries a User-Agent of
  its own, and the requests between the two snapshots' log entries are counted (none twice, none
  missed; an audit event lost to a full buffer would show in \`apiserver_audit_error_total\`, recorded
  as \`auditEventsLost\`: ${lost(r)}). The JSON breaks them down per \`verb resource[/subresource]\`
  (\`ideCloudWritesPerLaunchByVerbAndResource\`), per component and by failed write. Work a launch sets
  off later than 2 s after the last answer (e.g. a reconcile requeued for 5 s) is not counted. The idle
  window (${Math.round(Math.min(10_000, Number(s.idleWindowMs)) / 1000)} s, just before the launches)
  starts once the operator and the service have made no request for ${v(s, 'quietMs')} ms (the trailing
  work of the preceding scenario is over; at most 60 s of waiting); their own requests in it are
  measured the same way and subtracted, scaled to the launch window's length, per component, verb and
  resource and clamped at 0, the totals being the sums (${v(r.costEager, 'ideCloudBackgroundReadsPerSec')}
  reads/s and ${v(r.costEager, 'ideCloudBackgroundWritesPerSec')} writes/s before the eager launches,
  ${v(r.costLazy, 'ideCloudBackgroundReadsPerSec')} and ${v(r.costLazy, 'ideCloudBackgroundWritesPerSec')}
  before the lazy ones; the JSON has them by verb and resource, and the figures before subtraction as
  \`ideCloudRaw*\`). **All clients together**
  come from the difference of kube-apiserver's \`apiserver_request_total\` (and
  \`apiserver_response_sizes_sum\` for bytes read) over the same window, minus the background rate of
  the idle window (reads GET/LIST/WATCH, writes POST/PUT/PATCH/APPLY/DELETE).
- **Scale** (5): sessions are created directly as Session resources, the way the service does
  (${v(s, 'fillConcurrency')} creates in flight), of an app definition without a pool (so each
  is a lazy session with its own Deployment, Service, pod and Ingress path), in steps ${levels},
  within a time budget of ${Math.round(Number(s.scaleBudgetMs) / 1000)} s for the whole scenario (not
  counting the waits for quiet before the idle windows). At
  each step: a wait of at most ${Math.round(Number(s.scaleSettleMs) / 1000)} s for the new sessions to
  run (the JSON records how many did: \`fillRunningAfterSettle\`, \`sessionsRunning\`); an idle window
  of ${Math.round(Number(s.idleWindowMs) / 1000)} s, once IDE Cloud has made no request for ${v(s, 'quietMs')} ms
  or after at most 15 s of waiting for that (\`quietBeforeIdleReached\`) (operator CPU and RSS, background API rate; ${
    r.runtime
      ? 'the operator renews its watches from the last resourceVersion every `rewatchIntervalMs`, its default, without relisting'
      : "the\n  operator's resync interval is the default 30 s"
  }); ${v(s, 'scaleLaunches')} new eager launches 1 s
  apart (launch timeout 45 s) with their API cost net of that background (IDE Cloud's own from the
  audit log, as in 4);
  ${v(s, 'scaleProbes')} probe sessions 500 ms apart (reconcile latency proxy: Session seen → first
  status write seen, which includes the time the key waits in the operator's queue); and
  ${v(s, 'scaleListCalls')} calls of \`GET /service/session/{appId}/{user}\` for random users holding
  one session each.
- **Injection** (6): ${v(s, 'injectionLaunches')} workspace-backed eager launches (the warm instance's
  pod restarts with the workspace claim), timed from the new pod's Ready (first seen) to
  \`EnvInjected=True\` (first seen); the same from Kubernetes timestamps is in the JSON
  (\`podReadyToInjectedK8sTimestamps*\`, 1 s granularity, so it can be off by up to a second either way).
  For ephemeral launches the pod was Ready long before; there the delay from the reservation to
  \`EnvInjected\` is given.

## Comparison with published figures

| system | median | p99 | throughput |
|---|---|---|---|
| a Kubernetes warm-pool sandbox controller (published) | ~320 ms per warm claim | < 830 ms | tops out near 10 claims/s |
| this API's upstream (published behaviour) | polls for the session URL in 0.5 s steps at best | | |
| IDE Cloud, eager, sequential (this run) | ${v(r.eagerSequential, 'p50Ms')} ms | ${v(r.eagerSequential, 'p99Ms')} ms | |
| IDE Cloud, eager, ${v(s, 'eagerConcurrent')} concurrent (this run) | ${v(r.eagerConcurrent, 'p50Ms')} ms | ${v(r.eagerConcurrent, 'p99Ms')} ms | |
| IDE Cloud, burst of ${v(r.claimThroughput, 'launches')} (this run) | ${v(r.claimThroughput, 'latencyP50Ms')} ms | ${v(r.claimThroughput, 'latencyP99Ms')} ms | ${v(r.claimThroughput, 'launchesPerSec')} launches/s |

The published figures come from other hardware and include a real node; ours exclude pod start-up
but ran on ${r.machine.nproc} shared cores with the whole control plane, the operator, the service and
the load generator on them. The service never polls: it answers on its Session cache's event as soon
as the operator writes the URL, so there is no 0.5 s step.

${WHY(r, first, last, cost)}
`;
}

/** Method: which processes ran, and how. */
/** `verb resource count` pairs of a breakdown, largest first. */
function breakdown(map: unknown, limit = 40): string {
  const entries = Object.entries((map as Record<string, number> | undefined) ?? {}).slice(0, limit);
  return entries.length ? entries.map(([k, x]) => `${k} ${x}`).join(', ') : 'none';
}

/** Method: when the operator's memory "at start" is read. */
function memoryAtStart(r: Results): string {
  const a = r.operatorAtStart;
  if (typeof a?.quietReached !== 'boolean') {
    return `- **Memory at start** (operator and service RSS) was read 3 s after they started, before the
  warm pool was created: it includes the operator's start-up peak.`;
  }
  return `- **Memory at start** (operator and service RSS) is read once the operator is idle after start:
  its caches synced and the warm pool of ${v(r.poolFill, 'instances')} instances filled (no session yet),
  then no API request of the operator's or the service's in the audit log and the operator under 1 % of a core (from \`/proc\`) for
  ${v(r.sizes, 'quietMs')} ms: ${
    a.quietReached === true
      ? `reached ${v(a, 'msAfterPoolFilled')} ms after the pool was full`
      : `**not reached within ${v(a, 'msAfterPoolFilled')} ms after the pool was full; read then**`
  }. Not the start-up peak, which a reading seconds after start catches.`;
}

/** Audit events lost in the cost windows, in words. */
function lost(r: Results): string {
  const n = [r.costEager, r.costLazy, ...(r.scale ?? [])].reduce(
    (sum, f) => sum + (typeof f?.auditEventsLost === 'number' ? f.auditEventsLost : 0),
    0,
  );
  return n ? `**${n} in this run, so IDE Cloud's figures are lower bounds**` : 'none in this run';
}

/** IDE Cloud's own requests per launch of a cost scenario, in words. */
function own(c: Figures | undefined): string {
  const byClient = (c?.ideCloudPerLaunchByClient ?? {}) as Record<string, { reads: number; writes: number }>;
  const op = byClient['ide-cloud-operator'];
  const svc = byClient['ide-cloud-service'];
  const failed = breakdown(c?.ideCloudFailedWritesPerLaunch);
  return `${v(c, 'ideCloudWritesPerLaunch')} writes and ${v(c, 'ideCloudReadsPerLaunch')} reads per launch (operator ${v(op, 'writes')} writes, ${v(op, 'reads')} reads; service ${v(svc, 'writes')} writes, ${v(svc, 'reads')} reads); the writes by verb and resource: ${breakdown(c?.ideCloudWritesPerLaunchByVerbAndResource)}${failed === 'none' ? '' : ` (answered with an error: ${failed})`}`;
}

function processes(r: Results, settings: string): string {
  const rt = r.runtime;
  if (!rt) {
    // Runs before the benchmark built the server ran TypeScript through tsx.
    return `- **Processes.** The operator runs as a child process (\`node --import tsx server/src/operator/main.ts\`,
  configured through the \`OPERATOR_ENV\` variables: eager start on, defaults otherwise except a
  faster data-bridge health poll: ${settings}); the REST service runs as a second child process
  (\`server/src/service/main.ts\`, anonymous mode, \`sessionsPerUser\` 1, so every launch has its own
  user). Their RSS and CPU come from \`/proc/<pid>\`. Both run TypeScript through tsx, as \`npm start\`
  does; a compiled image would use somewhat less memory.`;
  }
  const uncommitted = rt.uncommittedServerFiles.length
    ? ` The build included uncommitted changes to ${rt.uncommittedServerFiles.length} server file(s) (listed in the JSON, \`runtime.uncommittedServerFiles\`).`
    : '';
  return `- **Processes.** The operator and the REST service run built, as the image runs them
  (\`images/server/Dockerfile\`): each run deletes \`server/dist\` and builds it again
  (\`${rt.command}\`, ${Math.round(rt.buildMs / 1000)} s), then starts the operator as
  \`${rt.commandLines.operator ?? `node ${rt.entryPoints.operator}`}\` and the service as
  \`${rt.commandLines.service ?? `node ${rt.entryPoints.service}`}\` (command lines read from
  \`/proc/<pid>/cmdline\`; each is the \`CMD\` of its stage in the Dockerfile, node flags included, read from
  the Dockerfile by the benchmark), Node ${rt.nodeVersion}, \`NODE_ENV=${rt.nodeEnv}\`.${uncommitted} The operator is configured through the \`OPERATOR_ENV\` variables: eager start on,
  defaults otherwise except a faster data-bridge health poll: ${settings}. The service runs in
  anonymous mode, \`sessionsPerUser\` 1, so every launch has its own user. Their RSS and CPU come
  from \`/proc/<pid>\`.`;
}

/** The curve in words: how many sessions ran, and where launches and probes stopped answering. */
function curve(r: Results): string {
  const steps = r.scale ?? [];
  const parts = steps.map((x) => {
    const probes = v(x, 'reconcileProbeP50Ms');
    const launches = v(x, 'eagerLaunchP50Ms');
    return `at ${v(x, 'sessions')} sessions (${v(x, 'sessionsRunning')} Running), the probe's first status p50 ${probes === 'n/a' ? `none within 60 s` : `${probes} ms`} and a new eager launch p50 ${launches === 'n/a' ? `none within its 45 s timeout` : `${launches} ms`}`;
  });
  return parts.length ? `The curve: ${parts.join('; ')}.` : '';
}

/** Where the targets stand and why; written for the code at the measured commit. */
function WHY(
  r: Results,
  first: Figures | undefined,
  last: Figures | undefined,
  cost: (c: Figures | undefined) => string,
): string {
  const busy = Number(last?.operatorIdleCpuPercent) >= 60;
  return `## Where the targets stand, and why

**What a warm launch costs now.** The service checks the request against its informer caches (app
definition, limits), creates the Session (its only API call of the launch) and waits for the URL on its
Session cache's events. The operator's informer brings the Session to a worker (16 by default), which
reads everything from the operator's caches (\`server/src/operator/cache.ts\`) and makes four sequential
writes before the URL is known: the reservation (\`PUT\` of the warm instance's Deployment with the
resourceVersion it read; candidates are rotated by session name, so concurrent launches rarely collide),
one metadata patch of the Session (finalizer and the spec's start-strategy annotations), the route (a
JSON patch appending the path to the shared Ingress; paths asked for while one patch is on its way go
together in the next), and the status with the URL. The data injection starts before the route and
usually ends after the status write, so a second status write records \`EnvInjected\`. Pool counts in the
app definition's status are written at most every 2 s. From this run's watches: created → first
status write p50 ${v(r.eagerSequential, 'createdToFirstStatusP50Ms')} ms, created → Running p50
${v(r.eagerSequential, 'createdToRunningP50Ms')} ms for sequential launches, and
${v(r.eagerConcurrent, 'createdToRunningP50Ms')} ms (p99 ${v(r.eagerConcurrent, 'createdToRunningP99Ms')} ms)
for ${v(r.sizes, 'eagerConcurrent')} concurrent ones.

**Latency at 100 concurrent and claims per second.** Neither the operator nor the service is the
bottleneck here: the operator's process is mostly idle during a burst (a CPU profile of the operator over a
scratch run with a burst of 100 launches found it idle 87 % of the time), while kube-apiserver uses
more than one of the machine's two cores. A burst of ${v(r.sizes, 'eagerConcurrent')} launches needs about
${v(r.sizes, 'eagerConcurrent')} × ${v(r.costEager, 'ideCloudWritesPerLaunch')} writes of IDE Cloud's, plus the
reads and writes of the controllers and kwok that the same changes set off, all through one API server
and one etcd on two shared cores, which also run the controller manager, kwok, the operator, the
service and the load generator. A p50 of 50 ms at 100 concurrent would need those several hundred
writes to be done in about 100 ms; this machine does a few hundred per second. The same bound limits the
sustained claims: ${v(r.claimThroughput, 'launchesPerSec')} launches/s answered to the client and
${v(r.claimThroughput, 'claimsPerSecOperator')} reservations/s in the operator. What would move it
further is fewer writes on the critical path (e.g. the service creating the Session with its finalizer
and route annotation, so the operator's metadata patch could go in parallel with the route) and,
above all, a control plane with its own cores.

**API writes per eager launch.** IDE Cloud's own requests, from the audit log: ${own(r.costEager)}.
The five writes every warm launch needs are the Session create, the reservation, the metadata patch,
the route and the status with the URL; the sixth is the \`EnvInjected\` status once the data bridge has
the values; anything above six is the pool-count write, shared by the launches of its 2 s. A launch that
goes as planned records no Event. All clients together (\`apiserver_request_total\`, including the
controllers' and kwok's work for the launches) made ${v(r.costEager, 'writesPerLaunch')} writes and
${v(r.costEager, 'readsPerLaunch')} reads (${v(r.costEager, 'readKiBPerLaunch')} KiB) per launch, net of
the background of ${v(r.costEager, 'backgroundRequestsPerSec')} requests/s measured just before: ${cost(r.costEager)}.
Lazy launches add the Deployment and the Service (applied once; again only when the cache lacks it),
the \`LazyStart\` Event and a status write while the pod starts; IDE Cloud's own: ${own(r.costLazy)}.
All clients: ${v(r.costLazy, 'writesPerLaunch')} writes, ${v(r.costLazy, 'readsPerLaunch')} reads per
launch: ${cost(r.costLazy)}.

**Scale.** ${curve(r)} From ${v(first, 'sessions')} to ${v(last, 'sessions')} sessions in place,
operator RSS went from ${v(first, 'operatorRssMb')} MB to ${v(last, 'operatorRssMb')} MB (peak
${v(last, 'operatorPeakRssMb')} MB; idle after start, with the warm pool of ${v(r.poolFill, 'instances')} filled
and no session, ${v(r.operatorAtStart, 'rssMb')} MB; a bare Node process holds 40 MB), its CPU in the idle window from
${v(first, 'operatorIdleCpuPercent')} % to ${v(last, 'operatorIdleCpuPercent')} % of one core${
    busy ? " (busy: the idle window still catches the filler sessions' trailing work)" : ''
  }. Two things keep the memory down. The operator runs as one bundled file
(\`server/src/build/bundle.ts\`): the Kubernetes client library, imported whole, loads its entire
generated API, thousands of modules whose source V8 keeps (importing it and making three API clients:
119 MB RSS, 31 MB of heap; from a bundle: 69 MB, 12 MB). And it runs with smaller semi-spaces
(\`--max-semi-space-size\` in its image's command, above): a burst grows V8's young generation to its
default 2 × 16 MB, which stays committed while the idle operator has a few MB in it. The caches hold every Session, AppDefinition, Workspace and the managed Deployments, Services and
Ingresses, without managed fields; of Deployments other than warm instances only metadata and status
are kept. Nothing is relisted while the watches hold, so an idle operator makes no API request and a
new launch does not queue behind periodic work. The launch's own cost does not depend on the number of
sessions (every read is a cache read; its writes are the same few objects), with one exception: the
shared Ingress holds one path per session, so each route patch rewrites an object that grows with the
sessions (the spec names one shared route per app definition). \`GET /service/session/{appId}/{user}\` is
answered from the service's Session cache; its p99 per step was
${(r.scale ?? []).map((x) => `${v(x, 'listP99Ms')} ms`).join(', ')}.

**Injection.** Measured from the new pod's Ready: p50 ${v(r.injectionWorkspace, 'podReadyToInjectedP50Ms')} ms,
p99 ${v(r.injectionWorkspace, 'podReadyToInjectedP99Ms')} ms. The chain after the pod turns Ready: the
controller manager updates the ReplicaSet and Deployment status; the Deployment event enqueues the
session; its reconcile sees the instance ready and only then starts the injector (\`injection.ts\`,
so values never reach a recycled instance's previous pod); the injector lists the instance's pods and
calls GET /health, repeating every ${String(r.operatorSettings.bridgeHealthIntervalMs ?? 1000)} ms
until a Ready pod answers (1000 ms by default), then POSTs once; the end enqueues the session, and a
reconcile writes the \`EnvInjected\` condition. Every hop is an event, not a timer, except the health poll.

${
  r.scaleStoppedBefore
    ? `**The scale curve ends at ${v(last, 'sessions')} sessions**: the step of ${r.scaleStoppedBefore} sessions did not fit in the scale scenario's time budget on this machine.\n\n`
    : ''
}**Caveats.** The all-client per-launch figures are net of a background (the controllers, kwok, the
benchmark's watches) that a real cluster would have in another shape; IDE Cloud's own figures are
counted by User-Agent from the audit log and do not depend on it. The benchmark's app definitions request 10m CPU and 16M
memory per IDE container, so the one fake node (64 CPUs) holds all pods. The lazy sequential
scenario has ${v(r.sizes, 'lazySequential')} launches (not 200) to keep the run's length. The machine was shared with other work (load average ${r.machine.loadAverage1m} at the
start, ${r.machine.loadAverage1mEnd ?? 'n/a'} at the end on ${r.machine.nproc} cores), and the API server,
etcd, the controllers, the operator, the service and the load generator all ran on the same cores:
absolute latencies are inflated compared with a dedicated control plane, but the shape (what grows
with the session count, how many calls a launch makes) does not depend on it.`;
}

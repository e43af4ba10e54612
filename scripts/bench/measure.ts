// Measurements several scenarios share: waiting for the warm pool or for quiet, ending sessions and
// timing the refill, the API cost of a series of launches, and timelines from the harness's watches.
import { diff, perLaunch, type ApiDelta, type ApiMetrics, type ApiSnapshot } from './apimetrics.js';
import { APPS } from './config.js';
import type { Bench } from './harness.js';
import { writesAroundUrl, type LaunchRecord } from './launches.js';
import type { Progress } from './progress.js';
import { processStats, round, sleep, summarize, until } from './util.js';

export async function waitPool(
  bench: Bench,
  progress: Progress,
  app: string,
  size: number,
  timeoutMs = 900_000,
): Promise<void> {
  await until(
    `${size} free ready instances of ${app}`,
    () => {
      const free = bench.freeReadyInstances(app);
      progress.note(`${free}/${size} free and ready`);
      return free >= size;
    },
    timeoutMs,
    100,
  );
}

/** Ends every eager session and times the pool's return to full strength (ms). */
export async function endAndRefill(bench: Bench, progress: Progress, poolSize: number): Promise<number> {
  const t0 = Date.now();
  await bench.deleteSessionsOf(APPS.eager);
  await waitPool(bench, progress, APPS.eager, poolSize);
  return Date.now() - t0;
}

/** Start strategies the sessions of `launches` ended up with: `strategy_<name>` → count. */
export function strategies(bench: Bench, launches: readonly Pick<LaunchRecord, 'session'>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { session } of launches) {
    const key = `strategy_${bench.sessions.get(session)?.strategy ?? 'none'}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/**
 * Where a launch's time goes, from the harness's session watch: created → first status write by the
 * operator, created → Running with URL; the rest of the client latency is the service's own work.
 */
export function breakdown(bench: Bench, launches: readonly Pick<LaunchRecord, 'session'>[]): Record<string, number> {
  const first: number[] = [];
  const running: number[] = [];
  for (const { session } of launches) {
    const t = bench.sessions.get(session);
    if (t?.added && t.firstStatus) first.push(t.firstStatus - t.added);
    if (t?.added && t.running) running.push(t.running - t.added);
  }
  const a = summarize(first);
  const b = summarize(running);
  return {
    createdToFirstStatusP50Ms: a.p50Ms,
    createdToFirstStatusP99Ms: a.p99Ms,
    createdToRunningP50Ms: b.p50Ms,
    createdToRunningP99Ms: b.p99Ms,
  };
}

/**
 * Waits until neither the operator nor the service has made an API request for `quietMs` (their
 * requests in the audit log) and, with `cpu`, the operator has used under 1 % of a core in that time
 * (from /proc); at most `timeoutMs`.
 */
export async function waitQuiet(
  bench: Bench,
  options: { quietMs: number; timeoutMs: number; cpu: boolean },
): Promise<{ reached: boolean; waitedMs: number }> {
  const { quietMs, timeoutMs } = options;
  const t0 = Date.now();
  const cpu: { at: number; seconds: number }[] = [];
  for (;;) {
    await bench.audit.poll();
    const now = Date.now();
    const seconds = processStats(bench.operatorPid()).cpuSeconds;
    cpu.push({ at: now, seconds });
    const base = cpu.findLast((x) => now - x.at >= quietMs);
    const noRequests = Object.values(bench.audit.lastRequestAt).every((at) => now - at >= quietMs);
    // /proc counts in 10 ms ticks: allow one tick besides the 1 %.
    const cpuQuiet = !options.cpu || (base !== undefined && seconds - base.seconds <= (0.01 * quietMs) / 1000 + 0.01);
    if (noRequests && cpuQuiet) return { reached: true, waitedMs: now - t0 };
    if (now - t0 > timeoutMs) return { reached: false, waitedMs: now - t0 };
    await sleep(250);
  }
}

/**
 * API requests of `launches` sequential launches, net of the background measured just before: all
 * clients (apiserver_request_total) and IDE Cloud's own (the audit log, by User-Agent).
 */
export async function launchCost(
  bench: Bench,
  api: ApiMetrics,
  options: { launches: number; idleMs: number; quietMs: number },
  launch: (i: number) => Promise<LaunchRecord>,
): Promise<Record<string, unknown>> {
  const { launches } = options;
  // The idle window starts once the trailing work of the preceding launches is over, so that what it
  // measures (and what is subtracted) is the background, not their last reconciles.
  const quiet = await waitQuiet(bench, { quietMs: options.quietMs, timeoutMs: 60_000, cpu: false });
  const idle0 = await api.snapshot();
  await sleep(options.idleMs);
  const idle1 = await api.snapshot();
  const background = { delta: diff(idle0, idle1), seconds: (idle1.at - idle0.at) / 1000 };
  const before: ApiSnapshot = await api.snapshot();
  const records: LaunchRecord[] = [];
  for (let i = 0; i < launches; i++) records.push(await launch(i));
  // Work a launch sets off after its answer (injection, events, pool status) belongs to it too.
  await sleep(2000);
  const after = await api.snapshot();
  // The same writes of IDE Cloud's own, before the URL status write and after it (launches.ts).
  const aroundUrl = writesAroundUrl(bench, records, after.at);
  const delta: ApiDelta = diff(before, after);
  const net = perLaunch(delta, launches, background, (after.at - before.at) / 1000);
  const own = net.own!;
  return {
    launches,
    // All clients (apiserver_request_total), net of the background.
    readsPerLaunch: net.reads,
    writesPerLaunch: net.writes,
    readKiBPerLaunch: net.readKiB,
    rawReadsPerLaunch: round(delta.reads / launches, 1),
    rawWritesPerLaunch: round(delta.writes / launches, 1),
    backgroundRequestsPerSec: round((background.delta.reads + background.delta.writes) / background.seconds),
    perLaunchByVerbAndResource: net.byKey,
    // IDE Cloud's own: the operator's and the service's requests in the audit log (by User-Agent),
    // net of their own requests in the idle window just before (per client, verb and resource).
    ideCloudReadsPerLaunch: own.reads,
    // Every write of IDE Cloud's own, then apart: the launch's own writes and its Events.
    ideCloudWritesPerLaunch: own.writes,
    ideCloudWritesWithoutEventsPerLaunch: own.writesWithoutEvents,
    ideCloudEventWritesPerLaunch: own.eventWrites,
    ...aroundUrl,
    ideCloudRawReadsPerLaunch: round((delta.own?.reads ?? 0) / launches, 2),
    ideCloudRawWritesPerLaunch: round((delta.own?.writes ?? 0) / launches, 2),
    ideCloudPerLaunchByClient: own.byClient,
    ideCloudWritesPerLaunchByVerbAndResource: own.writesByKey,
    ideCloudReadsPerLaunchByVerbAndResource: own.readsByKey,
    ideCloudFailedWritesPerLaunch: own.failedWritesByKey,
    ideCloudBackgroundReadsPerSec: own.backgroundReadsPerSec,
    ideCloudBackgroundWritesPerSec: own.backgroundWritesPerSec,
    ideCloudBackgroundWritesPerSecByVerbAndResource: own.backgroundWritesPerSecByVerbAndResource,
    ideCloudBackgroundReadsPerSecByVerbAndResource: own.backgroundReadsPerSecByVerbAndResource,
    auditEventsLost: own.auditEventsLost,
    quietBeforeIdleReached: quiet.reached,
    quietBeforeIdleWaitMs: quiet.waitedMs,
  };
}

/**
 * CPU milliseconds per launch of each process of the run (Bench.cpuSeconds) between two readings,
 * and `total`, their sum: with the machine's cores full, the launch rate is what these leave.
 */
export function cpuMsPerLaunch(
  before: Record<string, number>,
  after: Record<string, number>,
  launches: number,
): Record<string, number> {
  const perLaunch: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(after)) {
    if (name in before) perLaunch[name] = round(((seconds - before[name]!) * 1000) / Math.max(1, launches), 1);
  }
  perLaunch.total = round(
    Object.values(perLaunch).reduce((a, b) => a + b, 0),
    1,
  );
  return perLaunch;
}

/** Peak resident set size of a process in MB (VmHWM). */
export async function peakRssMb(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round((Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024) * 10) / 10;
}

// Small helpers of the benchmark: percentiles, /proc readings, waiting, rounding.
import { readFileSync } from 'node:fs';
import { isApiUnavailable } from '../../server/src/kube/client.js';

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

export interface Summary {
  n: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

export function summarize(values: readonly number[]): Summary {
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    n: values.length,
    p50Ms: round(percentile(values, 50)),
    p95Ms: round(percentile(values, 95)),
    p99Ms: round(percentile(values, 99)),
    maxMs: round(values.length ? Math.max(...values) : NaN),
    meanMs: round(values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN),
  };
}

/** Each round's p50 (ms), of a mode measured in rounds. */
export const roundP50s = (rounds: readonly (readonly number[])[]): number[] => rounds.map((r) => summarize(r).p50Ms);

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** `{ p50Ms: 1 }` with name `latency` → `{ latencyP50Ms: 1 }`. */
export function prefix<T extends object>(name: string, summary: T): Record<string, number> {
  return Object.fromEntries(
    Object.entries(summary).map(([k, v]) => [`${name}${k[0]!.toUpperCase()}${k.slice(1)}`, v as number]),
  );
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it returns true; throws after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Calls `removeRest` (delete what is left, answer whether nothing was) until nothing is left; an API
 * server too busy to answer is asked again. The API server deletes a collection item by item within
 * the call: thousands of objects on a slow machine outlast one call's deadline.
 */
export function untilRemoved(what: string, removeRest: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  return until(
    `${what} to be gone`,
    () =>
      removeRest().catch((error: unknown) => {
        if (isApiUnavailable(error)) return false;
        throw error;
      }),
    timeoutMs,
    500,
  );
}

/** Runs `task(i)` for i in 0..n-1 with at most `concurrency` in flight. */
export async function pool<T>(n: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(n);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
  return results;
}

const CLOCK_TICKS = 100; // getconf CLK_TCK on Linux

/** Resident set size in MB and CPU seconds (user + system) of a process, from /proc. */
export function processStats(pid: number): { rssMb: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  return { rssMb: Math.round((rssKb / 1024) * 10) / 10, cpuSeconds };
}

export function machine(): { nproc: number; memoryGiB: number; cpuModel: string; loadAverage1m: number } {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const loadavg = readFileSync('/proc/loadavg', 'utf8');
  return {
    nproc: (cpuinfo.match(/^processor\s*:/gm) ?? []).length,
    memoryGiB: Math.round((Number(/MemTotal:\s+(\d+)/.exec(meminfo)?.[1] ?? 0) / 1024 / 1024) * 10) / 10,
    cpuModel: /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    loadAverage1m: Number(loadavg.split(' ')[0]),
  };
}

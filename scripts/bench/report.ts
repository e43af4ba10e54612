// Turns the results of one run into the Markdown table (stdout), BENCHMARKS.json and BENCHMARKS.md.
// `tsx scripts/bench/report.ts` renders BENCHMARKS.md again from BENCHMARKS.json (no new run).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ANALYSIS } from './analysis.js';

type Figures = Record<string, unknown>;

export interface Results {
  commit: string;
  date: string;
  machine: { nproc: number; memoryGiB: number; cpuModel: string; loadAverage1m: number; loadAverage1mEnd?: number };
  benchScale: number;
  sizes: Figures;
  operatorSettings: Figures;
  /** How the operator and service ran (absent in runs before they ran compiled: those used tsx). */
  runtime?: Runtime;
  runSeconds?: number;
  poolFill?: Figures;
  operatorAtStart?: Figures;
  eagerSequential?: Figures;
  eagerConcurrent?: Figures;
  lazySequential?: Figures;
  lazyConcurrent?: Figures;
  claimThroughput?: Figures;
  costEager?: Figures;
  costLazy?: Figures;
  injectionEphemeral?: Figures;
  injectionWorkspace?: Figures;
  scale?: Figures[];
  /** The first scale step not reached within the time budget. */
  scaleStoppedBefore?: number;
  bridgeRequests?: Figures;
}

export interface Runtime {
  /** The build at the start of the run, e.g. npm run build --workspace server. */
  command: string;
  buildMs: number;
  nodeVersion: string;
  uncommittedServerFiles: string[];
  nodeEnv: string;
  nodeFlags: string[];
  entryPoints: { operator: string; service: string };
  /** Read from /proc/<pid>/cmdline of the measured processes. */
  commandLines: { operator?: string; service?: string };
}

interface Target {
  what: string;
  figure: string;
  value: number | undefined;
  target: string;
  met: boolean | undefined;
  /** How far off, in words, when missed. */
  by?: string;
}

const num = (f: Figures | undefined, key: string): number | undefined => {
  const v = f?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};

function fmt(v: number | undefined | null, unit = ''): string {
  if (v === undefined || v === null || !Number.isFinite(v)) return 'n/a';
  const text = Math.abs(v) >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10);
  return `${text}${unit}`;
}

export function targets(r: Results): Target[] {
  const last = r.scale?.at(-1);
  const first = r.scale?.[0];
  const atMost = (what: string, figure: string, value: number | undefined, limit: number, unit: string): Target => ({
    what,
    figure,
    value,
    target: `≤ ${limit}${unit}`,
    met: value === undefined ? undefined : value <= limit,
    by:
      value !== undefined && value > limit
        ? // A small excess keeps two decimals, not rounded to "0 over".
          `${value - limit < 0.1 ? (value - limit).toFixed(2) + unit : fmt(value - limit, unit)} over (×${fmt(value / limit)})`
        : undefined,
  });
  const atLeast = (what: string, figure: string, value: number | undefined, limit: number, unit: string): Target => ({
    what,
    figure,
    value,
    target: `≥ ${limit}${unit}`,
    met: value === undefined ? undefined : value >= limit,
    by:
      value !== undefined && value < limit
        ? `${fmt(limit - value, unit)} short (${fmt((value / limit) * 100)}%)`
        : undefined,
  });
  // IDE Cloud's own requests (audit log): the all-client totals are dominated by the background at larger sizes.
  const ownAt = (s: Figures | undefined) => {
    const reads = num(s, 'apiIdeCloudReadsPerLaunch');
    const writes = num(s, 'apiIdeCloudWritesPerLaunch');
    return reads === undefined || writes === undefined ? undefined : reads + writes;
  };
  const growth = (a: number | undefined, b: number | undefined) => (a && b !== undefined ? b / a : undefined);
  const requestGrowth = growth(ownAt(first), ownAt(last));
  // A step where no eager launch answered within its timeout has no cost per launch: not flat.
  const stalled = (r.scale ?? []).find((x) => (num(x, 'eagerLaunchN') ?? 0) === 0);
  const flat = stalled ? false : requestGrowth !== undefined ? requestGrowth <= 1.25 : undefined;
  return [
    atMost('eager launch p50, 100 concurrent', 'eagerConcurrent.p50Ms', num(r.eagerConcurrent, 'p50Ms'), 50, ' ms'),
    atMost('eager launch p99, 100 concurrent', 'eagerConcurrent.p99Ms', num(r.eagerConcurrent, 'p99Ms'), 250, ' ms'),
    atLeast(
      'claims per second, sustained',
      'claimThroughput.launchesPerSec',
      num(r.claimThroughput, 'launchesPerSec'),
      100,
      '/s',
    ),
    // IDE Cloud's own writes, from the audit log (the operator's and service's User-Agent): the
    // all-client total depends on what the controllers and kwok do meanwhile.
    atMost(
      "API writes per eager launch (IDE Cloud's own)",
      'costEager.ideCloudWritesPerLaunch',
      num(r.costEager, 'ideCloudWritesPerLaunch'),
      6,
      '',
    ),
    atMost(
      `operator RSS at ${num(last, 'sessions') ?? '?'} sessions`,
      'scale[-1].operatorRssMb',
      num(last, 'operatorRssMb'),
      150,
      ' MB',
    ),
    atMost(
      `list p99 at ${num(last, 'sessions') ?? '?'} sessions`,
      'scale[-1].listP99Ms',
      num(last, 'listP99Ms'),
      20,
      ' ms',
    ),
    {
      what: `cost per launch flat (${num(first, 'sessions') ?? '?'} → ${num(last, 'sessions') ?? '?'} sessions)`,
      figure: 'scale[].apiIdeCloudReadsPerLaunch + apiIdeCloudWritesPerLaunch',
      value: requestGrowth,
      target: "IDE Cloud's own requests ×≤ 1.25",
      met: flat,
      by: stalled
        ? `no eager launch answered within its timeout from ${fmt(num(stalled, 'sessions'))} sessions on, so no cost per launch there`
        : flat === false
          ? `×${fmt(requestGrowth)} (${fmt(ownAt(first))} → ${fmt(ownAt(last))} requests per launch)`
          : undefined,
    },
    atMost(
      'injection after pod Ready (p99)',
      'injectionWorkspace.podReadyToInjectedP99Ms',
      num(r.injectionWorkspace, 'podReadyToInjectedP99Ms'),
      1500,
      ' ms',
    ),
  ];
}

function latencyRow(name: string, f: Figures | undefined): string {
  return `| ${name} | ${fmt(num(f, 'n'))} | ${fmt(num(f, 'p50Ms'))} | ${fmt(num(f, 'p95Ms'))} | ${fmt(num(f, 'p99Ms'))} | ${fmt(num(f, 'maxMs'))} |`;
}

/** The Markdown table printed at the end of a run. */
export function table(r: Results): string {
  const lines = [
    '| scenario | n | p50 ms | p95 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|',
    latencyRow('1 eager launch, sequential', r.eagerSequential),
    latencyRow('1 eager launch, concurrent', r.eagerConcurrent),
    latencyRow('2 lazy launch, sequential', r.lazySequential),
    latencyRow('2 lazy launch, concurrent', r.lazyConcurrent),
    latencyRow(`3 eager launch during the burst (${fmt(num(r.claimThroughput, 'concurrency'))} in flight)`, {
      n: num(r.claimThroughput, 'launches'),
      p50Ms: num(r.claimThroughput, 'latencyP50Ms'),
      p95Ms: num(r.claimThroughput, 'latencyP95Ms'),
      p99Ms: num(r.claimThroughput, 'latencyP99Ms'),
      maxMs: num(r.claimThroughput, 'latencyMaxMs'),
    }),
    latencyRow('6 pod Ready → EnvInjected (workspace launch, own watches)', {
      n: num(r.injectionWorkspace, 'podReadyToInjectedN'),
      p50Ms: num(r.injectionWorkspace, 'podReadyToInjectedP50Ms'),
      p95Ms: num(r.injectionWorkspace, 'podReadyToInjectedP95Ms'),
      p99Ms: num(r.injectionWorkspace, 'podReadyToInjectedP99Ms'),
      maxMs: num(r.injectionWorkspace, 'podReadyToInjectedMaxMs'),
    }),
    latencyRow('6 reservation → EnvInjected (pod already running)', {
      n: num(r.injectionEphemeral, 'reservedToInjectedN'),
      p50Ms: num(r.injectionEphemeral, 'reservedToInjectedP50Ms'),
      p95Ms: num(r.injectionEphemeral, 'reservedToInjectedP95Ms'),
      p99Ms: num(r.injectionEphemeral, 'reservedToInjectedP99Ms'),
      maxMs: num(r.injectionEphemeral, 'reservedToInjectedMaxMs'),
    }),
    '',
    '| figure | value |',
    '|---|---|',
    `| 3 claim throughput (client: launches answered per second) | ${fmt(num(r.claimThroughput, 'launchesPerSec'), '/s')} |`,
    `| 3 claim throughput (operator: reservations per second) | ${fmt(num(r.claimThroughput, 'claimsPerSecOperator'), '/s')} |`,
    `| 3 pool refill after all ${fmt(num(r.poolFill, 'instances'))} sessions of the pool end | ${fmt(num(r.claimThroughput, 'refillMs'), ' ms')} |`,
    `| 4 API requests per eager launch, all clients: reads / writes / KiB read | ${fmt(num(r.costEager, 'readsPerLaunch'))} / ${fmt(num(r.costEager, 'writesPerLaunch'))} / ${fmt(num(r.costEager, 'readKiBPerLaunch'))} |`,
    `| 4 API requests per eager launch, IDE Cloud's own (operator and service, audit log): reads / writes | ${fmt(num(r.costEager, 'ideCloudReadsPerLaunch'))} / ${fmt(num(r.costEager, 'ideCloudWritesPerLaunch'))} |`,
    `| 4 API requests per lazy launch, all clients: reads / writes / KiB read | ${fmt(num(r.costLazy, 'readsPerLaunch'))} / ${fmt(num(r.costLazy, 'writesPerLaunch'))} / ${fmt(num(r.costLazy, 'readKiBPerLaunch'))} |`,
    `| 4 API requests per lazy launch, IDE Cloud's own (operator and service, audit log): reads / writes | ${fmt(num(r.costLazy, 'ideCloudReadsPerLaunch'))} / ${fmt(num(r.costLazy, 'ideCloudWritesPerLaunch'))} |`,
    `| 3 pool refill after the ${fmt(num(r.sizes, 'eagerSequential'))} sequential sessions end | ${fmt(num(r.claimThroughput, 'refillAfterSequentialMs'), ' ms')} |`,
    `| warm pool of ${fmt(num(r.poolFill, 'instances'))}: first fill | ${fmt(num(r.poolFill, 'initialFillMs'), ' ms')} |`,
    `| operator RSS idle after start (warm pool of ${fmt(num(r.poolFill, 'instances'))} filled, no session) / service RSS | ${fmt(num(r.operatorAtStart, 'rssMb'), ' MB')} / ${fmt(num(r.operatorAtStart, 'serviceRssMb'), ' MB')} |`,
    '',
    "| 5 sessions (running) | operator RSS MB | operator CPU idle % | reconcile proxy p50 / p99 ms | eager launch p50 / p99 ms | list p50 / p99 ms | API per launch, all clients: reads / writes / KiB | IDE Cloud's own per launch: reads / writes |",
    '|---|---|---|---|---|---|---|---|',
    ...(r.scale ?? []).map(
      (s) =>
        `| ${fmt(num(s, 'sessions'))} (${fmt(num(s, 'sessionsRunning'))}) | ${fmt(num(s, 'operatorRssMb'))} | ${fmt(num(s, 'operatorIdleCpuPercent'))} | ${fmt(num(s, 'reconcileProbeP50Ms'))} / ${fmt(num(s, 'reconcileProbeP99Ms'))} | ${fmt(num(s, 'eagerLaunchP50Ms'))} / ${fmt(num(s, 'eagerLaunchP99Ms'))}${num(s, 'eagerLaunchFailures') ? ` (${fmt(num(s, 'eagerLaunchFailures'))} timed out)` : ''} | ${fmt(num(s, 'listP50Ms'))} / ${fmt(num(s, 'listP99Ms'))} | ${fmt(num(s, 'apiReadsPerLaunch'))} / ${fmt(num(s, 'apiWritesPerLaunch'))} / ${fmt(num(s, 'apiReadKiBPerLaunch'))} | ${fmt(num(s, 'apiIdeCloudReadsPerLaunch'))} / ${fmt(num(s, 'apiIdeCloudWritesPerLaunch'))} |`,
    ),
    '',
    '| target | figure | measured | target | met? |',
    '|---|---|---|---|---|',
    ...targets(r).map(
      (t) =>
        `| ${t.what} | \`${t.figure}\` | ${fmt(t.value)} | ${t.target} | ${t.met === undefined ? 'n/a' : t.met ? 'yes' : `**no**: ${t.by ?? ''}`} |`,
    ),
  ];
  return lines.join('\n');
}

function markdown(r: Results): string {
  const m = r.machine;
  const scaleNote =
    r.benchScale === 1 ? 'the full configuration' : `**a reduced configuration (BENCH_SCALE=${r.benchScale})**`;
  return [
    '# Benchmarks',
    '',
    `One run of \`npm run bench\` (${scaleNote}) on commit \`${r.commit}\`, ${r.date}, ${fmt(r.runSeconds)} s.`,
    `Machine: ${m.nproc} cores (${m.cpuModel}), ${m.memoryGiB} GiB, shared with other work: load average ${m.loadAverage1m} at the start, ${m.loadAverage1mEnd ?? 'n/a'} at the end.`,
    'The figures are in `BENCHMARKS.json` (one key per scenario, the unit in each name).',
    '',
    '## Results',
    '',
    table(r),
    '',
    ANALYSIS(r),
    '',
  ].join('\n');
}

export async function writeReports(root: string, r: Results): Promise<string> {
  await writeFile(path.join(root, 'BENCHMARKS.json'), `${JSON.stringify(r, null, 2)}\n`);
  await writeFile(path.join(root, 'BENCHMARKS.md'), markdown(r));
  return table(r);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const r = JSON.parse(await readFile(path.join(root, 'BENCHMARKS.json'), 'utf8')) as Results;
  await writeFile(path.join(root, 'BENCHMARKS.md'), markdown(r));
  process.stdout.write(`${table(r)}\n`);
}

// The run's configuration: command-line flags (or the BENCH_* variables), the sizes of the scenarios
// and the app definitions they launch.
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

export const USAGE = `npm run bench [-- options]
  --scale <x>   multiply every size by x (BENCH_SCALE; 1 = the full run, 0.1 for a smoke run)
  --quick       the same as --scale 0.1
  --only <a,b>  run only these scenarios, with what they need first (BENCH_ONLY), e.g. eager-launch or claim-throughput
  --out <dir>   write BENCHMARKS.json and BENCHMARKS.md there (BENCH_OUT); by default the repository root
                for a full run, a temporary directory for a reduced or partial one
  --help
The variable BENCH_CPU_PROFILE_DIR=<dir> runs the operator and the service with V8's CPU profiler
(node --cpu-prof): <dir>/operator and <dir>/service get a .cpuprofile each when they stop, and
<dir>/windows.json the claim burst's and the warm launches at once's spans; then
\`npx tsx scripts/bench/cpu-profile.ts <dir> [window]\` tells where each window's CPU went, by source.`;

export interface Options {
  scale: number;
  only: string[] | undefined;
  /** Where BENCHMARKS.json and BENCHMARKS.md are written. */
  out: string;
  /** A full run of every scenario at scale 1: the published figures. */
  full: boolean;
}

export function parseOptions(root: string, argv = process.argv.slice(2), env = process.env): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      scale: { type: 'string' },
      quick: { type: 'boolean' },
      only: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const scale = values.quick ? 0.1 : Number(values.scale ?? env.BENCH_SCALE ?? '1');
  if (!(scale > 0)) throw new Error(`--scale: a positive number, not ${values.scale ?? env.BENCH_SCALE}`);
  const onlyText = values.only ?? env.BENCH_ONLY;
  const only = onlyText ? onlyText.split(',').map((x) => x.trim()) : undefined;
  const full = scale === 1 && !only;
  const outText = values.out ?? env.BENCH_OUT;
  const out = outText
    ? path.resolve(outText)
    : full
      ? root
      : path.join(os.tmpdir(), `ide-cloud-bench-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  return { scale, only, out, full };
}

export type Sizes = ReturnType<typeof sizes>;

/** Sizes of the scenarios at `scale` (1 = the full run). */
export function sizes(scale: number) {
  const n = (full: number, min = 2) => Math.max(min, Math.round(full * scale));
  const s = {
    eagerSequential: n(200),
    eagerConcurrent: n(100),
    /**
     * The warm launches run in rounds, each right after the floor's round of the same mode, so that
     * the machine's slow phases fall on both: one at a time, `eagerSequential` and `floorSequential`
     * shared out over `eagerSequentialRounds`; at once, `eagerConcurrent` in each of `eagerConcurrentRounds`.
     */
    eagerSequentialRounds: 4,
    eagerConcurrentRounds: 3,
    lazySequential: n(50),
    lazyConcurrent: n(100),
    costLaunches: n(20),
    burstConcurrency: 50,
    injectionLaunches: n(20),
    /** The last step runs only if the budget leaves room for it (`scaleStoppedBefore` otherwise). */
    scaleLevels: [100, 250, 500, 1000, 2000].map((x) => n(x, 10)),
    /** The step the targets on memory, listing and cost growth read (1000 sessions in the full run). */
    scaleTargetLevel: n(1000, 10),
    /** The step of the second memory target (2000 sessions in the full run). */
    scaleUpperTargetLevel: n(2000, 10),
    scaleLaunches: n(5),
    scaleListCalls: n(100),
    scaleProbes: n(5),
    fillConcurrency: 20,
    idleWindowMs: Math.max(5000, Math.round(20_000 * Math.min(1, scale))),
    /** The scale scenario's time budget, the longest wait for a step's sessions to run, and a step's least time. */
    scaleBudgetMs: Math.max(150_000, Math.round(720_000 * Math.min(1, scale))),
    scaleSettleMs: Math.max(10_000, Math.round(200_000 * Math.min(1, scale))),
    scaleLevelMinMs: 90_000,
    /** The floor: sequential sequences; in parallel, as many as the concurrent eager launches; sustained, as many in flight as the claim burst. */
    floorSequential: n(200, 20),
    floorSustainedMs: Math.max(5000, Math.round(20_000 * Math.min(1, scale))),
    /** What each write of a launch costs the control plane: rounds of requests of each kind, an Ingress of that many paths. */
    requestCostRounds: n(8, 3),
    requestCostPerRound: 20,
    requestCostPaths: n(150, 15),
    /**
     * How long IDE Cloud must have been quiet before an idle reading: longer than the operator's 5 s
     * requeue of a session whose pod is not ready yet, the last trailing work of a launch.
     */
    quietMs: 6000,
    /** Click to code on the real node: launches per case (one at a time), and students clicking at once. */
    clickLaunches: n(5),
    clickTogether: n(5),
  };
  // One warm pool serves every eager scenario: the sequential launches; then (sessions ended, pool
  // refilled) the concurrent and cost launches; then (the same again) a burst that takes the whole pool.
  return { ...s, pool: Math.max(s.eagerSequential, s.eagerConcurrent + s.costLaunches) + 10 };
}

/** App definitions of the run: one with the warm pool, one without (lazy), one for the scale scenario's sessions. */
export const APPS = { eager: 'bench-eager', lazy: 'bench-lazy', filler: 'bench-filler' } as const;

export function appDefinition(
  name: string,
  minInstances: number,
  bridgePort: number,
  maxInstances: number | null = 5000,
) {
  return {
    name,
    image: `ide-cloud/session-${name}:latest`,
    port: 3000,
    ingressname: 'ide-cloud-sessions',
    minInstances,
    maxInstances,
    // The fake node offers 64 CPUs: at the default 200m a request, it would hold about 300 pods.
    requestsCpu: '10m',
    requestsMemory: '16M',
    options: { dataBridgeEnabled: 'true', dataBridgePort: String(bridgePort) },
  };
}

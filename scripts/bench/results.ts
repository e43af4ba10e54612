// What one run of the benchmark produces: BENCHMARKS.json is a `Results`. Each scenario module
// (scenarios/*.ts) returns the keys it measures; report.ts and targets.ts only read them.
import type { AppliedMemoryLimit, ServerPart } from './memory-limit.js';
import type { Summary } from './util.js';

/** The figures of one scenario: flat `name → number` (the unit in the name), with a few nested breakdowns. */
export type Figures = Record<string, unknown>;

export interface Machine {
  nproc: number;
  memoryGiB: number;
  cpuModel: string;
  loadAverage1m: number;
  loadAverage1mEnd?: number;
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
  /**
   * The chart's memory limit each part ran under (a memory cgroup; its peak and whether the limit bit,
   * read before the parts stop), or why it ran without.
   */
  memoryLimits: Partial<Record<ServerPart, AppliedMemoryLimit>>;
}

/** The floor's figures of one mode (scenarios/floor.ts): per sequence, from its create to the watch seeing its URL. */
/** `n`: sequences measured (warm-up excluded). */
export interface FloorFigures extends Figures, Summary {
  /** Sequences in flight at once. */
  concurrency: number;
  /** First sequence started → last one seen on the watch; of a mode run in rounds, the rounds' sum. */
  wallMs: number;
  /** Sequences completed per second of `wallMs`. */
  sequencesPerSec: number;
  /** Create sent → the watch saw the Session (the hop before the operator can claim, in a real launch). */
  createToWatchP50Ms: number;
  /** Claim writes answered 409 (none expected: every sequence claims its own stand-in). */
  conflicts: number;
  /** Each round's p50, of the modes run in rounds (the floor's, then the warm launches'). */
  roundP50sMs?: number[];
  /** CPU ms per sequence of each process (measure.ts cpuMsPerLaunch); the sustained run only. */
  cpuMsPerSequence?: Record<string, number>;
}

/** One step of a launch's timeline (launches.ts): ms from the step before it. */
export interface TimelineStep {
  n: number;
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
}

/**
 * The timeline of a series of launches (launches.ts), per step: POST sent → Session create received
 * → the operator's first write for it → claim → route → URL status write → answer read by the client.
 */
export interface Timeline extends Figures {
  n: number;
  /** Launches without their create or URL write in the audit log (their other steps still count). */
  incomplete: number;
  /** The client's latency, POST to answer. */
  totalP50Ms: number;
  totalP95Ms: number;
  steps: Record<
    'postToCreate' | 'createToOperator' | 'operatorToClaim' | 'claimToRoute' | 'routeToUrl' | 'urlToAnswer',
    TimelineStep
  >;
  /** The step with the most time (mean): where a missed target's time goes. */
  largest?: string;
}

/** One row of the targets table (targets.ts). */
export interface Target {
  what: string;
  /** The JSON key(s) the measured value comes from. */
  figure: string;
  value: number | undefined;
  target: string;
  /** undefined: not measured in this run (or not measurable yet; `by` says which). */
  met: boolean | undefined;
  /** How far off, when missed; why there is no value, when not measured. */
  by?: string;
}

export interface Results {
  commit: string;
  date: string;
  machine: Machine;
  benchScale: number;
  /** Scenarios run (all of them in a full run; `--only` and their prerequisites otherwise). */
  scenarios?: string[];
  sizes: Figures;
  operatorSettings: Figures;
  /** How the operator and service ran (absent in runs before they ran compiled: those used tsx). */
  runtime?: Runtime;
  runSeconds?: number;
  /** The floor: the bare API writes of a warm launch, with the operator and the service not running. */
  floorSequential?: FloorFigures;
  floorParallel?: FloorFigures;
  floorSustained?: FloorFigures;
  /** The spec's floor: the five writes the spec names for a warm launch and the two watch hops, by the same bare client. */
  specFloorSequential?: FloorFigures;
  specFloorParallel?: FloorFigures;
  specFloorSustained?: FloorFigures;
  /** What each write of a warm launch costs the control plane (scenarios/request-cost.ts). */
  requestCost?: Figures;
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
  /** Click to code on the real node (scenarios/click-to-code.ts); `measured: false` with the reason elsewhere. */
  clickToCode?: Figures;
  /** Each launch scenario over its floor (targets.ts); written with the results. */
  vsFloor?: Record<string, number | null>;
  /** The targets, as measured in this run (targets.ts); written with the results. */
  targets?: Target[];
}

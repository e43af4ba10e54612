// The targets, read from the results of one run: each launch scenario as a ratio to its floor measured
// in the same run (issue 18, limits of issue 29), IDE Cloud's own writes per launch with its Events,
// the lazy burst, memory at two sizes, and the earlier targets on listing, cost growth and injection.
import { TIMELINE_STEPS } from './launches.js';
import { CLICK_STEPS } from './student.js';
import type { Figures, Results, Target, Timeline } from './results.js';

export const num = (f: Figures | undefined, key: string): number | undefined => {
  const v = f?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};

export function fmt(v: number | undefined | null, unit = ''): string {
  if (v === undefined || v === null || !Number.isFinite(v)) return 'n/a';
  const text = Math.abs(v) >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10);
  return `${text}${unit}`;
}

/** `a / b`, to two decimals for the reader; `exact` for a target's verdict, which no rounding may turn. */
const ratio = (a: number | undefined, b: number | undefined, exact = false): number | undefined =>
  a === undefined || b === undefined || b === 0 ? undefined : exact ? a / b : Math.round((a / b) * 100) / 100;

/** A launch figure and its floor: `vsFloor.<key>` = `<scenario>.<figure>` / `<floor>.<floorFigure>`. */
export interface FloorPair {
  scenario: keyof Results;
  figure: string;
  floor: keyof Results;
  floorFigure: string;
}

/** Each launch scenario beside the floor measured in the same run, keyed `<scenario><figure>`. */
export const FLOOR_PAIRS = {
  eagerSequentialP50: { scenario: 'eagerSequential', figure: 'p50Ms', floor: 'floorSequential', floorFigure: 'p50Ms' },
  eagerSequentialP99: { scenario: 'eagerSequential', figure: 'p99Ms', floor: 'floorSequential', floorFigure: 'p99Ms' },
  eagerConcurrentP50: { scenario: 'eagerConcurrent', figure: 'p50Ms', floor: 'floorParallel', floorFigure: 'p50Ms' },
  eagerConcurrentP99: { scenario: 'eagerConcurrent', figure: 'p99Ms', floor: 'floorParallel', floorFigure: 'p99Ms' },
  claimThroughputLaunchesPerSec: {
    scenario: 'claimThroughput',
    figure: 'launchesPerSec',
    floor: 'floorSustained',
    floorFigure: 'sequencesPerSec',
  },
  claimThroughputClaimsPerSecOperator: {
    scenario: 'claimThroughput',
    figure: 'claimsPerSecOperator',
    floor: 'floorSustained',
    floorFigure: 'sequencesPerSec',
  },
  // The spec's floor over the floor: the best ratio any launch that makes the spec's writes can reach.
  specFloorSequentialP50: {
    scenario: 'specFloorSequential',
    figure: 'p50Ms',
    floor: 'floorSequential',
    floorFigure: 'p50Ms',
  },
  specFloorParallelP50: {
    scenario: 'specFloorParallel',
    figure: 'p50Ms',
    floor: 'floorParallel',
    floorFigure: 'p50Ms',
  },
  specFloorSustainedSequencesPerSec: {
    scenario: 'specFloorSustained',
    figure: 'sequencesPerSec',
    floor: 'floorSustained',
    floorFigure: 'sequencesPerSec',
  },
} satisfies Record<string, FloorPair>;
export type FloorKey = keyof typeof FLOOR_PAIRS;

/** A pair's two figures in `r`: the launch's and its floor's. */
export function floorPair(r: Results, k: FloorKey): { value?: number; floor?: number } {
  const pair: FloorPair = FLOOR_PAIRS[k];
  return {
    value: num(r[pair.scenario] as Figures | undefined, pair.figure),
    floor: num(r[pair.floor] as Figures | undefined, pair.floorFigure),
  };
}

/** How `vsFloor.<k>` is computed, in the keys of BENCHMARKS.json. */
export function floorFormula(k: FloorKey): string {
  const pair: FloorPair = FLOOR_PAIRS[k];
  return `vsFloor.${k} = ${pair.scenario}.${pair.figure} / ${pair.floor}.${pair.floorFigure}`;
}

/** Each launch scenario over its floor (`exact`: unrounded); null where either side was not measured. */
export function vsFloor(r: Results, exact = false): Record<FloorKey, number | null> {
  const entries = (Object.keys(FLOOR_PAIRS) as FloorKey[]).map((k) => {
    const { value, floor } = floorPair(r, k);
    return [k, ratio(value, floor, exact) ?? null];
  });
  return Object.fromEntries(entries) as Record<FloorKey, number | null>;
}

/** `value` ≤ `limit` (or ≥ with `atLeast`), with how far off in words when missed. */
function check(
  what: string,
  figure: string,
  value: number | undefined,
  limit: number,
  unit: string,
  options: { atLeast?: boolean; absent?: string; also?: string; unjudged?: string } = {},
): Target {
  const target = `${options.atLeast ? '≥' : '≤'} ${limit}${unit}`;
  if (value === undefined) return { what, figure, value, target, met: undefined, by: options.absent };
  if (options.unjudged) return { what, figure, value, target, met: undefined, by: options.unjudged };
  const met = options.atLeast ? value >= limit : value <= limit;
  const gap = Math.abs(value - limit);
  // A small gap keeps its decimals, not rounded to "0 over".
  const amount =
    gap < 0.01 ? `${gap.toFixed(3)}${unit}` : gap < 0.1 || unit === '×' ? `${gap.toFixed(2)}${unit}` : fmt(gap, unit);
  const by = met
    ? undefined
    : `${amount} ${options.atLeast ? 'short' : 'over'} (${fmt((value / limit) * 100)} % of the target)${options.also ? `; ${options.also}` : ''}`;
  return { what, figure, value, target, met, by };
}

/** IDE Cloud's own writes per launch without Events (counted apart, shown beside the total). */
export function ownWritesWithoutEvents(r: Results): number | undefined {
  const measured = num(r.costEager, 'ideCloudWritesWithoutEventsPerLaunch');
  if (measured !== undefined) return measured;
  // Results from before the split was measured: the Events taken out of the total.
  const total = num(r.costEager, 'ideCloudWritesPerLaunch');
  if (total === undefined) return undefined;
  const byKey = (r.costEager?.ideCloudWritesPerLaunchByVerbAndResource ?? {}) as Record<string, number>;
  return Math.round((total - (byKey['create events'] ?? 0) - (byKey['patch events'] ?? 0)) * 100) / 100;
}

/** A scale step by its level in `sizes` (the targets' sizes), with its key in BENCHMARKS.json. */
function scaleStep(r: Results, sizeKey: 'scaleTargetLevel' | 'scaleUpperTargetLevel') {
  // Results from before the upper level was named: the largest level of the run.
  const levels = r.sizes?.scaleLevels as number[] | undefined;
  const level = num(r.sizes, sizeKey) ?? (sizeKey === 'scaleUpperTargetLevel' ? levels?.at(-1) : undefined);
  const step = level === undefined ? undefined : r.scale?.find((s) => num(s, 'level') === level);
  return { step, level, key: `scale[level=${fmt(level)}]` };
}

/** Which step of a launch holds the most time, from a scenario's timeline (launches.ts). */
export function largestStep(r: Results, scenario: 'eagerSequential' | 'eagerConcurrent' | 'claimThroughput') {
  const tl = r[scenario]?.timeline as Timeline | undefined;
  const step = TIMELINE_STEPS.find((s) => s.key === tl?.largest);
  if (!tl || !step) return undefined;
  const s = tl.steps[step.key];
  const share = fmt((s.meanMs / (Object.values(tl.steps).reduce((a, x) => a + x.meanMs, 0) || 1)) * 100);
  return `the step holding the most time is ${step.label}: mean ${fmt(s.meanMs, ' ms')} (${share} % of the launch), p50 ${fmt(s.p50Ms, ' ms')}, p95 ${fmt(s.p95Ms, ' ms')} (\`${scenario}.timeline.steps.${step.key}\`)`;
}

export function targets(r: Results): Target[] {
  const ratios = vsFloor(r, true);
  // The step the targets name (1000 sessions in a full run); the last one in results without `level`.
  const last = r.scale?.find((s) => num(s, 'level') === num(r.sizes, 'scaleTargetLevel')) ?? r.scale?.at(-1);
  const lastKey = last && num(last, 'level') !== undefined ? `scale[level=${num(last, 'level')}]` : 'scale[-1]';
  const first = r.scale?.[0];
  const noFloor = 'not measured in this run';
  // IDE Cloud's own requests (audit log): the all-client totals are dominated by the background at larger sizes.
  const ownAt = (s: Figures | undefined) => {
    const reads = num(s, 'apiIdeCloudReadsPerLaunch');
    const writes = num(s, 'apiIdeCloudWritesPerLaunch');
    return reads === undefined || writes === undefined ? undefined : reads + writes;
  };
  const requestGrowth = ownAt(first) && ownAt(last) !== undefined ? ownAt(last)! / ownAt(first)! : undefined;
  // A step where no eager launch answered within its timeout has no cost per launch: not flat.
  const stalled = (r.scale ?? []).find((x) => (num(x, 'eagerLaunchN') ?? 0) === 0);
  const flat = stalled ? false : requestGrowth !== undefined ? requestGrowth <= 1.25 : undefined;
  const upper = scaleStep(r, 'scaleUpperTargetLevel');
  // RSS is judged only of an operator that ran under its pod's memory limit (memory-limit.ts).
  const operatorLimit = r.runtime?.memoryLimits?.operator;
  const rssUnjudged =
    operatorLimit && 'notApplied' in operatorLimit
      ? `not judged: the operator ran without its pod's memory limit (${operatorLimit.notApplied})`
      : undefined;
  const upperAbsent =
    upper.step !== undefined
      ? undefined
      : r.scaleStoppedBefore !== undefined
        ? `not measured: the scale scenario stopped before ${fmt(r.scaleStoppedBefore)} sessions (its time budget)`
        : noFloor;
  return [
    check(
      'warm launch p50, sequential, over the floor',
      floorFormula('eagerSequentialP50'),
      ratios.eagerSequentialP50 ?? undefined,
      2.5,
      '×',
      { absent: noFloor, also: largestStep(r, 'eagerSequential') },
    ),
    check(
      `warm launch p50, ${fmt(num(r.sizes, 'eagerConcurrent'))} at once, over the floor`,
      floorFormula('eagerConcurrentP50'),
      ratios.eagerConcurrentP50 ?? undefined,
      1.8,
      '×',
      { absent: noFloor, also: largestStep(r, 'eagerConcurrent') },
    ),
    check(
      'claims per second, sustained, over the ceiling',
      floorFormula('claimThroughputLaunchesPerSec'),
      ratios.claimThroughputLaunchesPerSec ?? undefined,
      0.5,
      '×',
      { atLeast: true, absent: noFloor, also: largestStep(r, 'claimThroughput') },
    ),
    check(
      "API writes per warm launch, IDE Cloud's own, Events included",
      'costEager.ideCloudWritesPerLaunch',
      num(r.costEager, 'ideCloudWritesPerLaunch'),
      5,
      '',
      { absent: noFloor },
    ),
    check(
      '… of which on the path to the URL (up to the status write with the URL, inclusive)',
      'costEager.ideCloudWritesBeforeUrlPerLaunch',
      num(r.costEager, 'ideCloudWritesBeforeUrlPerLaunch'),
      3,
      '',
      { absent: noFloor },
    ),
    check(
      "API writes per lazy launch, IDE Cloud's own, Events included",
      'costLazy.ideCloudWritesPerLaunch',
      num(r.costLazy, 'ideCloudWritesPerLaunch'),
      8,
      '',
      { absent: noFloor },
    ),
    check(
      `lazy launch p50, ${fmt(num(r.sizes, 'lazyConcurrent'))} at once (the fake node)`,
      'lazyConcurrent.p50Ms',
      num(r.lazyConcurrent, 'p50Ms'),
      3000,
      ' ms',
      { absent: noFloor },
    ),
    check(
      `operator RSS at ${fmt(num(last, 'sessions'))} sessions`,
      `${lastKey}.operatorRssMb`,
      num(last, 'operatorRssMb'),
      150,
      ' MB',
      { unjudged: rssUnjudged },
    ),
    check(
      `operator RSS at ${fmt(num(upper.step, 'sessions') ?? upper.level)} sessions`,
      `${upper.key}.operatorRssMb`,
      num(upper.step, 'operatorRssMb'),
      250,
      ' MB',
      { absent: upperAbsent, unjudged: rssUnjudged },
    ),
    check(
      `list p99 at ${fmt(num(last, 'sessions'))} sessions`,
      `${lastKey}.listP99Ms`,
      num(last, 'listP99Ms'),
      20,
      ' ms',
    ),
    {
      what: `cost per launch flat (${fmt(num(first, 'sessions'))} → ${fmt(num(last, 'sessions'))} sessions)`,
      figure: 'scale[].apiIdeCloudReadsPerLaunch + apiIdeCloudWritesPerLaunch',
      value: requestGrowth,
      target: "IDE Cloud's own requests ×≤ 1.25",
      met: flat,
      by: stalled
        ? `no warm launch answered within its timeout from ${fmt(num(stalled, 'sessions'))} sessions on, so no cost per launch there`
        : flat === false
          ? `×${fmt(requestGrowth)} (${fmt(ownAt(first))} → ${fmt(ownAt(last))} requests per launch)`
          : undefined,
    },
    check(
      "injection into a new workspace's warm pod (p99)",
      'injectionWorkspace.reservedToInjectedP99Ms',
      num(r.injectionWorkspace, 'reservedToInjectedP99Ms'),
      1500,
      ' ms',
    ),
    ...clickToCodeTargets(r),
  ];
}

/** A case of the click-to-code scenario (scenarios/click-to-code.ts): `<part>.p50Ms`. */
export function clickFigure(r: Results, caseName: string, part: string, stat = 'p50Ms'): number | undefined {
  const cases = r.clickToCode?.cases as Record<string, Record<string, Figures>> | undefined;
  return num(cases?.[caseName]?.[part], stat);
}

/**
 * Which step of a click-to-code case holds the most time: the largest gap between two consecutive
 * steps of its p50 timeline (the clone runs beside the others and is left out).
 */
export function largestClickStep(r: Results, caseName: string): string | undefined {
  const cases = r.clickToCode?.cases as Record<string, { steps?: Record<string, Figures> }> | undefined;
  const steps = cases?.[caseName]?.steps;
  if (!steps) return undefined;
  let before = { label: 'the click', at: 0 };
  let largest: { from: string; to: string; ms: number } | undefined;
  for (const [key, label] of CLICK_STEPS) {
    const at = num(steps[key], 'p50Ms');
    if (key === 'cloneDoneMs' || at === undefined) continue;
    if (!largest || at - before.at > largest.ms) largest = { from: before.label, to: label, ms: at - before.at };
    before = { label, at };
  }
  return (
    largest &&
    `the step holding the most time is ${largest.from} → ${largest.to}: ${fmt(largest.ms, ' ms')} of the p50 timeline`
  );
}

/** The student's seconds (issue 26): click → files shown, IDE Cloud's part, error pages after the hand-over. */
export function clickToCodeTargets(r: Results): Target[] {
  const c = r.clickToCode;
  const absent =
    c?.measured === false ? `not measured: ${String(c.reason)}` : c ? undefined : 'not measured in this run';
  const cases = (c?.cases ?? {}) as Record<string, { errorPages?: string[]; failures?: string[] }>;
  const count = (pick: (x: (typeof cases)[string]) => unknown[] | undefined) =>
    c?.measured ? Object.values(cases).reduce((a, x) => a + (pick(x)?.length ?? 0), 0) : undefined;
  const errors = count((x) => x.errorPages);
  const failures = count((x) => x.failures);
  const named = (k: string) => `clickToCode.cases.${k}`;
  /** Click → files shown of a case (naming the step holding its time when missed), then its IDE Cloud part. */
  const seconds = (what: string, caseName: string, limitMs: number, ideCloudLimitMs?: number): Target[] => [
    check(
      `${what}: click → files shown, p50`,
      `${named(caseName)}.total.p50Ms`,
      clickFigure(r, caseName, 'total'),
      limitMs,
      ' ms',
      {
        absent,
        also: largestClickStep(r, caseName),
      },
    ),
    ...(ideCloudLimitMs === undefined
      ? []
      : [
          check(
            "… of which IDE Cloud's part (click → the workbench's first byte), p50",
            `${named(caseName)}.ideCloud.p50Ms`,
            clickFigure(r, caseName, 'ideCloud'),
            ideCloudLimitMs,
            ' ms',
            { absent },
          ),
        ]),
  ];
  return [
    ...seconds('warm, a new workspace', 'warmWorkspace', 3000, 1000),
    ...seconds('warm, ephemeral', 'warmEphemeral', 3000, 1000),
    ...seconds('lazy, the image on the node', 'lazy', 8000),
    ...seconds('a relaunch of an existing workspace', 'relaunch', 8000),
    check('error pages the browser met after the hand-over, every case', `${named('*')}.errorPages`, errors, 0, '', {
      absent,
    }),
    check('launches whose explorer never showed the files, every case', `${named('*')}.failures`, failures, 0, '', {
      absent,
    }),
  ];
}

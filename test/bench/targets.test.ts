// Issue 29's targets read from one run's results: each limit at its edge (met) and just past it
// (missed, naming the figure), the upper memory step listed as not measured when the scale
// scenario stopped before it, and no RSS judged of an operator run without its memory limit.
import assert from 'node:assert/strict';
import type { Results } from '../../scripts/bench/results.js';
import { targets } from '../../scripts/bench/targets.js';

const base = {
  commit: 'c',
  date: 'd',
  machine: {} as Results['machine'],
  benchScale: 1,
  operatorSettings: {},
  sizes: { eagerConcurrent: 100, lazyConcurrent: 100, scaleTargetLevel: 1000, scaleUpperTargetLevel: 2000 },
  // Only the figures the ratios read.
  floorSequential: { p50Ms: 10 } as Results['floorSequential'],
  floorParallel: { p50Ms: 100 } as Results['floorParallel'],
  floorSustained: { sequencesPerSec: 100 } as Results['floorSustained'],
};

/** Results with every issue 29 figure at its limit, or `past` it when true. */
function results(past: boolean): Results {
  const d = past ? 1 : 0;
  return {
    ...base,
    eagerSequential: { p50Ms: 25 + d },
    eagerConcurrent: { p50Ms: 180 + d },
    claimThroughput: { launchesPerSec: 50 - d },
    costEager: { ideCloudWritesPerLaunch: 5 + d, ideCloudWritesBeforeUrlPerLaunch: 3 },
    costLazy: { ideCloudWritesPerLaunch: 8 + d },
    lazyConcurrent: { p50Ms: 3000 + d },
    scale: [
      { level: 1000, sessions: 1000, operatorRssMb: 150 + d },
      { level: 2000, sessions: 2000, operatorRssMb: 250 + d },
    ],
  };
}

const figures = [
  'vsFloor.eagerSequentialP50 = eagerSequential.p50Ms / floorSequential.p50Ms',
  'vsFloor.eagerConcurrentP50 = eagerConcurrent.p50Ms / floorParallel.p50Ms',
  'vsFloor.claimThroughputLaunchesPerSec = claimThroughput.launchesPerSec / floorSustained.sequencesPerSec',
  'costEager.ideCloudWritesPerLaunch',
  'costLazy.ideCloudWritesPerLaunch',
  'lazyConcurrent.p50Ms',
  'scale[level=1000].operatorRssMb',
  'scale[level=2000].operatorRssMb',
];

describe('bench: targets of issue 29', () => {
  it('meets each target at its limit', () => {
    const t = targets(results(false));
    for (const figure of figures) {
      const found = t.find((x) => x.figure === figure);
      assert.ok(found, figure);
      assert.equal(found.met, true, `${figure}: ${found.by}`);
    }
    assert.deepEqual(
      figures.map((f) => t.find((x) => x.figure === f)!.target),
      ['≤ 2.5×', '≤ 1.8×', '≥ 0.5×', '≤ 5', '≤ 8', '≤ 3000 ms', '≤ 150 MB', '≤ 250 MB'],
    );
  });

  it('misses each target just past its limit, saying by how much', () => {
    const t = targets(results(true));
    for (const figure of figures) {
      const found = t.find((x) => x.figure === figure)!;
      assert.equal(found.met, false, figure);
      assert.match(found.by ?? '', /(over|short) \(/, figure);
    }
  });

  it('judges a ratio as measured, not as rounded for the reader: 0.497× of the floor misses ≥ 0.5×', () => {
    const r = {
      ...results(false),
      claimThroughput: { launchesPerSec: 120.53 },
      floorSustained: { sequencesPerSec: 242.7 } as Results['floorSustained'],
      eagerConcurrent: { p50Ms: 180.4 },
    };
    const claims = targets(r).find((x) => x.figure === figures[2])!;
    assert.equal(claims.met, false);
    assert.match(claims.by ?? '', /^0\.003× short \(99\.3 % of the target\)/);
    const concurrent = targets(r).find((x) => x.figure === figures[1])!;
    assert.equal(concurrent.met, false, '1.804× is over 1.8×');
  });

  it('lists the upper memory step as not measured when the scale scenario stopped before it', () => {
    const r = { ...results(false), scale: results(false).scale!.slice(0, 1), scaleStoppedBefore: 2000 };
    const upper = targets(r).find((x) => x.figure === 'scale[level=2000].operatorRssMb')!;
    assert.equal(upper.met, undefined);
    assert.match(upper.by ?? '', /stopped before 2000 sessions/);
  });

  it("judges no RSS of an operator that ran without its pod's memory limit, and says why", () => {
    const runtime = { memoryLimits: { operator: { quantity: '512Mi', notApplied: 'cgroup v2: EACCES' } } };
    const t = targets({ ...results(true), runtime: runtime as unknown as Results['runtime'] });
    for (const figure of ['scale[level=1000].operatorRssMb', 'scale[level=2000].operatorRssMb']) {
      const found = t.find((x) => x.figure === figure)!;
      assert.equal(found.met, undefined, figure);
      assert.equal(found.by, "not judged: the operator ran without its pod's memory limit (cgroup v2: EACCES)");
    }
    assert.equal(t.find((x) => x.figure === 'lazyConcurrent.p50Ms')!.met, false, 'the other targets are judged');
  });
});

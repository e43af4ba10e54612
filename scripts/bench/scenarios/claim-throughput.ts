// Claims per second: right after the floor's sustained mode (floor.ts), the whole warm pool in one
// burst, `burstConcurrency` launches in flight, until the pool is exhausted; answered launches per
// second (client) and reservations per second (the operator's, from the harness's watch). Then every
// session ends and the pool's refill is timed.
import { APPS } from '../config.js';
import { timeline } from '../launches.js';
import { profiledWindow } from '../cpu-profile.js';
import { cpuMsPerLaunch, endAndRefill, strategies, waitQuiet } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';
import { pool, prefix, round, summarize } from '../util.js';
import { Floor } from './floor.js';

export const claimThroughput: Scenario = {
  name: 'claim-throughput',
  title: 'claims per second',
  weight: 9,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run(context: Context) {
    const refilled = await freeWholePool(context);
    const floor = await Floor.open(context, context.sizes.burstConcurrency);
    try {
      return { ...(await floor.sustained()), ...(await claimBurst(context, refilled)) };
    } finally {
      await floor.close();
    }
  },
};

/**
 * Ends the sessions the scenarios before left in the pool and waits for its refill and the quiet after
 * it: a burst of only what they leave (90 instances in a full run, about a second) does not stand
 * apart from the machine's other load. Nothing to do when the whole pool is free.
 */
async function freeWholePool({ bench, sizes, progress }: Context) {
  if (bench.freeReadyInstances(APPS.eager) >= sizes.pool) return undefined;
  progress.step(`ending the sessions of the pool, so the burst has all ${sizes.pool} instances`);
  const refillBeforeMs = await endAndRefill(bench, progress, sizes.pool);
  const quiet = await waitQuiet(bench, { quietMs: sizes.quietMs, timeoutMs: 60_000, cpu: true });
  return { refillBeforeMs, quietBeforeFloorReached: quiet.reached };
}

async function claimBurst(
  { bench, api, sizes, progress }: Context,
  refilled: Awaited<ReturnType<typeof freeWholePool>>,
) {
  const burst = Math.max(1, bench.freeReadyInstances(APPS.eager));
  progress.step(`${burst} warm launches (the whole pool), ${sizes.burstConcurrency} in flight`);
  const t0 = performance.now();
  const cpu0 = bench.cpuSeconds();
  const profiled = profiledWindow('claimBurst');
  let done = 0;
  const launches = await pool(burst, sizes.burstConcurrency, async (i) => {
    const r = await bench.launch(`burst-${i}`, APPS.eager);
    done++;
    progress.at((done / burst) * 0.5, `${done}/${burst}`);
    return r;
  });
  const seconds = (performance.now() - t0) / 1000;
  profiled();
  const cpu = cpuMsPerLaunch(cpu0, bench.cpuSeconds(), burst);
  // The audit log up to here (a marker request), for the timeline.
  await api.snapshot();
  const reservations = bench.sessionSource
    .list()
    .filter((s) => s.spec.user.startsWith('burst-'))
    .map((s) => bench.sessions.get(s.metadata.name))
    .filter((t) => t?.strategy === 'eager' && t.reserved)
    .map((t) => t!.reserved!)
    .sort((a, b) => a - b);
  const reservationSpan = (reservations.at(-1)! - reservations[0]!) / 1000;
  const figures = {
    ...refilled,
    launches: burst,
    concurrency: sizes.burstConcurrency,
    freeInstancesLeft: bench.freeReadyInstances(APPS.eager),
    launchesPerSec: round(burst / seconds),
    claimsPerSecOperator: round(reservations.length / Math.max(reservationSpan, 0.001)),
    ...prefix('latency', summarize(launches.map((r) => r.ms))),
    operatorCpuSecondsPerLaunch: round((cpu.operator ?? 0) / 1000, 4),
    cpuMsPerLaunch: cpu,
    ...strategies(bench, launches),
    timeline: timeline(bench, launches),
  };
  progress.step(`ending all ${sizes.pool} sessions of the pool, pool refill`);
  const refillMs = await endAndRefill(bench, progress, sizes.pool);
  return { claimThroughput: { ...figures, refillMs } };
}

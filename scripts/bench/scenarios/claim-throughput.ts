// Claims per second: right after the floor's sustained mode (floor.ts), the whole warm pool in one
// burst, `burstConcurrency` launches in flight, until the pool is exhausted; answered launches per
// second (client) and reservations per second (the operator's, from the harness's watch). Then every
// session ends and the pool's refill is timed.
import { APPS } from '../config.js';
import { timeline } from '../launches.js';
import { cpuMsPerLaunch, endAndRefill, strategies } from '../measure.js';
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
    await wholePool(context);
    const floor = await Floor.open(context, context.sizes.burstConcurrency);
    try {
      return { ...(await floor.sustained()), ...(await claimBurst(context)) };
    } finally {
      await floor.close();
    }
  },
};

/**
 * The whole pool free for the burst: the scenarios before it in a full run leave part of it taken, and
 * a burst of the few dozen left (about a second) measured whatever else the shared machine did then.
 */
async function wholePool({ bench, sizes, progress }: Context): Promise<void> {
  if (bench.freeReadyInstances(APPS.eager) >= sizes.pool) return;
  progress.step(`ending the sessions of the pool, so the burst has all ${sizes.pool} instances`);
  await endAndRefill(bench, progress, sizes.pool);
}

async function claimBurst({ bench, api, sizes, progress }: Context) {
  const burst = Math.max(1, bench.freeReadyInstances(APPS.eager));
  progress.step(`${burst} warm launches (the whole pool), ${sizes.burstConcurrency} in flight`);
  const t0 = performance.now();
  const cpu0 = bench.cpuSeconds();
  let done = 0;
  const launches = await pool(burst, sizes.burstConcurrency, async (i) => {
    const r = await bench.launch(`burst-${i}`, APPS.eager);
    done++;
    progress.at((done / burst) * 0.5, `${done}/${burst}`);
    return r;
  });
  const seconds = (performance.now() - t0) / 1000;
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
    launches: burst,
    concurrency: sizes.burstConcurrency,
    freeInstancesLeft: bench.freeReadyInstances(APPS.eager),
    launchesPerSec: round(burst / seconds),
    claimsPerSecOperator: round(reservations.length / Math.max(reservationSpan, 0.001)),
    ...prefix('latency', summarize(launches.map((r) => r.ms))),
    operatorCpuSecondsPerLaunch: round((cpu.operator ?? 0) / 1000, 4),
    cpuMsPerLaunch: cpu,
    ...strategies(bench, 'burst-'),
    timeline: timeline(bench, launches),
  };
  progress.step(`ending all ${sizes.pool} sessions of the pool, pool refill`);
  const refillMs = await endAndRefill(bench, progress, sizes.pool);
  return { claimThroughput: { ...figures, refillMs } };
}

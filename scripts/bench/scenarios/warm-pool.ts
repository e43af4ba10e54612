// The warm pool every eager scenario launches from: the app definitions of the run, the pool's first
// fill, and the operator's memory once it is idle with the pool full (not its start-up peak).
import { APPS, appDefinition } from '../config.js';
import { waitPool, waitQuiet } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';
import { processStats } from '../util.js';

export const warmPool: Scenario = {
  name: 'warm-pool',
  title: 'filling the warm pool',
  weight: 8,
  needs: 'ide-cloud',
  async run({ bench, sizes, progress, operatorStats }: Context) {
    progress.step(`filling the warm pool (${sizes.pool} instances)`);
    const t0 = Date.now();
    await bench.applyAppDefinition(appDefinition(APPS.eager, sizes.pool, bench.bridgePort));
    await bench.applyAppDefinition(appDefinition(APPS.lazy, 0, bench.bridgePort));
    await bench.applyAppDefinition(appDefinition(APPS.filler, 0, bench.bridgePort, null));
    await waitPool(bench, progress, APPS.eager, sizes.pool);
    const initialFillMs = Date.now() - t0;
    progress.step('waiting until the operator is idle');
    const quiet = await waitQuiet(bench, { quietMs: sizes.quietMs, timeoutMs: 60_000, cpu: true });
    return {
      poolFill: { instances: sizes.pool, initialFillMs },
      operatorAtStart: {
        rssMb: operatorStats().rssMb,
        serviceRssMb: processStats(bench.servicePid()).rssMb,
        poolInstances: sizes.pool,
        quietReached: quiet.reached,
        msAfterPoolFilled: quiet.waitedMs,
      },
    };
  },
};

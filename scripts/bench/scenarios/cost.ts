// API requests per launch (eager and lazy): `costLaunches` launches one at a time, counted from just
// before them to 2 s after the last answer, net of the background of an idle window just before
// (measure.ts launchCost): all clients from apiserver_request_total, IDE Cloud's own from the audit log.
import { APPS } from '../config.js';
import { launchCost } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';

export const eagerCost: Scenario = {
  name: 'eager-cost',
  title: 'API requests per warm launch',
  weight: 3,
  needs: 'ide-cloud',
  after: ['eager-launch'],
  async run({ bench, api, sizes, progress }: Context) {
    progress.step(`API requests of ${sizes.costLaunches} warm launches`);
    const costEager = await launchCost(
      bench,
      api,
      { launches: sizes.costLaunches, idleMs: Math.min(10_000, sizes.idleWindowMs), quietMs: sizes.quietMs },
      (i) => bench.launch(`eager-cost-${i}`, APPS.eager),
    );
    return { costEager };
  },
};

export const lazyCost: Scenario = {
  name: 'lazy-cost',
  title: 'API requests per lazy launch',
  weight: 4,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run({ bench, api, sizes, progress }: Context) {
    progress.step(`API requests of ${sizes.costLaunches} lazy launches`);
    const costLazy = await launchCost(
      bench,
      api,
      { launches: sizes.costLaunches, idleMs: Math.min(10_000, sizes.idleWindowMs), quietMs: sizes.quietMs },
      (i) => bench.launch(`lazy-cost-${i}`, APPS.lazy),
    );
    progress.step('ending the lazy sessions');
    await bench.deleteSessionsOf(APPS.lazy);
    return { costLazy };
  },
};

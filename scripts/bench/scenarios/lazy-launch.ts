// Launches without a warm pool (start strategy lazy-fallback): the operator creates the session's
// pod and Service, and the launch answers once kwok reports its pod Ready. One at a time, then
// `lazyConcurrent` at once.
import { APPS } from '../config.js';
import type { Launched } from '../launches.js';
import { breakdown, cpuMsPerLaunch, strategies } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';
import { summarize } from '../util.js';

export const lazyLaunch: Scenario = {
  name: 'lazy-launch',
  title: 'lazy launches',
  weight: 11,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run({ bench, sizes, progress }: Context) {
    progress.step(`${sizes.lazySequential} lazy launches, one at a time`);
    const seq: Launched[] = [];
    for (let i = 0; i < sizes.lazySequential; i++) {
      seq.push(await bench.launch(`lazy-seq-${i}`, APPS.lazy));
      progress.at(((i + 1) / sizes.lazySequential) * 0.7, `${i + 1}/${sizes.lazySequential}`);
    }
    const lazySequential = {
      ...summarize(seq.map((l) => l.ms)),
      ...strategies(bench, seq),
      ...breakdown(bench, seq),
    };
    progress.step(`${sizes.lazyConcurrent} lazy launches at once`);
    const cpu0 = bench.cpuSeconds();
    const t0 = performance.now();
    const conc = await Promise.all(
      Array.from({ length: sizes.lazyConcurrent }, (_, i) => bench.launch(`lazy-conc-${i}`, APPS.lazy)),
    );
    const lazyConcurrent = {
      ...summarize(conc.map((l) => l.ms)),
      wallMs: Math.round(performance.now() - t0),
      ...strategies(bench, conc),
      ...breakdown(bench, conc),
      cpuMsPerLaunch: cpuMsPerLaunch(cpu0, bench.cpuSeconds(), sizes.lazyConcurrent),
    };
    return { lazySequential, lazyConcurrent };
  },
};

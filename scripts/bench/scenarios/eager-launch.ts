// Warm launches (start strategy eager): POST /service timed by the client from the request to the URL
// in the answer, first one at a time, then (the pool refilled) `eagerConcurrent` sent at once, each
// mode right after the same mode of the floor (floor.ts). Also the delay from the reservation to
// EnvInjected of the sequential ones (their pods ran already).
import { APPS } from '../config.js';
import { profiledWindow } from '../cpu-profile.js';
import type { Bench } from '../harness.js';
import { timeline, type LaunchRecord } from '../launches.js';
import { breakdown, endAndRefill, strategies } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';
import { prefix, summarize } from '../util.js';
import { Floor } from './floor.js';

export const eagerLaunch: Scenario = {
  name: 'eager-launch',
  title: 'warm launches',
  weight: 18,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run(context: Context) {
    const floor = await Floor.open(context, context.sizes.eagerConcurrent);
    try {
      return await launches(context, floor);
    } finally {
      await floor.close();
    }
  },
};

async function launches({ bench, api, sizes, progress }: Context, floor: Floor) {
  const floorSequential = await floor.sequential();
  progress.step(`${sizes.eagerSequential} warm launches, one at a time`);
  const seq: LaunchRecord[] = [];
  for (let i = 0; i < sizes.eagerSequential; i++) {
    seq.push(await bench.launch(`eager-seq-${i}`, APPS.eager));
    progress.at(((i + 1) / sizes.eagerSequential) * 0.4, `${i + 1}/${sizes.eagerSequential}`);
  }
  await api.snapshot(); // the audit log up to here, for the timeline
  const eagerSequential = {
    ...summarize(seq.map(ms)),
    ...strategies(bench, 'eager-seq-'),
    ...breakdown(bench, 'eager-seq-'),
    timeline: timeline(bench, seq),
  };
  const injectionEphemeral = injectionFromReservation(bench, 'eager-seq-');

  progress.step(`ending the ${sizes.eagerSequential} sessions, pool refill`);
  const refillAfterSequentialMs = await endAndRefill(bench, progress, sizes.pool);
  progress.at(0.8, '');

  const floorParallel = await floor.parallel();
  progress.step(`${sizes.eagerConcurrent} warm launches at once`);
  const t0 = performance.now();
  const profiled = profiledWindow('eagerConcurrent');
  const conc = await Promise.all(
    Array.from({ length: sizes.eagerConcurrent }, (_, i) => bench.launch(`eager-conc-${i}`, APPS.eager)),
  );
  profiled();
  await api.snapshot(); // the audit log up to here, for the timeline
  const eagerConcurrent = {
    ...summarize(conc.map(ms)),
    wallMs: Math.round(performance.now() - t0),
    ...strategies(bench, 'eager-conc-'),
    ...breakdown(bench, 'eager-conc-'),
    timeline: timeline(bench, conc),
  };
  return {
    ...floorSequential,
    ...floorParallel,
    eagerSequential,
    injectionEphemeral,
    eagerConcurrent,
    claimThroughput: { refillAfterSequentialMs },
  };
}

const ms = (l: LaunchRecord) => l.answeredAt - l.sentAt;

/** Eager sessions whose pod was already running: reservation seen → EnvInjected=True seen. */
export function injectionFromReservation(bench: Bench, userPrefix: string): Record<string, number> {
  const delays: number[] = [];
  for (const s of bench.sessionSource.list()) {
    if (!s.spec.user.startsWith(userPrefix)) continue;
    const t = bench.sessions.get(s.metadata.name);
    if (t?.reserved && t.envInjected) delays.push(t.envInjected - t.reserved);
  }
  return prefix('reservedToInjected', summarize(delays));
}

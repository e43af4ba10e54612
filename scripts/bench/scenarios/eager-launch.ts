// Warm launches (start strategy eager): POST /service timed by the client from the request to the URL
// in the answer, first one at a time, then (the pool refilled) `eagerConcurrent` sent at once. Each
// mode runs in rounds, each round right after the floor's round of the same mode (floor.ts), so that
// a slow phase of the shared machine falls on both sides: the figures are those of all rounds
// together, `roundP50sMs` each round's p50. Also the delay from the reservation to EnvInjected of the
// sequential ones (their pods ran already).
import { APPS } from '../config.js';
import { profiledWindow } from '../cpu-profile.js';
import type { Bench } from '../harness.js';
import { timeline, type Launched } from '../launches.js';
import { breakdown, endAndRefill, strategies, waitQuiet } from '../measure.js';
import type { Context, Scenario } from '../scenario.js';
import { prefix, roundP50s, summarize } from '../util.js';
import { Floor, floorFigures, type FloorRound } from './floor.js';

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
  const seqRounds = sizes.eagerSequentialRounds;
  const floorSeq: FloorRound[] = [];
  const seq: Launched[][] = [];
  let launched = 0;
  for (let r = 0; r < seqRounds; r++) {
    floorSeq.push(await floor.sequentialRound(r, share(sizes.floorSequential, seqRounds, r)));
    const count = share(sizes.eagerSequential, seqRounds, r);
    progress.step(`${count} warm launches, one at a time (round ${r + 1} of ${seqRounds})`);
    // As the floor's rounds after the first: the first call after the other side's round is not measured.
    if (r > 0) await bench.launch(`eager-unmeasured-${r}`, APPS.eager);
    const round: Launched[] = [];
    for (let i = 0; i < count; i++) {
      round.push(await bench.launch(`eager-seq-${launched++}`, APPS.eager));
      progress.at(((r + (i + 1) / count) / seqRounds) * 0.4, `${i + 1}/${count}`);
    }
    seq.push(round);
  }
  await api.snapshot(); // the audit log up to here, for the timeline
  const eagerSequential = launchFigures(bench, seq);
  const injectionEphemeral = injectionFromReservation(bench, 'eager-seq-');

  progress.step(`ending the ${sizes.eagerSequential} sessions, pool refill`);
  const refillAfterSequentialMs = await endAndRefill(bench, progress, sizes.pool);
  progress.at(0.6, '');

  const concRounds = sizes.eagerConcurrentRounds;
  const floorConc: FloorRound[] = [];
  const conc: Launched[][] = [];
  const quietBeforeRoundsReached: boolean[] = [];
  for (let r = 0; r < concRounds; r++) {
    if (r > 0) {
      progress.step(`ending round ${r}'s sessions, pool refill`);
      await endAndRefill(bench, progress, sizes.pool);
    }
    // The refill's trailing work (status writes, Events) done before the floor's round, not inside it.
    const quiet = await waitQuiet(bench, { quietMs: sizes.quietMs, timeoutMs: 60_000, cpu: true });
    quietBeforeRoundsReached.push(quiet.reached);
    floorConc.push(await floor.parallelRound(r));
    progress.step(`${sizes.eagerConcurrent} warm launches at once (round ${r + 1} of ${concRounds})`);
    // windows.json holds one window per name: the first round's.
    const profiled = r === 0 ? profiledWindow('eagerConcurrent') : () => undefined;
    conc.push(
      await Promise.all(
        Array.from({ length: sizes.eagerConcurrent }, () => bench.launch(`eager-conc-${launched++}`, APPS.eager)),
      ),
    );
    profiled();
    progress.at(0.6 + ((r + 1) / concRounds) * 0.4, '');
  }
  await api.snapshot(); // the audit log up to here, for the timeline
  const eagerConcurrent = { ...launchFigures(bench, conc), quietBeforeRoundsReached };
  const [floorSequential, specFloorSequential] = floorAndSpecFigures(floorSeq, 1);
  const [floorParallel, specFloorParallel] = floorAndSpecFigures(floorConc, sizes.eagerConcurrent);
  return {
    floorSequential,
    specFloorSequential,
    floorParallel,
    specFloorParallel,
    eagerSequential,
    injectionEphemeral,
    eagerConcurrent,
    claimThroughput: { refillAfterSequentialMs },
  };
}

/** Round `r`'s part of `total` shared out over `rounds` (the parts add up to `total`). */
const share = (total: number, rounds: number, r: number) =>
  Math.floor(((r + 1) * total) / rounds) - Math.floor((r * total) / rounds);

/** The figures of a mode's rounds of launches, taken together; `roundP50sMs`: each round's own p50. */
function launchFigures(bench: Bench, rounds: readonly Launched[][]) {
  const all = rounds.flat();
  return {
    ...summarize(all.map((l) => l.ms)),
    roundP50sMs: roundP50s(rounds.map((round) => round.map((l) => l.ms))),
    ...strategies(bench, all),
    ...breakdown(bench, all),
    timeline: timeline(bench, all),
  };
}

/** The floor's and the spec floor's figures of a mode's rounds. */
function floorAndSpecFigures(rounds: readonly FloorRound[], concurrency: number) {
  const floor = rounds.map((r) => r.floor);
  const spec = rounds.map((r) => r.spec);
  return [floorFigures(floor, concurrency), floorFigures(spec, concurrency)] as const;
}

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

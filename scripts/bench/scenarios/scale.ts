// Scale: sessions are created directly as Session resources, the way the service does, of an app
// definition without a pool (each a lazy session with its own pod, Service and route), in
// steps `scaleLevels`, within `scaleBudgetMs` (a step starts only if the budget leaves it its least
// time, `scaleLevelMinMs`, and its new sessions at the pace of the step before). At each step: a wait of at most `scaleSettleMs` for the
// new sessions to run; an idle window (operator CPU and RSS, background API rate) once IDE Cloud is
// quiet; new warm launches with their API cost net of that background; probe sessions (Session seen →
// first status write seen: a reconcile latency proxy); and GET /service/session calls.
import { diff, perLaunch } from '../apimetrics.js';
import { APPS } from '../config.js';
import { writesAroundUrl } from '../launches.js';
import { peakRssMb, waitQuiet } from '../measure.js';
import type { Figures } from '../results.js';
import type { Context, Scenario } from '../scenario.js';
import { pool, prefix, processStats, round, sleep, summarize, until } from '../util.js';

export const scale: Scenario = {
  name: 'scale',
  title: 'scale',
  weight: 40,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run(context: Context) {
    const { bench, sizes, progress } = context;
    const steps: Figures[] = [];
    let scaleStoppedBefore: number | undefined;
    let fillers = 0;
    const fillerNames: string[] = [];
    // The budget does not count the waits for quiet before the idle windows (added to it as they pass).
    let deadline = Date.now() + sizes.scaleBudgetMs;
    // How long the last step took to get one new session running: a step needs its least time plus that for each new one.
    let msPerNewSession = 0;
    for (const [k, level] of sizes.scaleLevels.entries()) {
      const create = Math.max(0, level - bench.sessionSource.list().length - sizes.scaleProbes - sizes.scaleLaunches);
      if (Date.now() + sizes.scaleLevelMinMs + create * msPerNewSession > deadline) {
        progress.log(`scale: the time budget of ${sizes.scaleBudgetMs / 1000} s ends before ${level} sessions`);
        scaleStoppedBefore = level;
        break;
      }
      progress.step(`${level} sessions`);
      const names = Array.from({ length: create }, (_, j) => `fill-${fillers + j}`);
      fillers += create;
      fillerNames.push(...names);
      const step = await measureStep(context, level, names, fillerNames);
      deadline += step.quietBeforeIdleWaitMs as number;
      if (create > 0) msPerNewSession = (step.fillSettleMs as number) / create;
      steps.push(step);
      progress.at((k + 1) / sizes.scaleLevels.length, '');
    }
    return { scale: steps, ...(scaleStoppedBefore ? { scaleStoppedBefore } : {}) };
  },
};

/** One step (`level` sessions): `names` new filler sessions, then the idle window, launches, probes and list calls. */
async function measureStep(
  { bench, api, sizes, progress, operatorStats }: Context,
  level: number,
  names: string[],
  fillerNames: string[],
): Promise<Figures> {
  const create = names.length;
  const fillStart = Date.now();
  const cpu0 = operatorStats().cpuSeconds;
  await pool(create, sizes.fillConcurrency, (j) => bench.createSession(names[j]!, names[j]!, APPS.filler));
  const createMs = Date.now() - fillStart;
  const settled = await until(
    `${create} filler sessions running`,
    () => {
      const running = names.filter((x) => bench.sessions.get(x)?.running).length;
      progress.note(`${running}/${create} new sessions running`);
      return running === create;
    },
    sizes.scaleSettleMs,
    250,
  ).then(
    () => true,
    () => false,
  );
  const fillMs = Date.now() - fillStart;
  const fillCpu = operatorStats().cpuSeconds - cpu0;
  const runningAfterFill = names.filter((x) => bench.sessions.get(x)?.running).length;

  // Idle window: steady-state CPU, memory and background API traffic, once the trailing work of the
  // fill is over (IDE Cloud quiet for quietMs), or after at most 15 s of waiting for that.
  progress.note('waiting for quiet');
  const quiet = await waitQuiet(bench, { quietMs: sizes.quietMs, timeoutMs: 15_000, cpu: false });
  progress.note('idle window');
  const idleApi0 = await api.snapshot();
  const idleCpu0 = operatorStats().cpuSeconds;
  await sleep(sizes.idleWindowMs);
  const idleApi1 = await api.snapshot();
  const idle = operatorStats();
  const background = { delta: diff(idleApi0, idleApi1), seconds: (idleApi1.at - idleApi0.at) / 1000 };

  // New eager launches at this size (1 s apart, each with a 45 s launch timeout), with their API cost
  // net of the background.
  progress.note('warm launches');
  const launchApi0 = await api.snapshot();
  let launchFailures = 0;
  const records = (
    await Promise.all(
      Array.from({ length: sizes.scaleLaunches }, async (_, j) => {
        await sleep(j * 1000);
        return bench.launch(`scale-${level}-${j}`, APPS.eager, { ephemeral: true, timeout: 0.75 }).catch(() => {
          launchFailures++;
          return undefined;
        });
      }),
    )
  ).filter((x) => x !== undefined);
  const launches = records.map((r) => r.ms);
  await sleep(2000);
  const launchApi1 = await api.snapshot();
  const launchCost = perLaunch(
    diff(launchApi0, launchApi1),
    sizes.scaleLaunches,
    background,
    (launchApi1.at - launchApi0.at) / 1000,
  );
  const ownCost = launchCost.own!;
  const aroundUrl = records.length ? writesAroundUrl(bench, records, launchApi1.at) : undefined;

  // Reconcile latency proxy: Session seen → first status write seen (the harness's watch), for probe
  // sessions created 500 ms apart.
  progress.note('probes');
  const probeNames = Array.from({ length: sizes.scaleProbes }, (_, j) => `probe-${level}-${j}`);
  for (const name of probeNames) {
    await bench.createSession(name, name, APPS.filler);
    await sleep(500);
  }
  await until('probe status', () => probeNames.every((x) => bench.sessions.get(x)?.firstStatus), 60_000, 50).catch(
    () => undefined,
  );
  const firstStatus = (list: string[]) =>
    list
      .map((x) => bench.sessions.get(x))
      .filter((t) => t?.firstStatus && t.added)
      .map((t) => t!.firstStatus! - t!.added!);
  const probes = firstStatus(probeNames);

  // GET /service/session/{appId}/{user} for users that each hold one session.
  progress.note('list calls');
  const list: number[] = [];
  for (let j = 0; j < sizes.scaleListCalls; j++) {
    list.push(await bench.listSessions(fillerNames[Math.floor(Math.random() * fillerNames.length)]!));
  }
  return {
    level,
    sessions: bench.sessionSource.list().length,
    sessionsRunning: bench.sessionSource.list().filter((x) => x.status?.phase === 'Running').length,
    fillCreated: create,
    fillCreateSessionsPerSec: create ? round(create / (createMs / 1000)) : null,
    fillAllRunningWithinSettle: settled,
    fillRunningAfterSettle: runningAfterFill,
    fillSettleMs: fillMs,
    operatorRssMb: idle.rssMb,
    operatorPeakRssMb: await peakRssMb(bench.operatorPid()),
    operatorIdleCpuPercent: round(((idle.cpuSeconds - idleCpu0) / background.seconds) * 100, 1),
    operatorFillCpuMsPerSession: create ? round((fillCpu / create) * 1000, 1) : null,
    backgroundRequestsPerSec: round((background.delta.reads + background.delta.writes) / background.seconds),
    ...prefix('reconcileProbe', summarize(probes)),
    reconcileProbeMissing: sizes.scaleProbes - probes.length,
    ...prefix('reconcileFill', summarize(firstStatus(names))),
    ...prefix('eagerLaunch', summarize(launches)),
    eagerLaunchFailures: launchFailures,
    ...prefix('list', summarize(list)),
    apiReadsPerLaunch: launchCost.reads,
    apiWritesPerLaunch: launchCost.writes,
    apiReadKiBPerLaunch: launchCost.readKiB,
    // IDE Cloud's own (operator and service, audit log), net of their own idle background.
    apiIdeCloudReadsPerLaunch: ownCost.reads,
    apiIdeCloudWritesPerLaunch: ownCost.writes,
    apiIdeCloudWritesWithoutEventsPerLaunch: ownCost.writesWithoutEvents,
    apiIdeCloudEventWritesPerLaunch: ownCost.eventWrites,
    apiIdeCloudWritesBeforeUrlPerLaunch: aroundUrl?.ideCloudWritesBeforeUrlPerLaunch ?? null,
    apiIdeCloudPerLaunchByClient: ownCost.byClient,
    apiIdeCloudWritesPerLaunchByVerbAndResource: ownCost.writesByKey,
    apiIdeCloudFailedWritesPerLaunch: ownCost.failedWritesByKey,
    apiIdeCloudBackgroundReadsPerSec: ownCost.backgroundReadsPerSec,
    apiIdeCloudBackgroundWritesPerSec: ownCost.backgroundWritesPerSec,
    apiIdeCloudBackgroundWritesPerSecByVerbAndResource: ownCost.backgroundWritesPerSecByVerbAndResource,
    auditEventsLost: ownCost.auditEventsLost,
    quietBeforeIdleReached: quiet.reached,
    quietBeforeIdleWaitMs: quiet.waitedMs,
    serviceRssMb: processStats(bench.servicePid()).rssMb,
  };
}

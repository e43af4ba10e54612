// npm run bench: launch latency, claim throughput, cost per launch, scale and injection delay of IDE
// Cloud on its own local control plane (real etcd and kube-apiserver; kwok fakes the nodes, so pod
// start-up is not measured). Prints a Markdown table on stdout and writes BENCHMARKS.json and
// BENCHMARKS.md at the repository root. BENCH_SCALE=0.1 shrinks every size for a quick smoke run.
// It first builds the server (npm run build --workspace server) and runs the operator and the service
// as the image does (its Dockerfile's CMD: node server/dist/bundle/<part>.mjs).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiMetrics, diff, perLaunch, type ApiDelta, type ApiSnapshot } from './apimetrics.js';
import {
  Bench,
  NODE_ENV,
  imageCommand,
  OPERATOR_SETTINGS,
  buildServer,
  commandLine,
  type ServerBuild,
} from './harness.js';
import { writeReports, type Results } from './report.js';
import { Progress, machine, pool, processStats, sleep, summarize, until } from './util.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// ---- Sizes of the scenarios (BENCH_SCALE multiplies them; 1 = the full run) ----
const SCALE = Number(process.env.BENCH_SCALE ?? '1');
const n = (full: number, min = 2) => Math.max(min, Math.round(full * SCALE));
const SIZES = {
  eagerSequential: n(200),
  eagerConcurrent: n(100),
  lazySequential: n(50),
  lazyConcurrent: n(100),
  costLaunches: n(20),
  burstConcurrency: 50,
  injectionLaunches: n(20),
  scaleLevels: [100, 250, 500, 1000].map((x) => n(x, 10)),
  scaleLaunches: n(5),
  scaleListCalls: n(100),
  scaleProbes: n(5),
  fillConcurrency: 20,
  idleWindowMs: Math.max(5000, Math.round(20_000 * Math.min(1, SCALE))),
  /** The scale scenario's time budget, the longest wait for a step's sessions to run, and a step's least time. */
  scaleBudgetMs: Math.max(150_000, Math.round(540_000 * Math.min(1, SCALE))),
  scaleSettleMs: Math.max(10_000, Math.round(30_000 * Math.min(1, SCALE))),
  scaleLevelMinMs: 90_000,
};
/**
 * How long IDE Cloud must have been quiet before an idle reading: longer than the operator's 5 s
 * requeue of a session whose pod is not ready yet, the last trailing work of a launch.
 */
const QUIET_MS = 6000;
/** BENCH_ONLY=scale runs the scale scenario alone (for debugging it). */
const ONLY_SCALE = process.env.BENCH_ONLY === 'scale';
/**
 * One warm pool serves every eager scenario: the sequential launches; then (sessions ended, pool
 * refilled) the concurrent and cost launches, and a burst that takes the rest of the pool.
 */
const POOL = Math.max(SIZES.eagerSequential, SIZES.eagerConcurrent + SIZES.costLaunches) + 10;
const EAGER = 'bench-eager';
const LAZY = 'bench-lazy';
const FILLER = 'bench-filler';

const progress = new Progress();
type Weights = Record<
  'start' | 'pool' | 'seq' | 'conc' | 'cost' | 'refill' | 'burst' | 'lazy' | 'inject' | 'scale',
  number
>;
const log = (line: string) => process.stderr.write(`${line}\n`);

function appDefinition(name: string, minInstances: number, bridgePort: number, maxInstances: number | null = 5000) {
  return {
    name,
    image: `ide-cloud/session-${name}:latest`,
    port: 3000,
    ingressname: 'ide-cloud-sessions',
    minInstances,
    maxInstances,
    // The fake node offers 64 CPUs: at the default 200m a request, it would hold about 300 pods.
    requestsCpu: '10m',
    requestsMemory: '16M',
    options: { dataBridgeEnabled: 'true', dataBridgePort: String(bridgePort) },
  };
}

async function main(): Promise<void> {
  // Built anew on every run (server/dist deleted first), so a stale build is never measured.
  log('building the server: npm run build --workspace server');
  let build: ServerBuild;
  try {
    build = buildServer(root);
  } catch (error) {
    log(`benchmark failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
  log(`built in ${(build.buildMs / 1000).toFixed(1)} s`);
  if (build.uncommittedServerFiles.length) {
    log(`the build includes uncommitted server changes:\n  ${build.uncommittedServerFiles.join('\n  ')}`);
  }
  const bench = new Bench(root);
  let cleaning: Promise<void> | undefined;
  const cleanup = () => (cleaning ??= bench.stop());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`\n${signal}: stopping everything the benchmark started…`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  process.once('exit', () => bench.killSync());

  const started = Date.now();
  const machineBefore = machine();
  const operatorImage = imageCommand(root, 'operator');
  const results: Results = {
    commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root }).toString().trim(),
    date: new Date().toISOString(),
    machine: { ...machineBefore, nproc: Number(execFileSync('nproc').toString().trim()) },
    benchScale: SCALE,
    sizes: { ...SIZES, pool: POOL, quietMs: QUIET_MS },
    operatorSettings: OPERATOR_SETTINGS as Record<string, unknown>,
    runtime: {
      ...build,
      nodeEnv: NODE_ENV,
      // The operator's node flags (the service's are in its command line).
      nodeFlags: operatorImage.nodeFlags,
      entryPoints: { operator: operatorImage.entry, service: imageCommand(root, 'service').entry },
      commandLines: {},
    },
  };
  // Weights of the progress bar: roughly the share of the run's time each step takes.
  const weights: Weights = {
    start: 10,
    pool: 8,
    seq: 8,
    conc: 3,
    cost: 3,
    refill: 6,
    burst: 4,
    lazy: 14,
    inject: 4,
    scale: 40,
  };
  progress.plan(Object.values(weights).reduce((a, b) => a + b, 0));
  try {
    progress.step('starting control plane, operator and service');
    await bench.start((line) => progress.note(line));
    const api = new ApiMetrics(bench.kc, bench.audit);
    // What the measured PIDs run, from /proc: the built entry points, not TypeScript.
    results.runtime!.commandLines = {
      operator: commandLine(bench.operatorPid()),
      service: commandLine(bench.servicePid()),
    };
    progress.advance(weights.start);
    const opStats = () => processStats(bench.operatorPid());

    // ---- warm pool ----
    progress.step(`filling the warm pool (${POOL} instances)`);
    const poolStart = Date.now();
    await bench.applyAppDefinition(appDefinition(EAGER, POOL, bench.bridgePort));
    await bench.applyAppDefinition(appDefinition(LAZY, 0, bench.bridgePort));
    await bench.applyAppDefinition(appDefinition(FILLER, 0, bench.bridgePort, null));
    await waitPool(bench, EAGER, POOL, 900_000);
    results.poolFill = { instances: POOL, initialFillMs: Date.now() - poolStart };
    // The operator's memory once idle: caches synced, the pool filled, then quiet (not the start-up peak).
    progress.note('operator idle?');
    const quiet = await waitQuiet(bench, { quietMs: QUIET_MS, timeoutMs: 60_000, cpu: true });
    results.operatorAtStart = {
      rssMb: opStats().rssMb,
      serviceRssMb: processStats(bench.servicePid()).rssMb,
      poolInstances: POOL,
      quietReached: quiet.reached,
      msAfterPoolFilled: quiet.waitedMs,
    };
    progress.advance(weights.pool);

    if (!ONLY_SCALE) await launchScenarios(bench, api, results, weights, opStats);

    // ---- 5. scale ----
    // Sessions are put in place fast; the operator may not bring them all to Running in the time: each
    // step waits at most scaleSettleMs, records how many run, and measures as things stand.
    results.scale = [];
    let fillers = 0;
    const levelWeight = weights.scale / SIZES.scaleLevels.length;
    // The budget does not count the waits for quiet before the idle windows (added to it as they pass).
    let scaleDeadline = Date.now() + SIZES.scaleBudgetMs;
    const fillerNames: string[] = [];
    for (const level of SIZES.scaleLevels) {
      if (Date.now() + SIZES.scaleLevelMinMs > scaleDeadline) {
        log(`\nscale: the time budget of ${SIZES.scaleBudgetMs / 1000} s ends before ${level} sessions`);
        results.scaleStoppedBefore = level;
        break;
      }
      progress.step(`5 scale: ${level} sessions`);
      const create = Math.max(0, level - bench.sessionSource.list().length - SIZES.scaleProbes - SIZES.scaleLaunches);
      const fillStart = Date.now();
      const cpu0 = opStats().cpuSeconds;
      const names = Array.from({ length: create }, (_, k) => `fill-${fillers + k}`);
      fillers += create;
      fillerNames.push(...names);
      await pool(create, SIZES.fillConcurrency, (k) => bench.createSession(names[k]!, names[k]!, FILLER));
      const createMs = Date.now() - fillStart;
      const settled = await until(
        `${create} filler sessions running`,
        () => {
          const running = names.filter((x) => bench.sessions.get(x)?.running).length;
          progress.note(`${running}/${create} new sessions running`);
          return running === create;
        },
        SIZES.scaleSettleMs,
        250,
      ).then(
        () => true,
        () => false,
      );
      const fillMs = Date.now() - fillStart;
      const fillCpu = opStats().cpuSeconds - cpu0;
      const runningAfterFill = names.filter((x) => bench.sessions.get(x)?.running).length;
      progress.advance(levelWeight * 0.3);

      // Idle window: steady-state CPU, memory and background API traffic, once the trailing work of the
      // fill is over (IDE Cloud quiet for QUIET_MS), or after at most 15 s of waiting for that.
      progress.note('waiting for quiet');
      const quiet = await waitQuiet(bench, { quietMs: QUIET_MS, timeoutMs: 15_000, cpu: false });
      scaleDeadline += quiet.waitedMs;
      progress.note('idle window');
      const idleApi0 = await api.snapshot();
      const idleCpu0 = opStats().cpuSeconds;
      await sleep(SIZES.idleWindowMs);
      const idleApi1 = await api.snapshot();
      const idle = opStats();
      const background = { delta: diff(idleApi0, idleApi1), seconds: (idleApi1.at - idleApi0.at) / 1000 };
      progress.advance(levelWeight * 0.3);

      // New eager launches at this size (1 s apart, each with a 1 minute launch timeout), with their
      // API cost net of the background.
      progress.note('eager launches');
      const launchApi0 = await api.snapshot();
      let launchFailures = 0;
      const launches = (
        await Promise.all(
          Array.from({ length: SIZES.scaleLaunches }, async (_, j) => {
            await sleep(j * 1000);
            return bench.launch(`scale-${level}-${j}`, EAGER, { ephemeral: true, timeout: 0.75 }).then(
              (r) => r.ms,
              () => {
                launchFailures++;
                return undefined;
              },
            );
          }),
        )
      ).filter((x): x is number => x !== undefined);
      await sleep(2000);
      const launchApi1 = await api.snapshot();
      const launchCost = perLaunch(
        diff(launchApi0, launchApi1),
        SIZES.scaleLaunches,
        background,
        (launchApi1.at - launchApi0.at) / 1000,
      );
      const ownCost = launchCost.own!;

      // Reconcile latency proxy: Session seen → first status write seen (this process's watch), for
      // probe sessions created 500 ms apart.
      progress.note('probes');
      const probeNames = Array.from({ length: SIZES.scaleProbes }, (_, j) => `probe-${level}-${j}`);
      for (const name of probeNames) {
        await bench.createSession(name, name, FILLER);
        await sleep(500);
      }
      await until('probe status', () => probeNames.every((x) => bench.sessions.get(x)?.firstStatus), 60_000, 50).catch(
        () => undefined,
      );
      const probes = probeNames
        .map((x) => bench.sessions.get(x))
        .filter((t) => t?.firstStatus && t.added)
        .map((t) => t!.firstStatus! - t!.added!);

      // GET /service/session/{appId}/{user} for users that each hold one session.
      progress.note('list calls');
      const list: number[] = [];
      for (let j = 0; j < SIZES.scaleListCalls; j++) {
        list.push(await bench.listSessions(fillerNames[Math.floor(Math.random() * fillerNames.length)]!));
      }
      const fillReconcile = names
        .map((x) => bench.sessions.get(x))
        .filter((t) => t?.firstStatus && t.added)
        .map((t) => t!.firstStatus! - t!.added!);
      results.scale.push({
        sessions: bench.sessionSource.list().length,
        sessionsRunning: bench.sessionSource.list().filter((x) => x.status?.phase === 'Running').length,
        fillCreated: create,
        fillCreateSessionsPerSec: create ? round(create / (createMs / 1000)) : null,
        fillAllRunningWithinSettle: settled,
        fillRunningAfterSettle: runningAfterFill,
        fillSettleMs: fillMs,
        operatorRssMb: idle.rssMb,
        operatorPeakRssMb: await readHwm(bench.operatorPid()),
        operatorIdleCpuPercent: round(((idle.cpuSeconds - idleCpu0) / background.seconds) * 100, 1),
        operatorFillCpuMsPerSession: create ? round((fillCpu / create) * 1000, 1) : null,
        backgroundRequestsPerSec: round((background.delta.reads + background.delta.writes) / background.seconds),
        ...prefix('reconcileProbe', summarize(probes)),
        reconcileProbeMissing: SIZES.scaleProbes - probes.length,
        ...prefix('reconcileFill', summarize(fillReconcile)),
        ...prefix('eagerLaunch', summarize(launches)),
        eagerLaunchFailures: launchFailures,
        ...prefix('list', summarize(list)),
        apiReadsPerLaunch: launchCost.reads,
        apiWritesPerLaunch: launchCost.writes,
        apiReadKiBPerLaunch: launchCost.readKiB,
        // IDE Cloud's own (operator and service, audit log), net of their own idle background.
        apiIdeCloudReadsPerLaunch: ownCost.reads,
        apiIdeCloudWritesPerLaunch: ownCost.writes,
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
      });
      progress.advance(levelWeight * 0.4);
    }
    results.bridgeRequests = { ...bench.bridgeRequests };
    results.runSeconds = Math.round((Date.now() - started) / 1000);
    results.machine.loadAverage1mEnd = machine().loadAverage1m;
    progress.finish();
  } catch (error) {
    progress.finish();
    log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    log(`operator log (tail):\n${bench.logTail('operator')}\nservice log (tail):\n${bench.logTail('service')}`);
    await cleanup();
    process.exit(1);
  }
  log('stopping everything the benchmark started…');
  await cleanup();
  const table = await writeReports(root, results);
  process.stdout.write(`${table}\n`);
  log('wrote BENCHMARKS.json and BENCHMARKS.md');
}

/** Scenarios 1, 2, 3, 4 and 6: launches against the warm pool and without one. */
async function launchScenarios(
  bench: Bench,
  api: ApiMetrics,
  results: Results,
  weights: Weights,
  opStats: () => { rssMb: number; cpuSeconds: number },
): Promise<void> {
  // ---- 1. eager launches ----
  progress.step(`1 eager launch, ${SIZES.eagerSequential} sequential`);
  const seq: number[] = [];
  for (let i = 0; i < SIZES.eagerSequential; i++) {
    seq.push((await bench.launch(`eager-seq-${i}`, EAGER)).ms);
    progress.advance(weights.seq / SIZES.eagerSequential, `${i + 1}/${SIZES.eagerSequential}`);
  }
  results.eagerSequential = {
    ...summarize(seq),
    ...strategies(bench, 'eager-seq-'),
    ...breakdown(bench, 'eager-seq-'),
  };
  results.injectionEphemeral = injectionFromReservation(bench, ['eager-seq-']);
  progress.step(`3 ending ${SIZES.eagerSequential} eager sessions, pool refill`);
  const refill1 = await endAndRefill(bench);
  progress.advance(weights.refill / 2);

  progress.step(`1 eager launch, ${SIZES.eagerConcurrent} concurrent`);
  const concStart = performance.now();
  const conc = await Promise.all(
    Array.from({ length: SIZES.eagerConcurrent }, (_, i) => bench.launch(`eager-conc-${i}`, EAGER).then((r) => r.ms)),
  );
  results.eagerConcurrent = {
    ...summarize(conc),
    wallMs: Math.round(performance.now() - concStart),
    ...strategies(bench, 'eager-conc-'),
    ...breakdown(bench, 'eager-conc-'),
  };
  progress.advance(weights.conc);

  // ---- 4. cost per eager launch ----
  progress.step(`4 API requests per eager launch (${SIZES.costLaunches} launches)`);
  results.costEager = await cost(bench, api, SIZES.costLaunches, Math.min(10_000, SIZES.idleWindowMs), (i) =>
    bench.launch(`eager-cost-${i}`, EAGER),
  );
  progress.advance(weights.cost);

  // ---- 3. claim throughput: the rest of the pool in one burst, until it is exhausted; then refill ----
  const burst = Math.max(1, bench.freeReadyInstances(EAGER));
  progress.step(`3 claim throughput: ${burst} launches (the rest of the pool), ${SIZES.burstConcurrency} in flight`);
  const burstStart = performance.now();
  const cpuBefore = opStats().cpuSeconds;
  const burstLatencies = await pool(burst, SIZES.burstConcurrency, async (i) => {
    const r = await bench.launch(`burst-${i}`, EAGER);
    progress.advance(weights.burst / burst, `${i + 1}/${burst}`);
    return r.ms;
  });
  const burstSeconds = (performance.now() - burstStart) / 1000;
  const burstStrategies = strategies(bench, 'burst-');
  const reservations = bench.sessionSource
    .list()
    .filter((s) => s.spec.user.startsWith('burst-'))
    .map((s) => bench.sessions.get(s.metadata.name))
    .filter((t) => t?.strategy === 'eager' && t.reserved)
    .map((t) => t!.reserved!)
    .sort((a, b) => a - b);
  const reservationSpan = (reservations.at(-1)! - reservations[0]!) / 1000;
  results.claimThroughput = {
    launches: burst,
    concurrency: SIZES.burstConcurrency,
    freeInstancesLeft: bench.freeReadyInstances(EAGER),
    launchesPerSec: round(burst / burstSeconds),
    claimsPerSecOperator: round(reservations.length / Math.max(reservationSpan, 0.001)),
    ...prefix('latency', summarize(burstLatencies)),
    operatorCpuSecondsPerLaunch: round((opStats().cpuSeconds - cpuBefore) / burst, 4),
    ...burstStrategies,
    refillAfterSequentialMs: refill1,
  };
  progress.step(`3 ending all ${POOL} sessions of the pool, pool refill`);
  results.claimThroughput.refillMs = await endAndRefill(bench);
  progress.advance(weights.refill / 2);

  // ---- 2. lazy launches ----
  progress.step(`2 lazy launch, ${SIZES.lazySequential} sequential`);
  const lazySeq: number[] = [];
  for (let i = 0; i < SIZES.lazySequential; i++) {
    lazySeq.push((await bench.launch(`lazy-seq-${i}`, LAZY)).ms);
    progress.advance((weights.lazy * 0.6) / SIZES.lazySequential, `${i + 1}/${SIZES.lazySequential}`);
  }
  results.lazySequential = {
    ...summarize(lazySeq),
    ...strategies(bench, 'lazy-seq-'),
    ...breakdown(bench, 'lazy-seq-'),
  };
  progress.step(`2 lazy launch, ${SIZES.lazyConcurrent} concurrent`);
  const lazyConcStart = performance.now();
  const lazyConc = await Promise.all(
    Array.from({ length: SIZES.lazyConcurrent }, (_, i) => bench.launch(`lazy-conc-${i}`, LAZY).then((r) => r.ms)),
  );
  results.lazyConcurrent = {
    ...summarize(lazyConc),
    wallMs: Math.round(performance.now() - lazyConcStart),
    ...strategies(bench, 'lazy-conc-'),
  };
  progress.advance(weights.lazy * 0.2);
  progress.step(`4 API requests per lazy launch (${SIZES.costLaunches} launches)`);
  results.costLazy = await cost(bench, api, SIZES.costLaunches, Math.min(10_000, SIZES.idleWindowMs), (i) =>
    bench.launch(`lazy-cost-${i}`, LAZY),
  );
  await bench.deleteSessionsOf(LAZY);
  progress.advance(weights.lazy * 0.2);

  // ---- 6b. injection after the pod restarts with a workspace claim ----
  progress.step(`6 injection delay, ${SIZES.injectionLaunches} workspace-backed eager launches`);
  results.injectionWorkspace = await injectionAfterRestart(bench);
  progress.advance(weights.inject);
}

function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function prefix<T extends object>(name: string, summary: T): Record<string, number> {
  return Object.fromEntries(
    Object.entries(summary).map(([k, v]) => [`${name}${k[0]!.toUpperCase()}${k.slice(1)}`, v as number]),
  );
}

async function readHwm(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round((Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024) * 10) / 10;
}

async function waitPool(bench: Bench, app: string, size: number, timeoutMs: number): Promise<void> {
  await until(
    `${size} free ready instances of ${app}`,
    () => {
      const free = bench.freeReadyInstances(app);
      progress.note(`${free}/${size} free and ready`);
      return free >= size;
    },
    timeoutMs,
    100,
  );
}

/** Start strategies the sessions of users starting with `userPrefix` ended up with. */
function strategies(bench: Bench, userPrefix: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of bench.sessionSource.list()) {
    if (!s.spec.user.startsWith(userPrefix)) continue;
    const key = `strategy_${s.status?.startStrategy ?? 'none'}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Ends every eager session and times the pool's return to full strength. */
async function endAndRefill(bench: Bench): Promise<number> {
  const t0 = Date.now();
  await bench.deleteSessionsOf(EAGER);
  await waitPool(bench, EAGER, POOL, 900_000);
  return Date.now() - t0;
}

/** API requests of `launches` sequential launches, net of the background measured just before. */
async function cost(
  bench: Bench,
  api: ApiMetrics,
  launches: number,
  idleMs: number,
  launch: (i: number) => Promise<unknown>,
): Promise<Record<string, unknown>> {
  // The idle window starts once the trailing work of the preceding launches is over, so that what it
  // measures (and what is subtracted) is the background, not their last reconciles.
  const quiet = await waitQuiet(bench, { quietMs: QUIET_MS, timeoutMs: 60_000, cpu: false });
  const idle0 = await api.snapshot();
  await sleep(idleMs);
  const idle1 = await api.snapshot();
  const background = { delta: diff(idle0, idle1), seconds: (idle1.at - idle0.at) / 1000 };
  const before: ApiSnapshot = await api.snapshot();
  for (let i = 0; i < launches; i++) await launch(i);
  // Work a launch sets off after its answer (injection, events, pool status) belongs to it too.
  await sleep(2000);
  const after = await api.snapshot();
  const delta: ApiDelta = diff(before, after);
  const net = perLaunch(delta, launches, background, (after.at - before.at) / 1000);
  const own = net.own!;
  return {
    launches,
    // All clients (apiserver_request_total), net of the background.
    readsPerLaunch: net.reads,
    writesPerLaunch: net.writes,
    readKiBPerLaunch: net.readKiB,
    rawReadsPerLaunch: round(delta.reads / launches, 1),
    rawWritesPerLaunch: round(delta.writes / launches, 1),
    backgroundRequestsPerSec: round((background.delta.reads + background.delta.writes) / background.seconds),
    perLaunchByVerbAndResource: net.byKey,
    // IDE Cloud's own: the operator's and the service's requests in the audit log (by User-Agent),
    // net of their own requests in the idle window just before (per client, verb and resource).
    ideCloudReadsPerLaunch: own.reads,
    ideCloudWritesPerLaunch: own.writes,
    ideCloudRawReadsPerLaunch: round((delta.own?.reads ?? 0) / launches, 2),
    ideCloudRawWritesPerLaunch: round((delta.own?.writes ?? 0) / launches, 2),
    ideCloudPerLaunchByClient: own.byClient,
    ideCloudWritesPerLaunchByVerbAndResource: own.writesByKey,
    ideCloudReadsPerLaunchByVerbAndResource: own.readsByKey,
    ideCloudFailedWritesPerLaunch: own.failedWritesByKey,
    ideCloudBackgroundReadsPerSec: own.backgroundReadsPerSec,
    ideCloudBackgroundWritesPerSec: own.backgroundWritesPerSec,
    ideCloudBackgroundWritesPerSecByVerbAndResource: own.backgroundWritesPerSecByVerbAndResource,
    ideCloudBackgroundReadsPerSecByVerbAndResource: own.backgroundReadsPerSecByVerbAndResource,
    auditEventsLost: own.auditEventsLost,
    quietBeforeIdleReached: quiet.reached,
    quietBeforeIdleWaitMs: quiet.waitedMs,
  };
}

/**
 * Waits until neither the operator nor the service has made an API request for `quietMs` (their
 * requests in the audit log) and, with `cpu`, the operator has used under 1 % of a core in that time
 * (from /proc); at most `timeoutMs`.
 */
async function waitQuiet(
  bench: Bench,
  options: { quietMs: number; timeoutMs: number; cpu: boolean },
): Promise<{ reached: boolean; waitedMs: number }> {
  const { quietMs, timeoutMs } = options;
  const t0 = Date.now();
  const cpu: { at: number; seconds: number }[] = [];
  for (;;) {
    await bench.audit.poll();
    const now = Date.now();
    const seconds = processStats(bench.operatorPid()).cpuSeconds;
    cpu.push({ at: now, seconds });
    const base = cpu.findLast((x) => now - x.at >= quietMs);
    const noRequests = Object.values(bench.audit.lastRequestAt).every((at) => now - at >= quietMs);
    // /proc counts in 10 ms ticks: allow one tick besides the 1 %.
    const cpuQuiet = !options.cpu || (base !== undefined && seconds - base.seconds <= (0.01 * quietMs) / 1000 + 0.01);
    if (noRequests && cpuQuiet) return { reached: true, waitedMs: now - t0 };
    if (now - t0 > timeoutMs) return { reached: false, waitedMs: now - t0 };
    await sleep(250);
  }
}

/**
 * Where a launch's time goes, from this process's session watch: created → first status write by the
 * operator, created → Running with URL; the rest of the client latency is the service's own work.
 */
function breakdown(bench: Bench, userPrefix: string): Record<string, number> {
  const first: number[] = [];
  const running: number[] = [];
  for (const s of bench.sessionSource.list()) {
    if (!s.spec.user.startsWith(userPrefix)) continue;
    const t = bench.sessions.get(s.metadata.name);
    if (t?.added && t.firstStatus) first.push(t.firstStatus - t.added);
    if (t?.added && t.running) running.push(t.running - t.added);
  }
  const a = summarize(first);
  const b = summarize(running);
  return {
    createdToFirstStatusP50Ms: a.p50Ms,
    createdToFirstStatusP99Ms: a.p99Ms,
    createdToRunningP50Ms: b.p50Ms,
    createdToRunningP99Ms: b.p99Ms,
  };
}

/** Eager sessions whose pod was already running: reservation seen → EnvInjected=True seen. */
function injectionFromReservation(bench: Bench, userPrefixes: string[]): Record<string, number> {
  const delays: number[] = [];
  for (const s of bench.sessionSource.list()) {
    if (!userPrefixes.some((p) => s.spec.user.startsWith(p))) continue;
    const t = bench.sessions.get(s.metadata.name);
    if (t?.reserved && t.envInjected) delays.push(t.envInjected - t.reserved);
  }
  return { ...prefix('reservedToInjected', summarize(delays)) };
}

/**
 * Workspace-backed eager launches: the claim is mounted, so the instance's pod restarts; the delay is
 * from the new pod's Ready (first seen by this process's pod watch) to EnvInjected=True (first seen by
 * its session watch), and the same from the Kubernetes timestamps (1 s granularity).
 */
async function injectionAfterRestart(bench: Bench): Promise<Record<string, number>> {
  const sessions: string[] = [];
  const latencies: number[] = [];
  for (let i = 0; i < SIZES.injectionLaunches; i++) {
    const user = `inject-${i}`;
    const r = await bench.launch(user, EAGER, { workspaceName: `ws-inject-${i}` });
    latencies.push(r.ms);
    const session = bench.sessionSource.list().find((s) => s.spec.user === user);
    if (session) sessions.push(session.metadata.name);
    progress.advance(0, `${i + 1}/${SIZES.injectionLaunches}`);
  }
  await until(
    'EnvInjected on the workspace-backed sessions',
    () => sessions.every((name) => bench.sessions.get(name)?.envInjected),
    120_000,
    100,
  );
  const watched: number[] = [];
  const k8sTimes: number[] = [];
  for (const name of sessions) {
    const t = bench.sessions.get(name)!;
    const pod = [...bench.pods.values()].find((p) => p.session === name && p.ready);
    if (!pod?.ready) continue;
    watched.push(t.envInjected! - pod.ready);
    if (pod.readyTransition && t.envInjectedTransition) {
      k8sTimes.push(new Date(t.envInjectedTransition).getTime() - new Date(pod.readyTransition).getTime());
    }
  }
  // Back to the pool for the scale scenario: end these sessions and their workspaces.
  await bench.deleteSessionsOf(EAGER);
  for (let i = 0; i < SIZES.injectionLaunches; i++) await bench.resources.workspaces.delete(`ws-inject-${i}`);
  return {
    ...prefix('podReadyToInjected', summarize(watched)),
    ...prefix('podReadyToInjectedK8sTimestamps', summarize(k8sTimes)),
    ...prefix('launch', summarize(latencies)),
  };
}

await main();

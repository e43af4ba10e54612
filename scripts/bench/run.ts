// npm run bench: launch latency, claim throughput, cost per launch, scale and injection delay of IDE
// Cloud on its own local control plane (real etcd and kube-apiserver; kwok fakes the nodes, so pod
// start-up is not measured), each launch figure beside its floor: the API server's bare cost of the
// same writes, measured on the same control plane right before the launches (scenarios/floor.ts). One
// module per scenario in scenarios/; the tables come from report.ts. `--help` for options.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiMetrics } from './apimetrics.js';
import { USAGE, parseOptions, sizes as sizesAt } from './config.js';
import { Bench, NODE_ENV, OPERATOR_SETTINGS, buildServer, commandLine, imageCommand } from './harness.js';
import { Progress } from './progress.js';
import { writeReports } from './report.js';
import type { Results } from './results.js';
import type { Context, Scenario } from './scenario.js';
import { claimThroughput } from './scenarios/claim-throughput.js';
import { clickToCode } from './scenarios/click-to-code.js';
import { eagerCost, lazyCost } from './scenarios/cost.js';
import { eagerLaunch } from './scenarios/eager-launch.js';
import { injection } from './scenarios/injection.js';
import { lazyLaunch } from './scenarios/lazy-launch.js';
import { requestCost } from './scenarios/request-cost.js';
import { scale } from './scenarios/scale.js';
import { warmPool } from './scenarios/warm-pool.js';
import { machine, processStats } from './util.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** In the order they run: the request costs before IDE Cloud starts; each later one on what the one before left. */
const SCENARIOS: Scenario[] = [
  requestCost,
  warmPool,
  eagerLaunch,
  eagerCost,
  claimThroughput,
  lazyLaunch,
  lazyCost,
  injection,
  scale,
  clickToCode,
];

/** The scenarios `only` names, with those they need first, in run order. */
function select(only: string[] | undefined): Scenario[] {
  if (!only) return SCENARIOS;
  const wanted = new Set<string>();
  const add = (name: string) => {
    const s = SCENARIOS.find((x) => x.name === name);
    if (!s) throw new Error(`no scenario ${name}; there are ${SCENARIOS.map((x) => x.name).join(', ')}`);
    wanted.add(name);
    for (const before of s.after ?? []) add(before);
  };
  for (const name of only) add(name);
  return SCENARIOS.filter((s) => wanted.has(s.name));
}

async function main(): Promise<void> {
  const options = parseOptions(root);
  if (options === 'help') return void process.stdout.write(`${USAGE}\n`);
  const scenarios = select(options.only);
  const sizes = sizesAt(options.scale);
  const progress = new Progress([{ name: 'build', weight: 2 }, { name: 'start', weight: 4 }, ...scenarios]);
  const needsIdeCloud = scenarios.some((s) => s.needs !== 'control-plane');
  const needsFakeNodes = scenarios.some((s) => s.needs !== 'real-node');

  // The server is built anew on every run (server/dist deleted first), so a stale build is never measured.
  progress.next('npm run build --workspace server');
  const build = needsIdeCloud ? buildServer(root) : undefined;
  if (build?.uncommittedServerFiles.length) {
    progress.log(`the build includes uncommitted server changes:\n  ${build.uncommittedServerFiles.join('\n  ')}`);
  }
  const bench = new Bench(root);
  let cleaning: Promise<void> | undefined;
  const cleanup = () => (cleaning ??= bench.stop());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress.log(`${signal}: stopping everything the benchmark started…`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  process.once('exit', () => bench.killSync());

  const started = Date.now();
  const results: Results = {
    commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root }).toString().trim(),
    date: new Date().toISOString(),
    machine: { ...machine(), nproc: Number(execFileSync('nproc').toString().trim()) },
    benchScale: options.scale,
    ...(options.only ? { scenarios: scenarios.map((s) => s.name) } : {}),
    sizes: { ...sizes },
    operatorSettings: OPERATOR_SETTINGS as Record<string, unknown>,
  };
  try {
    progress.next('starting the control plane');
    if (needsFakeNodes) await bench.startCluster((line) => progress.note(line));
    let api: ApiMetrics | undefined;
    const context: Context = {
      bench,
      sizes,
      progress,
      // Made on first use: a run of real-node scenarios alone starts no fake nodes' control plane.
      get api() {
        return (api ??= new ApiMetrics(bench.kc, bench.audit));
      },
      operatorStats: () => processStats(bench.operatorPid()),
    };
    for (const scenario of scenarios) {
      progress.next(scenario.title);
      if (scenario.needs === 'real-node') {
        // The real node's seconds on a quiet machine: the fake nodes' control plane goes first.
        if (bench.operator) results.bridgeRequests = { ...bench.bridgeRequests };
        await cleanup();
      }
      if (scenario.needs === 'ide-cloud' && !bench.operator) {
        progress.step('starting the operator and the service');
        await bench.startIdeCloud();
        results.runtime = runtime(bench, build!);
      }
      merge(results, await scenario.run(context));
    }
    if (bench.operator) results.bridgeRequests ??= { ...bench.bridgeRequests };
    results.runSeconds = Math.round((Date.now() - started) / 1000);
    results.machine.loadAverage1mEnd = machine().loadAverage1m;
    progress.finish();
  } catch (error) {
    progress.log(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    if (bench.operator) {
      progress.log(
        `operator log (tail):\n${bench.logTail('operator')}\nservice log (tail):\n${bench.logTail('service')}`,
      );
    }
    await cleanup();
    process.exit(1);
  }
  process.stderr.write('stopping everything the benchmark started…\n');
  await cleanup();
  // What the parts' cgroups counted up to their stop.
  if (results.runtime) results.runtime.memoryLimits = bench.memoryLimits();
  const tables = await writeReports(options.out, results);
  process.stdout.write(tables);
  process.stderr.write(`wrote BENCHMARKS.json and BENCHMARKS.md in ${options.out}\n`);
}

/** How the operator and the service run: the build and the command lines read from /proc. */
function runtime(bench: Bench, build: ReturnType<typeof buildServer>): NonNullable<Results['runtime']> {
  const operator = imageCommand(root, 'operator');
  return {
    ...build,
    nodeEnv: NODE_ENV,
    // The operator's node flags (the service's are in its command line).
    nodeFlags: operator.nodeFlags,
    entryPoints: { operator: operator.entry, service: imageCommand(root, 'service').entry },
    commandLines: { operator: commandLine(bench.operatorPid()), service: commandLine(bench.servicePid()) },
    memoryLimits: bench.memoryLimits(),
  };
}

/** A scenario's figures into the results; an object already there (e.g. claimThroughput) is extended. */
function merge(results: Results, figures: Partial<Results>): void {
  const target = results as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(figures)) {
    const old = target[k];
    const isObject = (x: unknown) => typeof x === 'object' && x !== null && !Array.isArray(x);
    target[k] = isObject(old) && isObject(v) ? { ...(old as object), ...(v as object) } : v;
  }
}

await main().catch((error: unknown) => {
  process.stderr.write(
    `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});

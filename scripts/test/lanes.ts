// `npm test`'s mocha run, in lanes side by side: each lane is a mocha run of its own with the settings
// of .mocharc.json (its global fixture, so its own control plane and its own leftover-process check)
// on a share of the spec files. Files that share something of the machine (TOGETHER: the real node,
// the builds into the repository) run in one lane, one after the other. Each file, or group of such
// files, goes to the lane with the least work so far, slowest first, by the wall times the last whole
// run recorded (test-artifacts/suite-times.json, from suite-times.ts; on a fresh clone, those of a
// measured run kept in scripts/test/suite-times.json). The run fails if any lane fails.
// IDE_CLOUD_TEST_LANES sets the number of lanes (2).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { suiteTimesFile, SUITE_TIMES_DIR, type SuiteTimes } from '../../test/support/suite-times.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MOCHA = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
/**
 * Files that must run one after the other, in one lane, because they share something of the machine:
 * the real node (one per machine: a file importing its support or scripts starts or borrows it, and
 * `npm start` starts one where none runs yet) and the browsers (Chromium drops a page load with
 * ERR_NETWORK_CHANGED when a network interface comes or goes, as one does for each of the real
 * node's pods), and
 * the builds written into the repository (extension/dist, agent/dist: one lane's build would rewrite
 * what another's VS Code host is installing).
 * Groups that share a file are one group (`togetherGroups`).
 */
export const TOGETHER = [
  /^import [^;]*from '[./]+(?:support|scripts\/cluster)\/real-node[\w-]*\.js';|spawn\('npm', \['start'|^import [^;]*from '[./]+support\/(?:browser|vscode-host)\.js';|\bbrowser: true\b/m,
  /\b(?:packageDataBridge|buildAgent)\(/,
];
/** A file no run has timed yet counts as this many ms. */
const UNTIMED_MS = 10_000;

/** The files of each `<dir>/**\/*.test.ts` pattern of the mocha configuration, in mocha's order. */
export function specFiles(patterns: readonly string[]): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((entry) => {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) return walk(file);
        return entry.name.endsWith('.test.ts') ? [file] : [];
      });
  return patterns
    .map((pattern) => {
      const dir = /^(.+)\/\*\*\/\*\.test\.ts$/.exec(pattern)?.[1];
      if (!dir) throw new Error(`spec pattern ${pattern}: only <dir>/**/*.test.ts is understood here`);
      return dir;
    })
    .flatMap(walk);
}

/** What a whole run recorded: its wall time, each lane's figures and all files' times. */
interface RunTimes {
  totalMs: number;
  lanes: SuiteTimes[];
  files: Record<string, number>;
}

const LAST_RUN = path.join(SUITE_TIMES_DIR, 'suite-times.json');
const MEASURED_RUN = path.join(ROOT, 'scripts', 'test', 'suite-times.json');

/** The wall times per file of the last whole run here, else of the measured run kept in the repository. */
function lastTimes(): Map<string, number> {
  const recorded = JSON.parse(readFileSync(existsSync(LAST_RUN) ? LAST_RUN : MEASURED_RUN, 'utf8')) as RunTimes;
  return new Map(Object.entries(recorded.files));
}

/** The files of each TOGETHER pattern, groups that share a file joined into one. */
export function togetherGroups(files: readonly string[], text: (file: string) => string): string[][] {
  let groups: string[][] = [];
  for (const pattern of TOGETHER) {
    const matched = files.filter((f) => pattern.test(text(f)));
    const joined = groups.filter((g) => g.some((f) => matched.includes(f)));
    const members = new Set([...matched, ...joined.flat()]);
    groups = [...groups.filter((g) => !joined.includes(g)), files.filter((f) => members.has(f))];
  }
  return groups;
}

/** The spec files of each lane, each lane's in the configuration's order. */
export function planLanes(files: readonly string[], lanes: number, times: Map<string, number>): string[][] {
  const weight = (group: string[]) => group.reduce((sum, file) => sum + (times.get(file) ?? UNTIMED_MS), 0);
  const texts = new Map(files.map((f) => [f, readFileSync(path.join(ROOT, f), 'utf8')]));
  const together = togetherGroups(files, (f) => texts.get(f)!);
  const alone = files.filter((f) => !together.some((group) => group.includes(f))).map((f) => [f]);
  const assigned: string[][] = Array.from({ length: lanes }, () => []);
  const load = assigned.map(() => 0);
  for (const group of [...together, ...alone].sort((a, b) => weight(b) - weight(a))) {
    const lightest = load.indexOf(Math.min(...load));
    assigned[lightest]!.push(...group);
    load[lightest]! += weight(group);
  }
  return assigned.map((lane) => files.filter((f) => lane.includes(f)));
}

/** Runs mocha on `files` with `settings`, its output's lines prefixed with the lane; resolves to its exit code. */
function runLane(lane: number, files: string[], settings: Record<string, unknown>, dir: string): Promise<number> {
  const config = path.join(dir, `lane-${lane}.mocharc.json`);
  writeFileSync(config, JSON.stringify({ ...settings, spec: files }));
  // Arguments after the script's name go to every lane's mocha (--grep, --dry-run).
  const child = spawn(process.execPath, [MOCHA, '--config', config, ...process.argv.slice(2)], {
    cwd: ROOT,
    env: { ...process.env, IDE_CLOUD_TEST_LANE: String(lane) },
    // The lane ends when this process does, however (global-fixture.ts): its stdin closes.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    let partial = '';
    from.setEncoding('utf8');
    from.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) to.write(`[${lane}] ${line}\n`);
    });
    from.on('end', () => partial && to.write(`[${lane}] ${partial}\n`));
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

/** The lanes' recorded figures, each lane's total and its slowest files as lines to print. */
function laneTimes(lanes: number): { recorded: SuiteTimes[]; lines: string[] } {
  const recorded: SuiteTimes[] = [];
  const lines = ['', 'Wall time per lane and per test file (test-artifacts/suite-times-<lane>.json):'];
  for (let lane = 0; lane < lanes; lane++) {
    const file = suiteTimesFile(String(lane));
    if (!existsSync(file)) {
      lines.push(`  lane ${lane}: no times recorded`);
      continue;
    }
    const times = JSON.parse(readFileSync(file, 'utf8')) as SuiteTimes;
    recorded.push(times);
    lines.push(`  lane ${lane}: ${(times.totalMs / 1000).toFixed(0)} s`);
    for (const [name, ms] of Object.entries(times.files).slice(0, 15))
      lines.push(`    ${(ms / 1000).toFixed(1).padStart(7)} s  ${name}`);
  }
  return { recorded, lines };
}

async function main(): Promise<void> {
  const settings = JSON.parse(readFileSync(path.join(ROOT, '.mocharc.json'), 'utf8')) as Record<string, unknown>;
  const lanes = Number(process.env.IDE_CLOUD_TEST_LANES ?? 2);
  const times = lastTimes();
  const plan = planLanes(specFiles(settings.spec as string[]), lanes, times);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-lanes-'));
  for (const [lane, files] of plan.entries()) {
    const ms = files.reduce((sum, file) => sum + (times.get(file) ?? UNTIMED_MS), 0);
    console.log(`lane ${lane}: ${files.length} test files, ${(ms / 1000).toFixed(0)} s by the last times recorded`);
  }
  // A lane that ends before it records must not pass off an earlier run's figures as its own.
  for (let lane = 0; lane < lanes; lane++) rmSync(suiteTimesFile(String(lane)), { force: true });
  const started = Date.now();
  const codes = await Promise.all(plan.map((files, lane) => runLane(lane, files, settings, dir)));
  const totalMs = Date.now() - started;
  const { recorded, lines } = laneTimes(lanes);
  console.log(lines.join('\n'));
  console.log(`\nlanes ended in ${(totalMs / 1000).toFixed(0)} s with exit codes ${codes.join(', ')}`);
  // Only a whole run's figures plan the next one (a --grep or --dry-run would skew them); a file a lane
  // did not reach (it crashed) keeps its earlier figure.
  if (process.argv.length === 2) {
    const merged = new Map([...times, ...recorded.flatMap((lane) => Object.entries(lane.files))]);
    const files = Object.fromEntries([...merged].sort((a, b) => b[1] - a[1]));
    writeFileSync(LAST_RUN, `${JSON.stringify({ totalMs, lanes: recorded, files } satisfies RunTimes, null, 2)}\n`);
  }
  process.exitCode = Math.max(...codes);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();

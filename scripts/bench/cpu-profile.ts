// Where a measured window's CPU goes inside the operator and the service. With BENCH_CPU_PROFILE_DIR
// set, both run under V8's profiler (harness.ts) and the scenarios mark their windows (`profiledWindow`:
// the claim burst, the first round of the warm launches at once) in <dir>/windows.json, on the
// monotonic clock the profiler stamps its samples with. Then
//   npx tsx scripts/bench/cpu-profile.ts <dir> [window]
// reads each process's .cpuprofile, keeps the samples inside the window, maps the bundle's frames to
// the sources through its source map, and prints the self time by file and by function, and the
// inclusive time by function: a profile of the whole run is mostly the pool's fill and its refills.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerPart } from './memory-limit.js';

export interface CallFrame {
  functionName: string;
  url: string;
  /** 0-based, as V8 reports them. */
  lineNumber: number;
  columnNumber: number;
}

/** V8's .cpuprofile (node --cpu-prof): the call tree and, per sample, its node and the time since the last. */
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Microseconds on the monotonic clock (process.hrtime), as the profiler's timestamps. */
export interface Window {
  startUs: number;
  endUs: number;
}

/** Where a frame's code is written: a source file and its 1-based line, or a package, or a runtime part. */
export type Locate = (frame: CallFrame) => { where: string; line?: number };

export interface WindowProfile {
  busyMs: number;
  idleMs: number;
  /** Self time by source file (or package, or Node's module), largest first. */
  files: [string, number][];
  /** Self time by function (`name where:line`), largest first. */
  selfByFunction: [string, number][];
  /** Time with the function anywhere on the stack, counted once per sample, largest first. */
  inclusiveByFunction: [string, number][];
}

/** Where a profiled run writes its profiles and windows (BENCH_CPU_PROFILE_DIR), resolved; undefined when not profiled. */
export function cpuProfileDir(env = process.env): string | undefined {
  const dir = env.BENCH_CPU_PROFILE_DIR;
  return dir ? path.resolve(dir) : undefined;
}

/** Where one process of a profiled run writes its .cpuprofile when it stops. */
export function partProfileDir(dir: string, part: ServerPart): string {
  return path.join(dir, part);
}

/** The windows a profiled run marked, by name (none before the first). */
function readWindows(dir: string): Record<string, Window> {
  const file = windowsFile(dir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, Window>) : {};
}

function windowsFile(dir: string): string {
  return path.join(dir, 'windows.json');
}

/** The monotonic clock in microseconds, as V8's profiler stamps samples on Linux. */
function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * Marks a window of the run for the profile's reader when the run is profiled (BENCH_CPU_PROFILE_DIR);
 * answers the function that ends it. Nothing is written otherwise.
 */
export function profiledWindow(name: string, env = process.env): () => void {
  const dir = cpuProfileDir(env);
  if (!dir) return () => undefined;
  const startUs = monotonicUs();
  return () => {
    mkdirSync(dir, { recursive: true });
    const windows = readWindows(dir);
    windows[name] = { startUs, endUs: monotonicUs() };
    writeFileSync(windowsFile(dir), `${JSON.stringify(windows, null, 2)}\n`);
  };
}

/** The samples of `profile` inside `window`: self and inclusive time, each sample lasting until the next. */
export function profileWindow(profile: CpuProfile, window: Window, locate: Locate): WindowProfile {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const label = (frame: CallFrame) => {
    const { where, line } = locate(frame);
    return `${frame.functionName || '(anonymous)'} ${where}${line === undefined ? '' : `:${line}`}`;
  };
  const files = new Map<string, number>();
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const add = (m: Map<string, number>, key: string, us: number) => m.set(key, (m.get(key) ?? 0) + us);
  let busy = 0;
  let idle = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (at < window.startUs || at >= window.endUs) continue;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    add(files, locate(node.callFrame).where, us);
    add(self, label(node.callFrame), us);
    const onStack = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      onStack.add(label(byId.get(id)!.callFrame));
    }
    for (const key of onStack) add(inclusive, key, us);
  }
  const ms = (m: Map<string, number>): [string, number][] =>
    [...m].map(([k, us]): [string, number] => [k, us / 1000]).sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    files: ms(files),
    selfByFunction: ms(self),
    inclusiveByFunction: ms(inclusive),
  };
}

/**
 * Locates frames of bundles (a .map beside the file) at their source; others by package
 * (node_modules), Node's own module, or the runtime's part ('(garbage collector)', '(program)').
 */
export function sourceLocator(root: string): Locate {
  const maps = new Map<string, SourceMap | undefined>();
  const fileOf = (url: string) => (url.startsWith('file://') ? fileURLToPath(url) : url);
  const mapOf = (file: string) => {
    if (!maps.has(file)) {
      const map = `${file}.map`;
      maps.set(file, existsSync(map) ? new SourceMap(JSON.parse(readFileSync(map, 'utf8'))) : undefined);
    }
    return maps.get(file);
  };
  const named = (file: string): string => {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
    return pkg ? pkg[1]! : path.relative(root, file);
  };
  return (frame) => {
    const { url, functionName } = frame;
    if (!url) return { where: functionName.startsWith('(') ? functionName : '(native)' };
    if (url.startsWith('node:')) return { where: url, line: frame.lineNumber + 1 };
    const file = fileOf(url);
    const entry = mapOf(file)?.findEntry(frame.lineNumber, frame.columnNumber);
    if (entry && 'originalSource' in entry && entry.originalSource) {
      // The map names its sources relative to the bundle.
      return { where: named(path.resolve(path.dirname(file), entry.originalSource)), line: entry.originalLine + 1 };
    }
    return { where: named(file), line: frame.lineNumber + 1 };
  };
}

function print(name: string, window: string, p: WindowProfile, rows: number): void {
  const share = (ms: number) => `${((100 * ms) / Math.max(p.busyMs, 1e-9)).toFixed(1).padStart(5)}%`;
  const table = (title: string, entries: [string, number][]) => {
    process.stdout.write(`-- ${title}\n`);
    for (const [key, ms] of entries.slice(0, rows)) {
      process.stdout.write(`${share(ms)} ${ms.toFixed(1).padStart(8)} ms  ${key}\n`);
    }
  };
  process.stdout.write(`\n== ${name}, ${window}: busy ${p.busyMs.toFixed(0)} ms, idle ${p.idleMs.toFixed(0)} ms\n`);
  table('self time by file', p.files);
  table('self time by function', p.selfByFunction);
  table('inclusive time by function', p.inclusiveByFunction);
}

function main(argv: string[]): void {
  const [dirArg, only] = argv;
  if (!dirArg) {
    process.stderr.write('usage: npx tsx scripts/bench/cpu-profile.ts <BENCH_CPU_PROFILE_DIR> [window]\n');
    process.exit(2);
  }
  const dir = path.resolve(dirArg);
  const windows = readWindows(dir);
  if (Object.keys(windows).length === 0) {
    throw new Error(`${windowsFile(dir)}: no window was marked (a profiled run writes it)`);
  }
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const locate = sourceLocator(root);
  for (const name of ['operator', 'service'] as const) {
    const processDir = partProfileDir(dir, name);
    const latest = existsSync(processDir)
      ? readdirSync(processDir)
          .filter((f) => f.endsWith('.cpuprofile'))
          .sort()
          .at(-1)
      : undefined;
    if (!latest) {
      process.stderr.write(`${processDir}: no .cpuprofile (the process writes it when it stops)\n`);
      continue;
    }
    const profile = JSON.parse(readFileSync(path.join(processDir, latest), 'utf8')) as CpuProfile;
    for (const [window, span] of Object.entries(windows)) {
      if (!only || only === window) print(name, window, profileWindow(profile, span, locate), 40);
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));

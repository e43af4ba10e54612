// The one registry of the OS processes the suites start. Each leads a process group of its own and
// carries this run's mark and its own name in its environment, which every descendant inherits, so
// that nothing is lost when a wrapper dies before its child (tsx, npm, a shell): a process is found by
// its mark, not by its parent. The global teardown (global-fixture.ts) fails the run, naming them, if
// any is still alive once the shared control plane has stopped; and when the run ends however it ends
// (exit, a signal, its own SIGKILL), whatever carries the mark is killed.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** Marks every process this run starts, tracked or not (the control plane inherits it too). */
const RUN_VARIABLE = 'IDE_CLOUD_TEST_RUN';
/** The name a tracked process was given, inherited by its descendants. */
const NAME_VARIABLE = 'IDE_CLOUD_TEST_PROCESS';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// A nested run (a suite running mocha) marks its own processes and answers for them itself.
const RUN = `${process.pid}-${randomBytes(6).toString('hex')}`;
process.env[RUN_VARIABLE] = RUN;

interface Entry {
  name: string;
  /** The test file whose code started it. */
  startedBy: string;
}

const entries = new Map<string, Entry>();
/** The label each tracked process was spawned with: its descendants carry it too. */
const labels = new WeakMap<ChildProcess, string>();
let nextId = 1;

/**
 * `signal` to the group `pid` leads, or to `pid` alone when it leads none; gone already is fine. Once
 * only: a second SIGTERM would end a process still stopping gracefully. Only for a process known to
 * be ours: pids are reused (pid_max may be 32768), a live group leader's pid is not.
 */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
  }
}

interface MarkedProcess {
  pid: number;
  pgid: number;
  /** The label of the tracked process it is or descends from. */
  label: string | undefined;
  command: string;
}

/**
 * The live processes carrying this run's mark, but this one and its esbuild service (tsx's, which
 * ends with it). A zombie has ended: not listed.
 */
function markedProcesses(): MarkedProcess[] {
  const found: MarkedProcess[] = [];
  // Without /proc (not Linux) nobody is found: the suites' own stops are all there is.
  if (!existsSync('/proc/self/environ')) return found;
  const mark = `${RUN_VARIABLE}=${RUN}`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0');
      if (!environ.includes(mark)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (Number(ppid) === process.pid && /\/esbuild --service=/.test(command)) continue;
      found.push({
        pid: Number(entry),
        pgid: Number(pgid),
        label: environ.find((v) => v.startsWith(`${NAME_VARIABLE}=`))?.slice(NAME_VARIABLE.length + 1),
        command,
      });
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** The test file in the current call stack (the first frame outside test/support), or "?". */
function callingTestFile(): string {
  for (const line of (new Error().stack ?? '').split('\n')) {
    const file = /(?:file:\/\/)?(\/[^\s():]+\.test\.[cm]?[jt]s)/.exec(line)?.[1];
    if (file) return path.relative(ROOT, file);
  }
  return '?';
}

/**
 * A process that waits for this one's end (its stdin pipe closing: exit, crash or SIGKILL) and then
 * kills whatever carries the run's mark. It carries no mark itself, and leads its own group: a
 * Ctrl-C in the terminal does not reach it.
 */
function startWatchdog(): void {
  // Node passes NODE_V8_COVERAGE on unless the environment names it: undefined, not deleted.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_V8_COVERAGE: undefined };
  delete env[RUN_VARIABLE];
  delete env.NODE_OPTIONS;
  const script = `
    const { readdirSync, readFileSync } = require('node:fs');
    const mark = process.argv[1];
    process.stdin.resume();
    process.stdin.on('end', () => {
      let entries = [];
      try { entries = readdirSync('/proc'); } catch {}
      for (const entry of entries) {
        if (!/^\\d+$/.test(entry)) continue;
        let environ = '';
        try { environ = readFileSync('/proc/' + entry + '/environ', 'latin1'); } catch { continue; }
        if (!environ.split('\\0').includes(mark)) continue;
        try { process.kill(-Number(entry), 'SIGKILL'); } catch { try { process.kill(Number(entry), 'SIGKILL'); } catch {} }
      }
    });`;
  const watchdog = spawn(process.execPath, ['-e', script, `${RUN_VARIABLE}=${RUN}`], {
    detached: true,
    env,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.unref();
  // The pipe stays open as long as this process lives; it must not keep the event loop alive.
  (watchdog.stdin as Writable & { unref(): void }).unref();
}

startWatchdog();
// A normal end (mocha's --exit included) kills at once what is left; the watchdog is for the rest.
process.on('exit', () => {
  for (const marked of markedProcesses()) signalGroup(marked.pid, 'SIGKILL');
});

/**
 * `spawn`, with the process recorded under `name` (say what it is: "service (namespace svc-x)"),
 * leading its own process group, and marked in its environment (`options.env`, or this process's).
 * End it with `endProcess`, which ends its whole group. With `coverage`, a Node process running the
 * project's code writes its coverage where the run collects it (c8's NODE_V8_COVERAGE); others do
 * not (code-server, bundles, builds: a slower exit and megabytes of JSON for nothing).
 */
export function spawnTracked(
  name: string,
  command: string,
  args: readonly string[],
  { coverage = false, ...options }: SpawnOptions & { coverage?: boolean } = {},
): ChildProcess {
  const label = `${name} #${nextId++}`;
  const child = spawn(command, args, {
    ...options,
    detached: true,
    env: {
      ...(options.env ?? process.env),
      // Node passes NODE_V8_COVERAGE on unless the environment names it.
      NODE_V8_COVERAGE: coverage ? process.env.NODE_V8_COVERAGE : undefined,
      [RUN_VARIABLE]: RUN,
      [NAME_VARIABLE]: label,
    },
  });
  entries.set(label, { name, startedBy: callingTestFile() });
  labels.set(child, label);
  return child;
}

/** How long a graceful stop may take before the process group is killed. */
const GRACEFUL_STOP_MS = 20_000;

/**
 * Ends `child`'s process group: `signal` (SIGTERM, a graceful stop, which writes the process's
 * coverage; SIGKILL, a crash, which writes nothing) to all of it, SIGKILL if a graceful stop takes
 * longer than GRACEFUL_STOP_MS, and once `child` exited, SIGKILL to whatever of the group, or of its
 * descendants anywhere, is left.
 * Resolves once `child` exited.
 */
export async function endProcess(child: ChildProcess, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  if (child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  if (child.exitCode === null && child.signalCode === null) {
    signalGroup(child.pid, signal);
    const deadline = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), GRACEFUL_STOP_MS);
    await exited;
    clearTimeout(deadline);
  }
  await exited;
  // What is left of its group, and of its descendants that left the group (an interactive shell
  // leads a group of its own: code-server's shell-environment probe, `bash -i -l`).
  const label = labels.get(child);
  for (const marked of markedProcesses()) {
    if (marked.pgid === child.pid || (label !== undefined && marked.label === label))
      signalGroup(marked.pid, 'SIGKILL');
  }
}

export interface LeftoverProcess {
  pid: number;
  /** The tracked process it is or descends from; undefined when no tracked process started it. */
  name: string | undefined;
  startedBy: string | undefined;
  command: string;
}

/**
 * The processes this run started that are still alive after `graceMs` (polled: a stop may still be
 * under way), each then killed with its group. Empty when the run left nothing behind.
 */
export async function killLeftoverProcesses(graceMs = 5000): Promise<LeftoverProcess[]> {
  const deadline = Date.now() + graceMs;
  let left = markedProcesses();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = markedProcesses();
  }
  for (const leftover of left) signalGroup(leftover.pid, 'SIGKILL');
  return left.map(({ pid, label, command }) => {
    const entry = label === undefined ? undefined : entries.get(label);
    return {
      pid,
      name: entry?.name ?? label,
      startedBy: entry?.startedBy,
      command: command.length > 200 ? `${command.slice(0, 200)}…` : command,
    };
  });
}

/** One line per leftover process, for the failure message. */
export function describeLeftovers(left: readonly LeftoverProcess[]): string {
  return left
    .map(
      (p) =>
        `  pid ${p.pid} ${p.name ? `"${p.name}"` : '(untracked)'}` +
        `${p.startedBy ? ` started by ${p.startedBy}` : ''}: ${p.command}`,
    )
    .join('\n');
}

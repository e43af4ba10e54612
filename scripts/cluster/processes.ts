// Processes of the local cluster (control plane and real node): started detached into their own log
// file, probed by pid, and waited for with a deadline; the build scripts that make their parts.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Whether `pid` still runs: a zombie has ended (only its parent's, or pid 1's, reaping is missing). */
export function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Starts `file` with the log file itself as its stdout/stderr (no pipe through us), leading its own
 * process group: it outlives the command that started it, and its stop ends it with all it started.
 */
export function startDetached(logFile: string, file: string, args: string[], env?: Record<string, string>): number {
  const log = openSync(logFile, 'a');
  const child = spawn(file, args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: env ? { ...process.env, ...env } : process.env,
  });
  closeSync(log);
  child.unref();
  return child.pid!;
}

/** Polls `check` until it holds (a rejection counts as not yet); fails past the deadline or when `pid` exits. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  pid?: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (pid !== undefined && !isAlive(pid)) throw new Error(`${what}: the process exited (see its log)`);
    if (Date.now() > deadline) throw new Error(`${what}: not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Runs a build script (progress on stderr, result lines on stdout); its stdout lines. It leads its own
 * process group with a pipe from this process on its stdin: a script that sources end-with-caller.sh
 * ends, with everything it started, when this process ends, however it ends.
 */
export async function runScript(file: string, args: string[]): Promise<string[]> {
  const child = spawn('bash', [file, ...args], {
    detached: true,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, IDE_CLOUD_BUILD_WATCH_STDIN: '1' },
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  child.stdin.destroy();
  if (code !== 0) throw new Error(`${path.basename(file)} ${args.join(' ')} failed with exit code ${code}`);
  return out.trim().split('\n').filter(Boolean);
}

/**
 * The nearest ancestor of this process whose command is `name` (its first word, as `ps` shows it):
 * the npm that runs a script through a shell and tsx, which outlive npm when npm alone is killed.
 */
export function ancestorNamed(name: string): number | undefined {
  let pid = process.ppid;
  for (let depth = 0; depth < 8 && pid > 1; depth++) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.split(' ')[0]!;
      if (path.basename(command) === name) return pid;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

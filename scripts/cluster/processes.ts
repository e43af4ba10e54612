// Processes of the local cluster (control plane and real node): started detached into their own log
// file, probed by pid, and waited for with a deadline.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

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

// One session setup at a time per workspace folder. With the data bridge two agents run the bootstrap:
// the CLI beside the IDE (the session image starts it; it clones as soon as the bridge holds the values)
// and the agent extension inside the IDE (it starts only once a browser opens the workbench). The lock
// makes the later one wait for the earlier one and then find the clone done (the bootstrap is
// idempotent), so the two never fight over the folder.
// The lock is a file beside the workspace folder (never in it: it would show in the explorer and make
// a blank folder non-empty), falling back to the temporary folder when that is not writable. It is
// created whole in one step (a hard link of a written file), readable by its owner only, and names its
// holder: pid and the process's start time, so that a reused pid does not pass for the holder. A lock
// whose holder is gone (killed before it could release it) is taken over.
import { createHash, randomBytes } from 'node:crypto';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AgentError } from './errors.js';
import type { Log } from './log.js';

export interface WorkspaceLockOptions {
  log?: Log;
  /** Called once, when another setup holds the lock and this one starts waiting. */
  onWait?: () => void;
  /** The longest wait for another setup (default 10 minutes); then WorkspaceBusy. */
  timeoutMs?: number;
  intervalMs?: number;
  /** Where the lock may go, first usable wins (default: the folder's parent, then the temporary folder). */
  lockDirs?: readonly string[];
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const sleepReal = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The lock file's name for a workspace folder: the same for every agent of the session. */
export function lockFileName(dir: string): string {
  const resolved = path.resolve(dir);
  const hash = createHash('sha256').update(resolved).digest('hex').slice(0, 12);
  return `.ide-cloud-setup-${path.basename(resolved).replace(/[^\w.-]/g, '_')}-${hash}.lock`;
}

/** The start time of a process in clock ticks since boot (Linux); undefined elsewhere or when gone. */
async function processStart(pid: number): Promise<{ start: string; zombie: boolean } | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  // The fields after the command's name (which may hold spaces and parentheses): state is the first,
  // starttime the 20th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { start: fields[19] ?? '', zombie: fields[0] === 'Z' || fields[0] === 'X' };
}

async function holderIdentity(): Promise<string> {
  return `${process.pid} ${(await processStart(process.pid))?.start ?? '-'}`;
}

/** Whether the process a lock names still runs (a zombie does not). */
async function holderAlive(content: string): Promise<boolean> {
  const [pidText, start] = content.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (start && start !== '-') {
    const found = await processStart(pid);
    return found !== undefined && !found.zombie && found.start === start;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the lock whole, or answers false when it exists; throws what makes the place unusable. */
async function tryCreate(lock: string, content: string): Promise<boolean> {
  const draft = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, content, { mode: 0o600, flag: 'wx' });
  try {
    await link(draft, lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

/** Moves a stale lock aside; puts it back if, meanwhile, it was another (a fresh holder's). */
async function takeOver(lock: string, stale: string, log: Log): Promise<void> {
  const aside = `${lock}.stale-${randomBytes(4).toString('hex')}`;
  try {
    await rename(lock, aside);
  } catch {
    return; // gone already: the next attempt sees
  }
  const moved = await readFile(aside, 'utf8').catch(() => '');
  if (moved !== stale) await link(aside, lock).catch(() => undefined);
  else log('an earlier session setup ended without finishing; taking over');
  await unlink(aside).catch(() => undefined);
}

/**
 * Runs `fn` holding the workspace folder's setup lock, waiting while another live process holds it.
 * Where no lock can be made at all (no writable place), `fn` runs without one: the setup must not
 * keep the student out.
 */
export async function withWorkspaceLock<T>(
  dir: string,
  fn: () => Promise<T>,
  options: WorkspaceLockOptions = {},
): Promise<T> {
  const log = options.log ?? (() => {});
  const sleep = options.sleep ?? sleepReal;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  const intervalMs = options.intervalMs ?? 250;
  const places = options.lockDirs ?? [path.dirname(path.resolve(dir)), os.tmpdir()];
  const me = await holderIdentity();
  const start = now();
  let waiting = false;
  let held: string | undefined;

  for (const place of places) {
    const lock = path.join(place, lockFileName(dir));
    try {
      for (;;) {
        if (await tryCreate(lock, me)) {
          held = lock;
          break;
        }
        const content = await readFile(lock, 'utf8').catch((error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOENT') return undefined; // released just now: try again
          throw error; // unreadable (another user's): this place cannot hold our lock
        });
        if (content === undefined) continue;
        if (!(await holderAlive(content))) {
          await takeOver(lock, content, log);
          continue;
        }
        if (!waiting) {
          waiting = true;
          log('another session setup is under way in this workspace; waiting for it to finish');
          options.onWait?.();
        }
        if (now() - start >= timeoutMs) {
          throw new AgentError(
            'WorkspaceBusy',
            `another session setup has held the workspace ${dir} for ${Math.round(timeoutMs / 1000)} s`,
            'Run the session setup again once it has finished',
          );
        }
        await sleep(intervalMs);
      }
      break;
    } catch (error) {
      if (error instanceof AgentError) throw error;
      // This place cannot hold a lock (read-only, missing, no hard links): the next one.
    }
  }
  if (held === undefined) log('no place for the setup lock is writable; going on without it');
  if (waiting && held !== undefined) log('the other session setup has finished');
  try {
    return await fn();
  } finally {
    if (held !== undefined) {
      const content = await readFile(held, 'utf8').catch(() => undefined);
      if (content === me) await unlink(held).catch(() => undefined);
    }
  }
}

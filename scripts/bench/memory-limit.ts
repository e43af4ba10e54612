// The operator and the service run under the memory limit their pods get from the chart, as the kubelet
// applies it: inside a memory cgroup of that size, without swap. Node sizes V8's heap from its cgroup's
// limit (BENCHMARKS.md, Method), so without it the RSS measured would be a process the chart never runs.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export type ServerPart = 'operator' | 'service';

/** A memory cgroup made for one process: its directory, the files it is joined and read by. */
export interface MemoryCgroup {
  dir: string;
  version: 1 | 2;
}

/** The limit a part ran under (its cgroup), or why it ran without one; with what the cgroup saw of it. */
export type AppliedMemoryLimit = { quantity: string } & (
  { cgroup: string; cgroupVersion: 1 | 2; usage?: MemoryUsage } | { notApplied: string }
);

/** The cgroup's own count: its peak charge and how often the limit bit (a failed charge, an OOM kill). */
export interface MemoryUsage {
  peakMb: number;
  limitHits: number;
  oomKills: number;
}

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** `<part>.resources.limits.memory` of charts/ide-cloud/values.yaml: the quantity and its bytes (rounded up). */
export function chartMemoryLimit(root: string, part: ServerPart): { quantity: string; bytes: number } {
  const values = YAML.parse(readFileSync(path.join(root, 'charts/ide-cloud/values.yaml'), 'utf8')) as Record<
    string,
    { resources?: { limits?: { memory?: unknown } } } | undefined
  >;
  const limit = values[part]?.resources?.limits?.memory;
  const quantity = typeof limit === 'number' ? String(limit) : typeof limit === 'string' ? limit : '';
  const match = /^(\d+(?:\.\d+)?)(k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(quantity);
  if (!match) throw new Error(`charts/ide-cloud/values.yaml: ${part}.resources.limits.memory is not a memory quantity`);
  return { quantity, bytes: Math.ceil(Number(match[1]) * UNITS[match[2] ?? '']!) };
}

/** The cgroups of a run are named after its process; a run killed before it removed its own leaves them empty. */
const PREFIX = 'ide-cloud-bench-';
let made = 0;

/**
 * A memory cgroup for one process of `part`, of `bytes` and no swap, a child of this process's own
 * (cgroup v2, else v1's memory hierarchy), or why none could be made (none is left behind then).
 * Empty ones of runs gone are removed first.
 */
export function makeMemoryCgroup(part: ServerPart, bytes: number): MemoryCgroup | { reason: string } {
  const version = existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1;
  let dir: string | undefined;
  try {
    const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const own =
      version === 2
        ? lines.find((line) => line.startsWith('0::'))
        : lines.find((line) => line.split(':')[1]?.split(',').includes('memory'));
    const parent = path.join(
      version === 2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory',
      own?.split(':').slice(2).join(':') ?? '',
    );
    if (!own || !existsSync(parent)) return { reason: `cgroup v${version}: this process's memory cgroup is not here` };
    for (const entry of readdirSync(parent)) {
      if (entry.startsWith(PREFIX) && !entry.startsWith(`${PREFIX}${process.pid}-`))
        removeMemoryCgroup({ dir: path.join(parent, entry), version });
    }
    dir = path.join(parent, `${PREFIX}${process.pid}-${part}-${++made}`);
    mkdirSync(dir);
    if (version === 2) {
      writeFileSync(path.join(dir, 'memory.max'), String(bytes));
      writeFileSync(path.join(dir, 'memory.swap.max'), '0');
    } else {
      writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(bytes));
      // Memory and swap together: only where the kernel accounts swap (without it, no swap to take).
      const memsw = path.join(dir, 'memory.memsw.limit_in_bytes');
      if (existsSync(memsw)) writeFileSync(memsw, String(bytes));
    }
    return { dir, version };
  } catch (error) {
    if (dir) removeMemoryCgroup({ dir, version });
    return { reason: `cgroup v${version}: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** What the cgroup counted so far (undefined once it is gone). */
export function memoryUsage(cgroup: MemoryCgroup): MemoryUsage | undefined {
  const read = (file: string) => readFileSync(path.join(cgroup.dir, file), 'utf8');
  const count = (text: string, key: string) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  try {
    const mb = (bytes: string) => Math.round(Number(bytes) / 1e5) / 10;
    if (cgroup.version === 2) {
      const events = read('memory.events');
      return { peakMb: mb(read('memory.peak')), limitHits: count(events, 'max'), oomKills: count(events, 'oom_kill') };
    }
    return {
      peakMb: mb(read('memory.max_usage_in_bytes')),
      limitHits: Number(read('memory.failcnt')),
      oomKills: count(read('memory.oom_control'), 'oom_kill'),
    };
  } catch {
    return undefined;
  }
}

/** Removes the cgroup once its process has ended (an empty cgroup only; a busy one stays). */
export function removeMemoryCgroup(cgroup: MemoryCgroup): void {
  try {
    rmdirSync(cgroup.dir);
  } catch {
    // still in use, or gone already
  }
}

/**
 * The command that runs `argv` inside `cgroup`: a shell joins it, then becomes the command (exec), so
 * the child's process id is the command's own.
 */
export function inCgroup(cgroup: MemoryCgroup, argv: string[]): string[] {
  return ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', path.join(cgroup.dir, 'cgroup.procs'), ...argv];
}

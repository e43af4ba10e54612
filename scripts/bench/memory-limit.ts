// The operator and the service run under the memory limit their pods get from the chart, as the kubelet
// applies it: inside a memory cgroup of that size. Node sizes V8's heap from its cgroup's limit
// (uv_get_constrained_memory): under the chart's 512Mi the heap limit is about 270 MB, on a host with
// 24 GiB about 4.3 GB, and with that room the collector lets garbage grow far longer before a full
// collection. Without the limit, the RSS measured would be a process the chart never runs.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export type ServerPart = 'operator' | 'service';

/** The limit a part ran under, or the reason it ran without one (the machine's cgroups were not writable). */
export type MemoryLimit = { limit: string; cgroup: string } | { limit: string; notApplied: string };

/** A memory cgroup made for one process: its directory, and the file a process id is written to to join it. */
export interface MemoryCgroup {
  dir: string;
  procs: string;
  version: 1 | 2;
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };

/** `<part>.resources.limits.memory` of charts/ide-cloud/values.yaml: the quantity and its bytes. */
export function chartMemoryLimit(root: string, part: ServerPart): { quantity: string; bytes: number } {
  const values = YAML.parse(readFileSync(path.join(root, 'charts/ide-cloud/values.yaml'), 'utf8')) as Record<
    string,
    { resources?: { limits?: { memory?: unknown } } } | undefined
  >;
  const quantity = values[part]?.resources?.limits?.memory;
  const match = typeof quantity === 'string' ? /^(\d+(?:\.\d+)?)(k|M|G|Ki|Mi|Gi)?$/.exec(quantity) : null;
  if (!match) throw new Error(`charts/ide-cloud/values.yaml: ${part}.resources.limits.memory is not a memory quantity`);
  return { quantity: quantity as string, bytes: Math.floor(Number(match[1]) * UNITS[match[2] ?? '']!) };
}

/**
 * A memory cgroup `name` of `bytes` beside this process's own (cgroup v2, else v1's memory hierarchy),
 * or why none could be made.
 */
export function makeMemoryCgroup(name: string, bytes: number): MemoryCgroup | { reason: string } {
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  try {
    const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const own = v2
      ? lines.find((line) => line.startsWith('0::'))
      : lines.find((line) => line.split(':')[1]?.split(',').includes('memory'));
    if (!own) return { reason: 'this process is in no memory cgroup' };
    const dir = path.join(v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory', own.split(':').slice(2).join(':'), name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(bytes));
    return { dir, procs: path.join(dir, 'cgroup.procs'), version: v2 ? 2 : 1 };
  } catch (error) {
    return { reason: `cgroup ${v2 ? 'v2' : 'v1'}: ${error instanceof Error ? error.message : String(error)}` };
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
  return ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', cgroup.procs, ...argv];
}

// The bench runs the operator and the service under their pods' memory limit from the chart: the
// limit read from the chart's values, and a process started in a cgroup of it (BENCHMARKS.md, Method).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chartMemoryLimit,
  inCgroup,
  makeMemoryCgroup,
  memoryUsage,
  removeMemoryCgroup,
} from '../../scripts/bench/memory-limit.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('bench: the memory limit of the chart', () => {
  it("reads each part's limit from the chart's values", () => {
    assert.deepEqual(chartMemoryLimit(ROOT, 'operator'), { quantity: '512Mi', bytes: 512 * 2 ** 20 });
    assert.deepEqual(chartMemoryLimit(ROOT, 'service'), { quantity: '512Mi', bytes: 512 * 2 ** 20 });
  });

  it('refuses a limit that is no memory quantity, naming the key', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'bench-limit-'));
    try {
      await mkdir(path.join(root, 'charts/ide-cloud'), { recursive: true });
      await writeFile(
        path.join(root, 'charts/ide-cloud/values.yaml'),
        'operator:\n  resources:\n    limits: { memory: lots }\n',
      );
      assert.throws(
        () => chartMemoryLimit(root, 'operator'),
        /operator\.resources\.limits\.memory is not a memory quantity/,
      );
      assert.throws(() => chartMemoryLimit(root, 'service'), /service\.resources\.limits\.memory/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('starts a process inside a memory cgroup of the limit, as itself: Node sizes its heap from the limit', async () => {
    const bytes = 300 * 2 ** 20;
    const cgroup = makeMemoryCgroup('operator', bytes);
    if (!('dir' in cgroup)) {
      // A machine whose cgroups this process cannot write: the bench says so, and judges no RSS.
      assert.match(cgroup.reason, /^cgroup v[12]: /);
      return;
    }
    try {
      const report =
        'console.log(JSON.stringify([process.pid, process.constrainedMemory(), v8.getHeapStatistics().heap_size_limit]))';
      const [command, ...args] = inCgroup(cgroup, [process.execPath, '-e', report]);
      const child = spawn(command!, args);
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      assert.equal(await new Promise((resolve) => child.on('exit', resolve)), 0);
      const [pid, limit, heapLimit] = JSON.parse(out) as number[];
      assert.equal(pid, child.pid, "the child's process id is node's own");
      assert.equal(limit, bytes);
      assert.ok(heapLimit! < bytes, `a heap limit of ${heapLimit} bytes under the cgroup's ${bytes}`);
      assert.ok(memoryUsage(cgroup)!.peakMb > 0, 'the cgroup counted the process');
    } finally {
      removeMemoryCgroup(cgroup);
    }
    assert.equal(existsSync(cgroup.dir), false, 'removed once empty');
  });
});

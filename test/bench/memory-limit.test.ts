// The bench runs the operator and the service under their pods' memory limit from the chart: the
// limit read from the chart's values, and a process started in the cgroup sees it as Node sizes its
// heap from it (process.constrainedMemory, uv_get_constrained_memory).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chartMemoryLimit, inCgroup, makeMemoryCgroup, removeMemoryCgroup } from '../../scripts/bench/memory-limit.js';

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

  it('starts a process inside a memory cgroup of the limit, and Node sees the limit', async () => {
    const bytes = 300 * 2 ** 20;
    const cgroup = makeMemoryCgroup(`ide-cloud-bench-test-${process.pid}`, bytes);
    if (!('dir' in cgroup)) {
      // A machine whose cgroups this process cannot write: the bench says so in its results.
      assert.match(cgroup.reason, /^cgroup v[12]: /);
      return;
    }
    try {
      const [command, ...args] = inCgroup(cgroup, [
        process.execPath,
        '-e',
        'console.log(JSON.stringify({ limit: process.constrainedMemory() }))',
      ]);
      const { stdout } = await promisify(execFile)(command!, args);
      assert.equal((JSON.parse(stdout) as { limit: number }).limit, bytes);
    } finally {
      removeMemoryCgroup(cgroup);
    }
  });
});

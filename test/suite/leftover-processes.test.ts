// The suite's own guard against orphans (issue 28): a run whose suites leave a process running fails,
// naming it and the test file that started it, and kills it; so does one left by a wrapper killed
// alone (its child, reparented, still carries the run's mark). A run killed outright (SIGKILL) leaves
// nothing either: its watchdog kills what it had started. Each case is a mocha run of its own with
// the suites' global fixture, on a fixture file.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAlive } from '../../scripts/cluster/processes.js';
import { eventually } from '../support/kube.js';
import { endProcess, spawnTracked } from '../support/processes.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const MOCHA_CLI = path.join(ROOT, 'node_modules', 'mocha', 'lib', 'cli', 'cli.js');
const REGISTRY = path.join(ROOT, 'test', 'support', 'processes.ts');

interface Run {
  child: ChildProcess;
  output: () => string;
  code: Promise<number | null>;
}

/** mocha as `npm run test:file` runs it, on `file`, in `dir`. */
function mochaRun(dir: string, file: string): Run {
  const child = spawnTracked(
    `mocha on ${file}`,
    process.execPath,
    [
      '--import',
      'tsx',
      MOCHA_CLI,
      '--no-config',
      '--require',
      path.join(ROOT, 'test', 'support', 'global-fixture.ts'),
      '--exit',
      '--timeout',
      '300000',
      path.join(dir, file),
    ],
    // Nothing in these fixtures is still stopping at their end: a short grace before the check.
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, IDE_CLOUD_TEST_LEFTOVER_GRACE_MS: '500' } },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return { child, output: () => output, code };
}

/** The pids a fixture wrote, one a line, once it wrote `count` of them. */
const pidsWritten = (file: string, count: number): Promise<number[]> =>
  eventually(async () => {
    const pids = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
    assert.ok(pids.length >= count, `${pids.length} of ${count} pids written`);
    return pids;
  }, 30_000);

describe('processes a run leaves behind', function () {
  this.timeout(120_000);
  let dir: string;
  let pidsFile: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'leftover-processes-'));
    pidsFile = path.join(dir, 'pids');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * A fixture file whose one test runs `body`, with the registry's spawnTracked and endProcess, `pids`
   * (appends to pidsFile) and `wrapped(name)`.
   */
  async function fixture(name: string, body: string): Promise<string> {
    const file = `${name}.test.ts`;
    await writeFile(
      path.join(dir, file),
      [
        `import { appendFileSync } from 'node:fs';`,
        `import { endProcess, spawnTracked } from ${JSON.stringify(REGISTRY)};`,
        `const pids = (...pids: (number | undefined)[]) => appendFileSync(${JSON.stringify(pidsFile)}, pids.map((p) => p + '\\n').join(''));`,
        // A shell running a sleep in the background; both pids written.
        `const wrapped = async (name: string) => {`,
        `  const child = spawnTracked(name, 'sh', ['-c', 'sleep 300 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });`,
        `  pids(child.pid, await new Promise<number>((resolve) => child.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString())))));`,
        `  return child;`,
        `};`,
        `describe('${name}', () => { it('runs', async () => { ${body} }); });`,
      ].join('\n'),
    );
    return file;
  }

  it('a process left running fails the run, named with the file that started it, and is killed', async () => {
    const file = await fixture(
      'leaky',
      `const child = spawnTracked('leaked sleeper', 'sleep', ['300'], { stdio: 'ignore' }); pids(child.pid);`,
    );
    const run = mochaRun(dir, file);
    const code = await run.code;
    assert.equal(code, 1, run.output());
    assert.match(run.output(), /1 passing/);
    assert.match(run.output(), /left 1 process\(es\) running/);
    assert.match(run.output(), new RegExp(`"leaked sleeper" started by .*${file}: sleep 300`));
    const [pid] = await pidsWritten(pidsFile, 1);
    await eventually(() => assert.ok(!isAlive(pid), `sleep ${pid} still runs`), 10_000);
  });

  it("a wrapper's child left behind when the wrapper alone is killed fails the run too, and is killed", async () => {
    const file = await fixture(
      'orphaning',
      `const child = await wrapped('wrapper');
       process.kill(child.pid!, 'SIGKILL');
       await new Promise((resolve) => child.once('exit', resolve));`,
    );
    const run = mochaRun(dir, file);
    assert.equal(await run.code, 1, run.output());
    assert.match(run.output(), new RegExp(`"wrapper" started by .*${file}: sleep 300`));
    const [wrapper, inner] = await pidsWritten(pidsFile, 2);
    assert.ok(!isAlive(wrapper));
    await eventually(() => assert.ok(!isAlive(inner), `sleep ${inner} still runs`), 10_000);
  });

  it('a run that ended what it started passes', async () => {
    const file = await fixture(
      'tidy',
      `const child = spawnTracked('tidy sleeper', 'sh', ['-c', 'sleep 300 & wait'], { stdio: 'ignore' });
       pids(child.pid);
       await endProcess(child, 'SIGTERM');`,
    );
    const run = mochaRun(dir, file);
    assert.equal(await run.code, 0, run.output());
    assert.doesNotMatch(run.output(), /left \d+ process/);
  });

  it('a run that ended what it started passes, also when a descendant led a process group of its own', async () => {
    // As code-server's shell-environment probe (`bash -i -l`) does: a group of its own, not the child's.
    const file = await fixture(
      'escaping',
      `const child = spawnTracked('escaping sleeper', 'sh', ['-c', 'setsid sleep 300 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
       pids(child.pid, await new Promise<number>((resolve) => child.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString())))));
       await endProcess(child, 'SIGTERM');`,
    );
    const run = mochaRun(dir, file);
    assert.equal(await run.code, 0, run.output());
    assert.doesNotMatch(run.output(), /left \d+ process/);
    const [, escaped] = await pidsWritten(pidsFile, 2);
    assert.ok(!isAlive(escaped), `sleep ${escaped} still runs`);
  });

  it('a run killed outright (SIGKILL) leaves nothing: its watchdog kills what it started', async () => {
    const file = await fixture(
      'killed',
      `await wrapped('sleeper of a killed run');
       await new Promise(() => undefined);`,
    );
    const run = mochaRun(dir, file);
    const started = await pidsWritten(pidsFile, 2);
    assert.ok(started.every(isAlive), 'the fixture runs its processes');
    await endProcess(run.child, 'SIGKILL');
    await eventually(() => assert.deepEqual(started.filter(isAlive), [], 'left running'), 10_000);
  });
});

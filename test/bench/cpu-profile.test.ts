// The profile reader of a profiled benchmark run: only the samples inside a marked window count, each
// lasting until the next sample; self time goes to the sampled frame, inclusive time once to every
// function on its stack; frames of a bundle are found at their source through its source map; a
// window is marked only when the run is profiled.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import {
  profiledWindow,
  profileWindow,
  sourceLocator,
  type CallFrame,
  type CpuProfile,
} from '../../scripts/bench/cpu-profile.js';

const frame = (functionName: string, url = '', lineNumber = -1, columnNumber = -1): CallFrame => ({
  functionName,
  url,
  lineNumber,
  columnNumber,
});

/** root → outer → inner (twice, as recursion shows) and root → (idle); samples every 100 µs from 1000. */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5] },
    { id: 2, callFrame: frame('outer', 'node:net', 9, 0), children: [3] },
    { id: 3, callFrame: frame('inner', 'node:events', 4, 0), children: [4] },
    { id: 4, callFrame: frame('inner', 'node:events', 4, 0) },
    { id: 5, callFrame: frame('(idle)') },
  ],
  startTime: 1000,
  // Sampled at 1000, 1100, 1200, 1300, 1400, 1500; the last sample has no duration.
  samples: [2, 4, 3, 5, 2, 4],
  timeDeltas: [0, 100, 100, 100, 100, 100],
};

const locate = sourceLocator('/nowhere');

describe('bench: where a window of a profiled run spends its CPU', () => {
  it('counts only the samples inside the window, each until the next, and the idle ones apart', () => {
    const all = profileWindow(profile, { startUs: 0, endUs: 10_000 }, locate);
    assert.equal(all.busyMs, 0.4);
    assert.equal(all.idleMs, 0.1);
    const inside = profileWindow(profile, { startUs: 1100, endUs: 1300 }, locate);
    assert.equal(inside.busyMs, 0.2);
    assert.equal(inside.idleMs, 0);
    assert.deepEqual(inside.selfByFunction, [['inner node:events:5', 0.2]]);
  });

  it('gives self time to the sampled frame and inclusive time once per sample to each function on its stack', () => {
    const p = profileWindow(profile, { startUs: 0, endUs: 10_000 }, locate);
    assert.deepEqual(
      new Map(p.selfByFunction),
      new Map([
        ['inner node:events:5', 0.2],
        ['outer node:net:10', 0.2],
      ]),
    );
    assert.deepEqual(
      new Map(p.inclusiveByFunction),
      new Map([
        ['(root) (root)', 0.4],
        ['outer node:net:10', 0.4],
        ['inner node:events:5', 0.2],
      ]),
    );
    assert.deepEqual(
      new Map(p.files),
      new Map([
        ['node:events', 0.2],
        ['node:net', 0.2],
      ]),
    );
  });

  it('finds a bundle frame at its source file and line; a package by its name; the runtime by its part', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cpu-profile-'));
    try {
      writeFileSync(
        path.join(dir, 'source.ts'),
        'export function first(): number {\n  return 1;\n}\n\nexport function hot(n: number): number {\n  return n * 2;\n}\n',
      );
      writeFileSync(
        path.join(dir, 'entry.ts'),
        "import { first, hot } from './source.js';\nconsole.log(first(), hot(2));\n",
      );
      const bundle = path.join(dir, 'out', 'bundle.mjs');
      await build({
        entryPoints: [path.join(dir, 'entry.ts')],
        outfile: bundle,
        bundle: true,
        format: 'esm',
        platform: 'node',
        minifyWhitespace: true,
        sourcemap: 'linked',
        logLevel: 'silent',
      });
      const code = readFileSync(bundle, 'utf8');
      const at = code.indexOf('function hot');
      assert.ok(at >= 0, 'the bundle keeps the function');
      const before = code.slice(0, at).split('\n');
      const bundled = frame('hot', pathToFileURL(bundle).href, before.length - 1, before.at(-1)!.length);
      const inDir = sourceLocator(dir);
      assert.deepEqual(inDir(bundled), { where: 'source.ts', line: 5 });
      assert.deepEqual(inDir(frame('parse', `file://${dir}/node_modules/@kubernetes/client-node/dist/x.js`, 3, 0)), {
        where: '@kubernetes/client-node',
        line: 4,
      });
      assert.deepEqual(inDir(frame('(garbage collector)')), { where: '(garbage collector)' });
      assert.deepEqual(inDir(frame('writev')), { where: '(native)' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('marks a window in <dir>/windows.json only when the run is profiled', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cpu-profile-'));
    try {
      profiledWindow('unprofiled', {})();
      const profiled = path.join(dir, 'profiles');
      const end = profiledWindow('claimBurst', { BENCH_CPU_PROFILE_DIR: profiled });
      end();
      profiledWindow('eagerConcurrent', { BENCH_CPU_PROFILE_DIR: profiled })();
      const windows = JSON.parse(readFileSync(path.join(profiled, 'windows.json'), 'utf8')) as Record<
        string,
        { startUs: number; endUs: number }
      >;
      assert.deepEqual(Object.keys(windows), ['claimBurst', 'eagerConcurrent']);
      for (const w of Object.values(windows)) assert.ok(w.startUs > 0 && w.endUs >= w.startUs);
      assert.ok(windows.eagerConcurrent!.startUs >= windows.claimBurst!.endUs);
      assert.equal(existsSync(path.join(process.cwd(), 'windows.json')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

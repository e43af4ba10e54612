// The click-to-code scenario's pure parts: the clone's time read from a session's log, and its targets
// when the machine allowed no real node (listed as not measured, with the reason) or missed them.
import assert from 'node:assert/strict';
import type { Results } from '../../scripts/bench/results.js';
import { cloneDoneAt, ideListeningAt } from '../../scripts/bench/student.js';
import { clickToCodeTargets } from '../../scripts/bench/targets.js';

const base = {
  commit: 'c',
  date: 'd',
  machine: {} as Results['machine'],
  benchScale: 1,
  sizes: {},
  operatorSettings: {},
};

describe('bench: click to code', () => {
  it("reads the clone's time from the agent's line in a log read with timestamps (nanoseconds cut to ms)", () => {
    const log = [
      '2026-11-26T08:10:00.000000001Z ide-cloud: waiting for the values',
      '2026-11-26T08:10:01.123456789Z done: repository cloned',
    ].join('\n');
    assert.equal(cloneDoneAt(log), Date.parse('2026-11-26T08:10:01.123Z'));
    const relaunch = '2026-11-26T08:10:02.5Z the workspace already holds this repository; left as it is';
    assert.equal(cloneDoneAt(relaunch), Date.parse('2026-11-26T08:10:02.500Z'));
    assert.equal(cloneDoneAt('2026-11-26T08:10:02.5Z cloning http://git/x.git into /w…'), undefined);
  });

  it('reads when code-server listened from its line in a log read with timestamps', () => {
    const log = [
      '2026-11-26T08:10:00.100000000Z [2026-11-26T08:10:00.099Z] info  code-server 4.139.1',
      '2026-11-26T08:10:00.812345678Z [2026-11-26T08:10:00.811Z] info  HTTP server listening on http://0.0.0.0:3000/',
    ].join('\n');
    assert.equal(ideListeningAt(log), Date.parse('2026-11-26T08:10:00.812Z'));
    assert.equal(ideListeningAt('2026-11-26T08:10:00.1Z info  Session server listening on /tmp/s'), undefined);
  });

  it('lists every target as not measured, with the reason, where the machine allows no real node', () => {
    const reason = 'Fake pods only (the real node needs root): sessions start, but nothing runs in their pods.';
    const targets = clickToCodeTargets({ ...base, clickToCode: { measured: false, reason } });
    assert.equal(targets.length, 8);
    for (const t of targets) {
      assert.equal(t.met, undefined);
      assert.equal(t.by, `not measured: ${reason}`);
    }
  });

  it('checks each case against its target, and counts error pages across every case', () => {
    const figures = (p50Ms: number, ideCloud: number, errorPages: string[] = []) => ({
      total: { n: 5, p50Ms, p95Ms: p50Ms },
      ideCloud: { n: 5, p50Ms: ideCloud, p95Ms: ideCloud },
      errorPages,
    });
    const targets = clickToCodeTargets({
      ...base,
      clickToCode: {
        measured: true,
        cases: {
          warmWorkspace: figures(2900, 900),
          warmEphemeral: {
            ...figures(3100, 1100),
            steps: {
              launchAnsweredMs: { p50Ms: 700 },
              workbenchFirstByteMs: { p50Ms: 1100 },
              cloneDoneMs: { p50Ms: 2900 },
              workbenchFirstPaintMs: { p50Ms: 2600 },
              filesShownMs: { p50Ms: 3100 },
            },
          },
          lazy: figures(7000, 5000, ['502 /s/<key>/']),
          relaunch: figures(9000, 6000),
          together: figures(5000, 2000),
        },
      },
    });
    assert.deepEqual(
      targets.map((t) => [t.value, t.met]),
      [
        [2900, true],
        [900, true],
        [3100, false],
        [1100, false],
        [7000, true],
        [9000, false],
        [1, false],
        [0, true],
      ],
    );
    assert.match(
      targets[2]!.by!,
      /the step holding the most time is workbench's first byte → workbench's first paint: 1500 ms/,
    );
  });
});

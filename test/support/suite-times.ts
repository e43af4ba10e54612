// Where a mocha run's wall time goes, per test file, hooks included: from the start of a file's first
// top-level suite to the end of its last. Written as each file ends to
// test-artifacts/suite-times-<lane>.json (the lane runner, scripts/test/lanes.ts, names the lane), so
// every run leaves the figures the next one balances its lanes by.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Mocha from 'mocha';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SUITE_TIMES_DIR = path.join(ROOT, 'test-artifacts');

export interface SuiteTimes {
  lane: string;
  /** The run's own wall time, ms. */
  totalMs: number;
  /** Wall time per test file (relative to the repository), ms, slowest first. */
  files: Record<string, number>;
}

export function suiteTimesFile(lane: string): string {
  return path.join(SUITE_TIMES_DIR, `suite-times-${lane}.json`);
}

/** Records `runner`'s per-file wall times and writes them when it ends. */
export function recordSuiteTimes(runner: Mocha.Runner, lane = 'mocha'): void {
  const started = Date.now();
  const spans = new Map<string, { start: number; end: number }>();
  const topLevel = (suite: Mocha.Suite) => suite.file !== undefined && suite.parent?.root === true;
  runner.on('suite', (suite) => {
    if (!topLevel(suite)) return;
    const file = path.relative(ROOT, suite.file!);
    const now = Date.now();
    spans.set(file, { start: spans.get(file)?.start ?? now, end: now });
  });
  // Written again as each file ends, so that a run killed midway still leaves the figures so far.
  const write = () => {
    const files = [...spans].map(([file, { start, end }]) => [file, end - start] as const).sort((a, b) => b[1] - a[1]);
    const times: SuiteTimes = { lane, totalMs: Date.now() - started, files: Object.fromEntries(files) };
    mkdirSync(SUITE_TIMES_DIR, { recursive: true });
    writeFileSync(suiteTimesFile(lane), `${JSON.stringify(times, null, 2)}\n`);
  };
  runner.on('suite end', (suite) => {
    const span = topLevel(suite) ? spans.get(path.relative(ROOT, suite.file!)) : undefined;
    if (!span) return;
    span.end = Date.now();
    write();
  });
  runner.once('end', write);
}

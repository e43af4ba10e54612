// Loaded by mocha with --require: records each test file's wall time (suite-times.ts); stops the
// shared control plane and the shared real node, if a suite started them (teardown.ts), once every
// suite has run, then fails the run if any process a suite started is still alive (killing it).
import { Socket } from 'node:net';
import type Mocha from 'mocha';
import { describeLeftovers, killLeftoverProcesses } from './processes.js';
import { lane } from './process-wide.js';
import { recordSuiteTimes } from './suite-times.js';
import { runGlobalTeardowns } from './teardown.js';

/** How long processes may take to end once the suites are done (a stop may still be under way). */
const graceMs = Number(process.env.IDE_CLOUD_TEST_LEFTOVER_GRACE_MS ?? 5000);

// Mocha calls a global setup with the runner as `this`.
export function mochaGlobalSetup(this: Mocha.Runner): void {
  recordSuiteTimes(this, lane);
  // A lane exits (its exit handlers kill its control plane and processes) once the lane runner is
  // gone, killed or not: the pipe the runner holds as this process's stdin closes.
  if (lane !== undefined && process.stdin instanceof Socket) {
    process.stdin.once('end', () => process.exit(130));
    process.stdin.resume();
    process.stdin.unref();
  }
}

export async function mochaGlobalTeardown(): Promise<void> {
  await runGlobalTeardowns();
  const left = await killLeftoverProcesses(graceMs);
  if (left.length === 0) return;
  console.error(`\nThe suites left ${left.length} process(es) running (killed now):\n${describeLeftovers(left)}\n`);
  // Mocha ignores a teardown's error and sets the exit code itself after this returns (from an
  // 'exit' listener without --exit): the failure is set last, in an 'exit' listener of our own.
  const fail = () => (process.exitCode = Math.max(Number(process.exitCode ?? 0), 1));
  process.on('exit', fail);
  process.once('beforeExit', () => process.on('exit', fail));
}

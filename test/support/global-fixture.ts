// Loaded by mocha with --require: stops the shared control plane and the shared real node, if a suite
// started them (teardown.ts), once every suite has run, then fails the run if any process a suite
// started is still alive (killing it).
import { describeLeftovers, killLeftoverProcesses } from './processes.js';
import { runGlobalTeardowns } from './teardown.js';

/** How long processes may take to end once the suites are done (a stop may still be under way). */
const graceMs = Number(process.env.IDE_CLOUD_TEST_LEFTOVER_GRACE_MS ?? 5000);

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

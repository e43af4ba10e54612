// What the global teardown (global-fixture.ts) stops besides processes: shared resources a run
// started (the control plane, the real node) register their stop here when their module loads. The
// fixture imports only this and processes.ts, so a run that never uses them does not load them (the
// Kubernetes client alone takes seconds to load on a busy machine, in every nested mocha run).
import { processWide } from './process-wide.js';

const stops = processWide('teardowns', (): (() => Promise<void>)[] => []);

/** Registers `stop` to run at the end of the run (in registration order). */
export function onGlobalTeardown(stop: () => Promise<void>): void {
  stops.push(stop);
}

/** Runs every registered stop, in order. */
export async function runGlobalTeardowns(): Promise<void> {
  for (const stop of stops) await stop();
}

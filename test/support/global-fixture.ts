// Loaded by mocha with --require: stops the shared control plane once every suite has run.
import { stopTestCluster } from './cluster.js';

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestCluster();
}

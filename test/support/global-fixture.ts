// Loaded by mocha with --require: stops the shared control plane and the shared real node once every suite has run.
import { stopTestCluster } from './cluster.js';
import { stopSharedRealNode } from './real-node.js';

export async function mochaGlobalTeardown(): Promise<void> {
  await stopTestCluster();
  await stopSharedRealNode();
}

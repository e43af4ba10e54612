// The test suites' local control plane: started once per test run on first use, stopped at the end.
// Set IDE_CLOUD_TEST_KUBECONFIG to run against one already up (`npm run cluster -- up`) instead.
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import {
  killControlPlaneSync,
  startControlPlane,
  stopControlPlane,
  type ControlPlaneState,
} from '../../scripts/cluster/control-plane.js';
import { lane, processWide } from './process-wide.js';
import { onGlobalTeardown } from './teardown.js';

export interface TestCluster {
  kubeconfig: string;
  kc: k8s.KubeConfig;
}

/** The lane of scripts/test/lanes.ts this run is. */
const LANE = Number(lane ?? 0);

/** One control plane per process, however many times mocha loads this module (process-wide.ts). */
const cluster = processWide('cluster', () => ({}) as { starting?: Promise<TestCluster>; state?: ControlPlaneState });

async function start(): Promise<TestCluster> {
  let kubeconfig = process.env.IDE_CLOUD_TEST_KUBECONFIG;
  if (!kubeconfig) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-test-cluster-'));
    // Lanes side by side (scripts/test/lanes.ts) each have a control plane: their pod IPs must differ,
    // since tests serve a pod's port on its IP.
    const started = await startControlPlane(dir, { podCidr: `127.${1 + LANE}.0.1/16` });
    cluster.state = started;
    process.once('exit', () => killControlPlaneSync(started));
    // A cancelled run (SIGINT/SIGTERM) skips 'exit' handlers: the detached processes must go too.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        killControlPlaneSync(started);
        process.exit(130);
      });
    }
    kubeconfig = started.kubeconfig;
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  return { kubeconfig, kc };
}

/** The shared control plane; the first caller starts it (allow a few minutes the very first time). */
export function useCluster(): Promise<TestCluster> {
  cluster.starting ??= start();
  return cluster.starting;
}

export async function stopTestCluster(): Promise<void> {
  if (cluster.state) await stopControlPlane(cluster.state.dir);
  cluster.state = undefined;
  cluster.starting = undefined;
}

onGlobalTeardown(stopTestCluster);

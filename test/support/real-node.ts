// The real-node suites' control plane: kwok's node and the real node (scripts/cluster/real-node.ts) in
// a fresh temporary directory, with a client for it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import type { RealNodeState } from '../../scripts/cluster/real-node.js';

export interface RealNodeCluster {
  state: ControlPlaneState;
  node: RealNodeState;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
}

/** Seconds since `since` (ms), for the suites' timing lines. */
export const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)} s`;

/** Starts it under a directory named after `suite`; stop it with `stopControlPlane(state.dir)`. */
export async function startRealNodeCluster(suite: string): Promise<RealNodeCluster> {
  // A kubelet, containerd and iptables need root, which CI has: without it this is a failure, not a skip.
  assert.ok(process.getuid?.() === 0, 'the real node needs root');
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), `ide-cloud-${suite}-`)), 'cluster');
  const state = await startControlPlane(dir, { realNode: true });
  const node = JSON.parse(readFileSync(path.join(state.realNode!, 'node.json'), 'utf8')) as RealNodeState;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  return { state, node, kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

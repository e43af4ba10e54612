// The real-node suites' control plane: kwok's node and the real node (scripts/cluster/real-node.ts) in
// a fresh temporary directory, with a client for it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import { buildImage, importImage, type ImageTarget, type RealNodeState } from '../../scripts/cluster/real-node.js';

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

/** Builds (or finds cached) and imports an image into the real node; both steps' times go to `timings`. */
export async function shipImage(node: RealNodeState, target: ImageTarget, timings: string[]): Promise<void> {
  let since = Date.now();
  const archive = await buildImage(target);
  timings.push(`${target} image ${seconds(since)}`);
  since = Date.now();
  await importImage(node, archive);
  timings.push(`${target} import ${seconds(since)}`);
}

/** Runs a command in a pod's container through the API server and kubelet; its stdout (fails unless it succeeds). */
export async function execInPod(
  kc: k8s.KubeConfig,
  namespace: string,
  pod: string,
  container: string,
  command: string[],
): Promise<string> {
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const status = await new Promise<k8s.V1Status>((resolve, reject) => {
    new k8s.Exec(kc).exec(namespace, pod, container, command, stdout, null, null, false, resolve).catch(reject);
  });
  assert.equal(status.status, 'Success', `${command.join(' ')}: ${JSON.stringify(status)}`);
  return out;
}

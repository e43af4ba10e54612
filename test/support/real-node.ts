// The real-node suites' control plane: kwok's node and the real node (scripts/cluster/real-node.ts) in
// a fresh temporary directory, with a client for it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import {
  buildImage,
  importImage,
  readNodeState,
  type ImageTarget,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';

/** The machine paths a real node writes to (and removes when they were absent before). */
const MACHINE_PATHS = [
  '/var/lib/kubelet',
  '/var/log/pods',
  '/var/log/containers',
  '/run/containerd',
  '/var/lib/cni',
  '/run/netns',
  '/sys/fs/cgroup/memory/kubepods',
];

/** What the machine looks like to the real node: chains and rules, links, mount points, paths, ip_forward, ipsets. */
export function machineState() {
  const iptables = ['iptables-save', 'ip6tables-save'].flatMap((save) =>
    execFileSync(save, { encoding: 'utf8' })
      .split('\n')
      // Rules and chains, not the counters or comments; empty built-in tables are as good as absent.
      .filter((line) => line.startsWith('-A ') || (line.startsWith(':') && !/^:[A-Z]+ (ACCEPT|DROP) /.test(line)))
      .map((line) => `${save}: ${line.replace(/ \[\d+:\d+\]$/, '')}`),
  );
  const links = execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(': ')[1]!.split('@')[0]!);
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[4]!)
    // The image builds' store is a cache outside the node.
    .filter((point) => !point.includes('/ide-cloud/images/'));
  const paths = MACHINE_PATHS.filter((p) => existsSync(p));
  const ipForward = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();
  const ipsets = execFileSync('ipset', ['list', '-n'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return {
    iptables: iptables.sort(),
    links: links.sort(),
    mounts: mounts.sort(),
    paths,
    ipForward,
    ipsets: ipsets.sort(),
  };
}

export type MachineState = ReturnType<typeof machineState>;

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
  const node = (await readNodeState(state.realNode!))!;
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

// The real-node suites' control plane: kwok's node and the real node (scripts/cluster/real-node.ts) in
// a fresh temporary directory, with a client for it. Its start has deadlines (the builds, then the
// start itself); a start past one fails with the step it was in and the tails of its logs. The suites
// that can share one node borrow it (borrowSharedRealNode) and give it back as they found it; the
// mocha global teardown stops it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, stopControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import {
  buildImage,
  importImage,
  readNodeState,
  type ImageTarget,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';
import { STORAGE_HELPER_IMAGE } from '../../scripts/cluster/storage.js';
import { GROUP, VERSION } from '../../server/src/model/api-group.js';
import { ARTIFACTS } from './browser.js';
import { eventually } from './kube.js';
import { processWide } from './process-wide.js';
import { onGlobalTeardown } from './teardown.js';

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

/**
 * How long a real node's builds may take (binaries and node images from empty caches: about 17 min on
 * 2 cores), and then its start (about 30 s warm). Both end well before the suites' mocha timeouts
 * (REAL_NODE_HOOK_TIMEOUT_MS) and CI's limit, so a hang fails with its diagnostics instead.
 */
export const REAL_NODE_DEADLINES = { buildsMs: 30 * 60_000, startMs: 5 * 60_000 };
/** The mocha timeout of a hook that starts a real node: past both deadlines. */
export const REAL_NODE_HOOK_TIMEOUT_MS = REAL_NODE_DEADLINES.buildsMs + REAL_NODE_DEADLINES.startMs + 5 * 60_000;

/**
 * Starts a real node of its own under a directory named after `suite` (a suite that stops it itself,
 * `stopControlPlane(state.dir)`); the shared one goes first, as only one real node runs per machine.
 */
export async function startRealNodeCluster(suite: string): Promise<RealNodeCluster> {
  await stopSharedRealNode();
  return startRealNode(suite);
}

async function startRealNode(suite: string): Promise<RealNodeCluster> {
  // A kubelet, containerd and iptables need root, which CI has: without it this is a failure, not a skip.
  assert.ok(process.getuid?.() === 0, 'the real node needs root');
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), `ide-cloud-${suite}-`)), 'cluster');
  const state = await startWithDeadlines(dir, REAL_NODE_DEADLINES, (onStep) =>
    startControlPlane(dir, { realNode: true, onStep }),
  );
  const node = (await readNodeState(state.realNode!))!;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  return { state, node, kc, core: kc.makeApiClient(k8s.CoreV1Api) };
}

/** A step of the build phase (its deadline is REAL_NODE_DEADLINES.buildsMs); the others are the start's. */
const isBuildStep = (step: string): boolean => /^(building|installing)/.test(step);

/**
 * Runs `start` (a control plane's, in `dir`) under two deadlines: `buildsMs` while its steps build,
 * then `startMs` from its first other step. Past one, it stops what `dir` holds and fails with the step
 * it was in and the tail of every log under `dir` (copied whole to test-artifacts/hung-starts/).
 */
export async function startWithDeadlines<T>(
  dir: string,
  deadlines: { buildsMs: number; startMs: number },
  start: (onStep: (step: string) => void) => Promise<T>,
): Promise<T> {
  let step = 'building the binaries';
  let phase: 'builds' | 'start' = 'builds';
  let since = Date.now();
  const onStep = (next: string): void => {
    if (phase === 'builds' && !isBuildStep(next)) [phase, since] = ['start', Date.now()];
    step = next;
  };
  const started = start(onStep);
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<'overdue'>((resolve) => {
    const check = (): void => {
      const limit = phase === 'builds' ? deadlines.buildsMs : deadlines.startMs;
      if (Date.now() - since > limit) resolve('overdue');
      else timer = setTimeout(check, Math.min(1000, limit));
    };
    check();
  });
  try {
    const first = await Promise.race([started, overdue]);
    if (first !== 'overdue') return first;
  } finally {
    clearTimeout(timer);
  }
  const limit = phase === 'builds' ? deadlines.buildsMs : deadlines.startMs;
  const diagnostics = await saveLogs(dir);
  // The abandoned start fails once its processes are gone; what it started meanwhile goes at the second stop.
  await stopControlPlane(dir).catch(() => undefined);
  await Promise.race([started.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
  await stopControlPlane(dir).catch(() => undefined);
  throw new Error(
    `the cluster's ${phase} in ${dir} did not finish within ${limit / 1000} s; it was ${step}.\n${diagnostics}`,
  );
}

/** Lines of each log shown in a hung start's error. */
const LOG_TAIL_LINES = 15;

/** The tail of every log under `dir` (the control plane's and the node's), each whole file kept in test-artifacts. */
async function saveLogs(dir: string): Promise<string> {
  const logs = (await readdir(dir, { recursive: true }).catch(() => [] as string[]))
    .filter((file) => file.endsWith('.log') && !file.endsWith('-audit.log'))
    .sort();
  const kept = path.join(ARTIFACTS, 'hung-starts', path.basename(path.dirname(dir)));
  const tails: string[] = [];
  for (const file of logs) {
    const text = await readFile(path.join(dir, file), 'utf8').catch(() => '');
    await cp(path.join(dir, file), path.join(kept, file)).catch(() => undefined);
    const tail = text
      .trimEnd()
      .split('\n')
      .slice(-LOG_TAIL_LINES)
      .map((line) => `    ${line.slice(0, 300)}`);
    tails.push(`  ${file} (last ${tail.length} lines):`, ...tail);
  }
  return [`logs (whole in ${kept}):`, ...(tails.length ? tails : ['  none yet'])].join('\n');
}

/** One shared node per process, however many times mocha loads this module (process-wide.ts). */
const sharing = processWide('sharedRealNode', () => ({}) as { node?: Promise<RealNodeCluster> });

/**
 * The real node the suites share, started by the first that asks. The borrower gives it back with
 * `giveBack()`: it removes the namespaces and cluster-scoped objects that appeared since it borrowed
 * it and waits until they are gone, so the next suite finds the node as this one did.
 */
export async function borrowSharedRealNode(): Promise<{ cluster: RealNodeCluster; giveBack(): Promise<void> }> {
  if (!sharing.node) {
    // Only one real node runs per machine: a suite's own is stopped by that suite before this starts.
    const starting = (sharing.node = startRealNode('shared'));
    starting.catch(() => {
      if (sharing.node === starting) sharing.node = undefined;
    });
  }
  const cluster = await sharing.node;
  const found = await clusterScoped(cluster.kc);
  return {
    cluster,
    // A node not given back clean is no node for the next suite: it is stopped, the next starts another.
    giveBack: () =>
      giveBack(cluster, found).catch(async (error: unknown) => {
        await stopSharedRealNode();
        throw error;
      }),
  };
}

/** Stops the shared real node, if this process started one (the global teardown, and before a node of a suite's own). */
export async function stopSharedRealNode(): Promise<void> {
  const starting = sharing.node;
  sharing.node = undefined;
  const cluster = await starting?.catch(() => undefined);
  if (!cluster) return;
  await stopControlPlane(cluster.state.dir);
  await rm(path.dirname(cluster.state.dir), { recursive: true, force: true });
}

/** The kinds a suite may leave at cluster scope (a namespace takes the rest with it). */
const CLUSTER_KINDS = [
  ['v1', 'Namespace'],
  ['v1', 'PersistentVolume'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRole'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'],
  ['networking.k8s.io/v1', 'IngressClass'],
  ['storage.k8s.io/v1', 'StorageClass'],
  ['scheduling.k8s.io/v1', 'PriorityClass'],
  ['admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration'],
  ['admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration'],
] as const;
/** The custom resources whose finalizers a stopped operator no longer removes. */
const IDE_CLOUD_PLURALS = ['sessions', 'workspaces', 'appdefinitions'];
/** How long a borrower's objects may take to go (pods end, volumes are deleted by the provisioner). */
const GIVE_BACK_DEADLINE_MS = 3 * 60_000;

type ObjectIds = string[];
const objectId = (apiVersion: string, kind: string, name: string): string => `${apiVersion} ${kind} ${name}`;

async function clusterScoped(kc: k8s.KubeConfig): Promise<ObjectIds> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  const ids: ObjectIds = [];
  for (const [apiVersion, kind] of CLUSTER_KINDS) {
    const list = await client.list(apiVersion, kind);
    for (const item of list.items) ids.push(objectId(apiVersion, kind, item.metadata!.name!));
  }
  return ids;
}

async function giveBack({ kc }: RealNodeCluster, found: ObjectIds): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(kc);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const added = (await clusterScoped(kc)).filter((id) => !found.includes(id));
  const parse = (id: string) => {
    const [apiVersion, kind, name] = id.split(' ') as [string, string, string];
    return { apiVersion, kind, metadata: { name } };
  };
  const namespaces = added.filter((id) => id.startsWith('v1 Namespace '));
  for (const id of namespaces) await client.delete(parse(id)).catch(() => undefined);
  await eventually(
    async () => {
      const left = (await clusterScoped(kc)).filter((id) => namespaces.includes(id));
      // Whatever still carries the operator's finalizers (the suite's operator has stopped) lets go.
      for (const id of left) {
        const namespace = parse(id).metadata.name;
        for (const plural of IDE_CLOUD_PLURALS) {
          const list = (await custom.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace,
            plural,
          })) as { items: k8s.KubernetesObject[] };
          for (const item of list.items.filter((i) => i.metadata?.finalizers?.length))
            await custom
              .patchNamespacedCustomObject(
                {
                  group: GROUP,
                  version: VERSION,
                  namespace,
                  plural,
                  name: item.metadata!.name!,
                  body: { metadata: { finalizers: null } },
                },
                k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
              )
              .catch(() => undefined);
        }
      }
      assert.deepEqual(left, [], 'the namespaces a suite made are not gone yet');
    },
    GIVE_BACK_DEADLINE_MS,
    500,
  );
  // Volumes of the default class are deleted by their provisioner once their claims are gone.
  const volumes = added.filter((id) => id.startsWith('v1 PersistentVolume '));
  await eventually(
    async () => {
      const left = (await clusterScoped(kc)).filter((id) => volumes.includes(id));
      for (const id of left) {
        const volume = await client.read(parse(id)).catch(() => undefined);
        const spec = (volume as k8s.V1PersistentVolume | undefined)?.spec;
        if (spec?.persistentVolumeReclaimPolicy !== 'Delete') await client.delete(parse(id)).catch(() => undefined);
      }
      assert.deepEqual(left, [], 'the volumes a suite made are not gone yet');
    },
    GIVE_BACK_DEADLINE_MS,
    500,
  );
  for (const id of added.filter((i) => !namespaces.includes(i) && !volumes.includes(i)))
    await client.delete(parse(id)).catch(() => undefined);
  await eventually(
    async () =>
      assert.deepEqual(
        (await clusterScoped(kc)).filter((id) => !found.includes(id)),
        [],
      ),
    GIVE_BACK_DEADLINE_MS,
    500,
  );
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

/** The helper image has /bin/sh, mkdir, chmod and rm: enough to write and read a file with the shell's builtins. */
export function shellPod(
  name: string,
  claimName: string,
  script: string,
  placement: Partial<k8s.V1PodSpec>,
): k8s.V1Pod {
  return {
    metadata: { name },
    spec: {
      ...placement,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      // As a session's IDE runs (USER 10001:10001 in images/session-base/Dockerfile, no fsGroup).
      securityContext: { runAsUser: 10001, runAsGroup: 10001, runAsNonRoot: true },
      containers: [
        {
          name: 'shell',
          image: STORAGE_HELPER_IMAGE,
          imagePullPolicy: 'Never',
          command: ['/bin/sh', '-c', script],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }],
    },
  };
}

/** A claim as the operator makes one when no class is configured: no storageClassName at all. */
export function classlessClaim(name: string): k8s.V1PersistentVolumeClaim {
  return {
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } },
  };
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

onGlobalTeardown(stopSharedRealNode);

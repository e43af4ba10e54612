// Helpers of the operator suites: the operator started in-process exactly as main.ts does, with fast
// settings, and a data-bridge stand-in served on a pod's own (loopback) address.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import * as k8s from '@kubernetes/client-node';
import { ideCloudResources, type IdeCloudResources } from '../../server/src/kube/resources.js';
import { LABELS } from '../../server/src/model/api-group.js';
import type { AppDefinitionSpecInput } from '../../server/src/model/app-definition.js';
import { DATA_BRIDGE_RESERVATION_HEADER, DATA_BRIDGE_TOKEN_KEY } from '../../server/src/model/data-bridge.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session, SessionSpec } from '../../server/src/model/session.js';
import {
  isFreeReadyInstance,
  startOperator,
  type OperatorConfigInput,
  type RunningOperator,
} from '../../server/src/operator/index.js';
import { bridgeTokenSecretName, COMPONENT } from '../../server/src/operator/manifests.js';
import { bundlePath, bundleServer } from '../../server/src/build/bundle.js';
import { imageCommand, NODE_ENV, operatorEnv } from '../../scripts/bench/harness.js';
import { eventually } from './kube.js';
import { endProcess, spawnTracked } from './processes.js';

export const FAST: Partial<OperatorConfigInput> = {
  // 10 s of health checks (more under load): room for a restarted pod to get its address and the test its bridge.
  bridgeHealthAttempts: 100,
  bridgeHealthIntervalMs: 100,
  bridgePostAttempts: 5,
  bridgeRequestTimeoutMs: 1000,
  rewatchIntervalMs: 5000,
  activityIntervalMs: 60_000,
  leaseDurationMs: 2000,
  leaseRenewIntervalMs: 300,
};

/**
 * The operator as main.ts starts it. With `logs`, every line it logs (at debug level) is captured
 * there, for the assertions that secrets never reach the logs.
 */
export function testOperator(
  kc: k8s.KubeConfig,
  namespace: string,
  overrides: Partial<OperatorConfigInput> = {},
  logs?: string[],
): Promise<RunningOperator> {
  const logger = logs
    ? pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) })
    : pino({ level: process.env.IDE_CLOUD_TEST_LOG ?? 'silent' });
  return startOperator({ namespace, ...FAST, ...overrides }, { kubeConfig: kc, logger });
}

/** One log line of an operator process (pino's JSON). */
export interface OperatorLogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** The operator as its own OS process (`server/src/operator/main.ts` under tsx), for kills that are real. */
export interface OperatorProcess {
  readonly identity: string;
  readonly child: ChildProcess;
  /** Every JSON line it logged (at debug level), in order. */
  readonly logs: OperatorLogLine[];
  /** What it wrote that was not a JSON line (start-up errors). */
  readonly otherOutput: string[];
  readonly exited: Promise<void>;
  logged(msg: string): OperatorLogLine[];
  /** SIGTERM: a graceful stop (a leader releases its Lease); SIGKILL: a crash. Resolves once it exited. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  stop(): Promise<void>;
}

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../server/src/operator/main.ts');
const SERVER_DIR = path.dirname(path.dirname(path.dirname(MAIN)));

/** How an operator process runs: node's arguments before the environment is added. */
export interface OperatorCommand {
  args: string[];
  /** Runs the project's sources (its coverage counts), not a bundle of them. */
  sources: boolean;
  env: Record<string, string>;
}

/** main.ts under tsx: the sources as they are, counted by coverage. */
const TSX_OPERATOR: OperatorCommand = { args: ['--import', 'tsx', MAIN], sources: true, env: {} };

let bundled: Promise<OperatorCommand> | undefined;

/**
 * The operator as its image runs it (images/server/Dockerfile's command and NODE_ENV): the bundle of
 * this checkout's server/src, built once per run into a temporary directory. It starts in a fraction
 * of tsx's time (which compiles and loads hundreds of modules per start), for suites that restart it
 * many times. Not counted by coverage: its code is the bundle's, not server/src's.
 */
export function bundledOperator(): Promise<OperatorCommand> {
  bundled ??= (async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ide-cloud-operator-bundle-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await bundleServer(dir);
    const { nodeFlags } = imageCommand(path.dirname(SERVER_DIR), 'operator');
    return { args: [...nodeFlags, bundlePath(dir, 'operator')], sources: false, env: { NODE_ENV } };
  })();
  return bundled;
}

/**
 * Starts the operator in a child process (main.ts under tsx, or `command`) with the FAST settings
 * (as environment variables), logging at debug level.
 */
export function spawnOperator(
  kubeconfig: string,
  namespace: string,
  identity: string,
  overrides: Partial<OperatorConfigInput> = {},
  command: OperatorCommand = TSX_OPERATOR,
): OperatorProcess {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    KUBECONFIG: kubeconfig,
    IDE_CLOUD_LOG_LEVEL: 'debug',
    ...command.env,
    ...operatorEnv({ namespace, identity, ...FAST, ...overrides }),
  };
  const child = spawnTracked(`operator ${identity} (namespace ${namespace})`, process.execPath, command.args, {
    cwd: SERVER_DIR,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    coverage: command.sources,
  });
  const logs: OperatorLogLine[] = [];
  const otherOutput: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as OperatorLogLine);
    } catch {
      otherOutput.push(line);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => otherOutput.push(chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (signal: 'SIGTERM' | 'SIGKILL') => endProcess(child, signal);
  return {
    identity,
    child,
    logs,
    otherOutput,
    exited,
    logged: (msg) => logs.filter((l) => l.msg === msg),
    kill,
    stop: () => kill('SIGTERM'),
  };
}

export function appDefinitionSpec(name: string, extra: Partial<AppDefinitionSpecInput> = {}): AppDefinitionSpecInput {
  return {
    name,
    image: `ide-cloud/session-${name}:latest`,
    port: 3000,
    ingressname: 'ide-cloud-sessions',
    options: { dataBridgeEnabled: 'true', dataBridgePort: '16281' },
    ...extra,
  };
}

export async function createAppDefinition(
  r: IdeCloudResources,
  name: string,
  extra: Partial<AppDefinitionSpecInput> = {},
): Promise<void> {
  await r.appDefinitions.create({ metadata: { name }, spec: appDefinitionSpec(name, extra) });
}

/** Creates a Session the way the REST service does (labels and spec). */
export async function createSession(r: IdeCloudResources, name: string, spec: SessionSpec): Promise<Session> {
  return r.sessions.create({
    metadata: {
      name,
      labels: {
        [LABELS.user]: userLabelValue(spec.user),
        [LABELS.appDefinition]: spec.appDefinition,
        ...(spec.workspace ? { [LABELS.workspace]: spec.workspace } : {}),
      },
    },
    spec,
  });
}

export async function waitForSession(
  r: IdeCloudResources,
  name: string,
  check: (s: Session) => boolean,
  timeoutMs = 60_000,
): Promise<Session> {
  return eventually(
    async () => {
      const s = await r.sessions.get(name);
      if (!check(s)) throw new Error(`session ${name} not there yet: ${JSON.stringify(s.status)}`);
      return s;
    },
    timeoutMs,
    200,
  );
}

export const running = (s: Session) => s.status?.phase === 'Running' && !!s.status.url;

export { ideCloudResources };

/**
 * A data bridge stand-in that refuses what the real one refuses (extension/src/server.ts): POST /data
 * without a bearer token 401, with another than `token` 403, without a reservation 400, a second
 * injection 409 (`reservation: same | other`). Answers /health and records each accepted body, and
 * the status of each refused post.
 */
export interface Bridge {
  host: string;
  port: number;
  received: unknown[];
  refused: number[];
  healthChecks: number;
  close(): Promise<void>;
}

export async function startBridge(
  host: string,
  port: number,
  options: { token: string; failPosts?: number },
): Promise<Bridge> {
  let failPosts = options.failPosts ?? 0;
  let reservation: string | undefined;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const bridge: Bridge = {
    host,
    port,
    received: [],
    refused: [],
    healthChecks: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const refuse = (res: http.ServerResponse, status: number, body: object = {}) => {
    bridge.refused.push(status);
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      bridge.healthChecks++;
      res.writeHead(200).end('ok');
      return;
    }
    if (req.method === 'POST' && req.url === '/data') {
      const bearer = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
      if (bearer === undefined) return refuse(res, 401);
      if (!timingSafeEqual(digest(bearer), digest(options.token))) return refuse(res, 403);
      const claimed = req.headers[DATA_BRIDGE_RESERVATION_HEADER];
      if (typeof claimed !== 'string' || claimed === '') return refuse(res, 400);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (failPosts > 0) {
          failPosts--;
          res.writeHead(503).end();
          return;
        }
        if (reservation !== undefined)
          return refuse(res, 409, { reservation: reservation === claimed ? 'same' : 'other' });
        reservation = claimed;
        bridge.received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200).end();
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return bridge;
}

/**
 * The app definition's warm instances that no session holds and that are ready (a returned one only
 * once its restarted pod is): all of them, in a pool settled after its sessions ended.
 */
export async function freeReadyInstances(
  kc: k8s.KubeConfig,
  namespace: string,
  appDefinition: string,
): Promise<number> {
  const labelSelector = `${LABELS.component}=${COMPONENT.poolInstance},${LABELS.appDefinition}=${appDefinition}`;
  const { items } = await kc.makeApiClient(k8s.AppsV1Api).listNamespacedDeployment({ namespace, labelSelector });
  const reservations = await instanceReservations(kc, namespace, labelSelector);
  return items.filter((d) => isFreeReadyInstance(d, reservations.get(d.metadata?.name ?? ''), appDefinition)).length;
}

/** The warm instances' reservations (Leases named after them), by instance name, as the API server has them. */
export async function instanceReservations(
  kc: k8s.KubeConfig,
  namespace: string,
  labelSelector = `${LABELS.component}=${COMPONENT.poolInstance}`,
): Promise<Map<string, k8s.V1Lease>> {
  const { items } = await kc.makeApiClient(k8s.CoordinationV1Api).listNamespacedLease({ namespace, labelSelector });
  return new Map(items.map((lease) => [lease.metadata?.name ?? '', lease]));
}

/**
 * The session the reservation of warm instance `instance` names, '' when it is free; undefined when
 * the instance has no reservation of its own (none, or a Lease left by an earlier Deployment of the name).
 */
export async function instanceHolder(
  kc: k8s.KubeConfig,
  namespace: string,
  instance: string,
): Promise<string | undefined> {
  const [lease, d] = await Promise.all([
    kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: instance, namespace })
      .catch(() => undefined),
    kc
      .makeApiClient(k8s.AppsV1Api)
      .readNamespacedDeployment({ name: instance, namespace })
      .catch(() => undefined),
  ]);
  const uid = d?.metadata?.uid;
  if (!lease || !uid || !(lease.metadata?.ownerReferences ?? []).some((o) => o.uid === uid)) return undefined;
  return lease.metadata?.labels?.[LABELS.session] ?? '';
}

/** The data-bridge token of a warm instance, as the operator created it (what its pod reads). */

export async function bridgeToken(kc: k8s.KubeConfig, namespace: string, instanceName: string): Promise<string> {
  const secret = await eventually(
    () =>
      kc.makeApiClient(k8s.CoreV1Api).readNamespacedSecret({ name: bridgeTokenSecretName(instanceName), namespace }),
    30_000,
    200,
  );
  return Buffer.from(secret.data![DATA_BRIDGE_TOKEN_KEY]!, 'base64').toString('utf8');
}

/** The IP of the ready pod carrying `labelSelector`. */
export async function readyPodIp(kc: k8s.KubeConfig, namespace: string, labelSelector: string): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return eventually(
    async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector });
      const pod = pods.items.find(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.podIP &&
          (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      if (!pod?.status?.podIP) throw new Error(`no ready pod for ${labelSelector}`);
      return pod.status.podIP;
    },
    60_000,
    200,
  );
}

/**
 * Kept for suites that use it (the local scheduler now also schedules pods with unbound claims): a PersistentVolume pre-bound to the claim
 * lets the PV controller bind it, so pods mounting the workspace can be scheduled.
 */
export async function provideVolume(
  kc: k8s.KubeConfig,
  namespace: string,
  claimName: string,
  /** Where on the node (created when missing); default under /tmp/ide-cloud-test-volumes. */
  hostPath?: string,
): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createPersistentVolume({
    body: {
      metadata: { name: `${namespace}-${claimName}`.slice(0, 63), labels: { 'ide-cloud.io/test': 'true' } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: '',
        hostPath: hostPath
          ? { path: hostPath, type: 'DirectoryOrCreate' }
          : { path: `/tmp/ide-cloud-test-volumes/${namespace}/${claimName}` },
        claimRef: { namespace, name: claimName },
      },
    },
  });
}

/**
 * Ends a suite without leaving a namespace stuck in Terminating: sessions and workspaces are deleted
 * while the operator still runs (it removes its finalizers), then the operators stop, any finalizer
 * left is dropped, and the namespace goes.
 */
export async function cleanUpSuite(
  kc: k8s.KubeConfig,
  namespace: string,
  operators: readonly (Pick<RunningOperator, 'stop'> | undefined)[],
): Promise<void> {
  const r = ideCloudResources(kc, namespace);
  try {
    await Promise.all((await r.sessions.list()).map((s) => r.sessions.delete(s.metadata.name)));
    await Promise.all((await r.workspaces.list()).map((w) => r.workspaces.delete(w.metadata.name)));
    await eventually(
      async () => {
        if ((await r.sessions.list()).length + (await r.workspaces.list()).length > 0) throw new Error('not yet');
      },
      30_000,
      200,
    ).catch(() => undefined);
  } finally {
    await Promise.all(operators.map((o) => o?.stop()));
    for (const o of await r.sessions.list().catch(() => [])) {
      await r.sessions.mergePatch(o.metadata.name, { metadata: { finalizers: null } }).catch(() => undefined);
    }
    for (const o of await r.workspaces.list().catch(() => [])) {
      await r.workspaces.mergePatch(o.metadata.name, { metadata: { finalizers: null } }).catch(() => undefined);
    }
    await kc
      .makeApiClient(k8s.CoreV1Api)
      .deleteNamespace({ name: namespace })
      .catch(() => undefined);
  }
}

/** Resource requests only a node of `nodeWithoutKubelet` can take (kwok's node offers 512 CPU). */
export const ON_NODE_WITHOUT_KUBELET = { requestsCpu: '600', limitsCpu: '600' };

/**
 * A Ready node that kwok does not manage (no kwok annotation) and no kubelet runs: pods the scheduler
 * puts there (those requesting `ON_NODE_WITHOUT_KUBELET`) stay as the test leaves them, for example
 * never started, or in a state the test writes through pods/status as a kubelet would (`boundPod`,
 * `kubeletStarts`). `remove` deletes the namespace's pods at once (nothing would finish their
 * termination) and the node.
 */
export async function nodeWithoutKubelet(
  kc: k8s.KubeConfig,
  namespace: string,
): Promise<{
  name: string;
  /** The pod of `session` once the scheduler bound it to this node. */
  boundPod(session: string): Promise<k8s.V1Pod>;
  /** Reports what this node's kubelet would of `pod` once all its containers started and are ready. */
  kubeletStarts(pod: k8s.V1Pod): Promise<void>;
  remove(): Promise<void>;
}> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `no-kubelet-${namespace}`.slice(0, 63);
  await core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
      status: {
        allocatable: { cpu: '4096', memory: '8Ti', pods: '20' },
        capacity: { cpu: '4096', memory: '8Ti', pods: '20' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
      },
    },
  });
  // Instead of the admission's not-ready taint (only the absent node lifecycle controller would remove
  // it), one the scheduler only avoids: pods that fit elsewhere go elsewhere (it outweighs the node's
  // larger free capacity), those that fit nowhere else still come here.
  await core.patchNode(
    {
      name,
      body: { spec: { taints: [{ key: 'ide-cloud.test/no-kubelet', value: 'true', effect: 'PreferNoSchedule' }] } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  return {
    name,
    boundPod: (session) =>
      eventually(async () => {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.session}=${session}` });
        const pod = pods.items.find((p) => p.spec?.nodeName === name && !p.metadata?.deletionTimestamp);
        if (!pod) throw new Error(`no pod of ${session} on ${name} yet`);
        return pod;
      }, 60_000),
    async kubeletStarts(pod) {
      const now = new Date();
      const ready = (type: string): k8s.V1PodCondition => ({ type, status: 'True', lastTransitionTime: now });
      await core.patchNamespacedPodStatus(
        {
          name: pod.metadata!.name!,
          namespace,
          body: {
            status: {
              phase: 'Running',
              startTime: now,
              podIP: '10.250.0.10',
              podIPs: [{ ip: '10.250.0.10' }],
              conditions: [ready('PodScheduled'), ready('Initialized'), ready('ContainersReady'), ready('Ready')],
              containerStatuses: pod.spec!.containers.map((c) => ({
                name: c.name,
                image: c.image!,
                imageID: '',
                ready: true,
                started: true,
                restartCount: 0,
                state: { running: { startedAt: now } },
              })),
            },
          },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    },
    async remove() {
      const pods = await core.listNamespacedPod({ namespace }).catch(() => ({ items: [] as k8s.V1Pod[] }));
      await Promise.all(
        pods.items.map((p) =>
          core
            .deleteNamespacedPod({ name: p.metadata!.name!, namespace, gracePeriodSeconds: 0 })
            .catch(() => undefined),
        ),
      );
      await core.deleteNode({ name }).catch(() => undefined);
    },
  };
}

/**
 * A lazy session's own IDE pods (the operator makes them with a name generated from the session's):
 * its `session` label and the session component (its sidecars' pods carry no `session` label). Those
 * being deleted too, unless `live`.
 */
export async function lazySessionPods(
  core: k8s.CoreV1Api,
  namespace: string,
  session: string,
  options: { live?: boolean } = {},
): Promise<k8s.V1Pod[]> {
  const labelSelector = `${LABELS.session}=${session},${LABELS.component}=${COMPONENT.session}`;
  const { items } = await core.listNamespacedPod({ namespace, labelSelector });
  return options.live ? items.filter((p) => !p.metadata?.deletionTimestamp) : items;
}

/** The one live IDE pod of a lazy session (lazySessionPods), once there is exactly one. */
export async function lazySessionPod(core: k8s.CoreV1Api, namespace: string, session: string): Promise<k8s.V1Pod> {
  return eventually(async () => {
    const pods = await lazySessionPods(core, namespace, session, { live: true });
    assert.equal(pods.length, 1, `${session}: ${pods.length} live IDE pods`);
    return pods[0]!;
  }, 30_000);
}

// A real, local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (a fake kubelet), built from the Go module proxy and started on loopback.
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { installCrds } from '../../server/src/kube/crds.js';
import { isAlive, runScript, startDetached, waitFor } from './processes.js';
import { prepareRealNode, readNodeState, REAL_NODE, startRealNode, stopRealNode } from './real-node.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'] as const;
type Component = (typeof COMPONENTS)[number];

export interface ControlPlaneState {
  dir: string;
  kubeconfig: string;
  server: string;
  pids: Partial<Record<Component, number>>;
  /** kube-apiserver's audit log (JSON lines), when started with `auditLog`. */
  auditLog?: string;
  /** The real node's directory (real-node.ts), when started with `realNode`. */
  realNode?: string;
}

export const KWOK_NODE = 'kwok-node-0';

const log = (message: string): void => {
  process.stderr.write(`[cluster ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
};

export const BUILD_TARGETS = ['k8s', 'helm', 'auth-proxy', 'kubelet', 'traefik', 'network-policy', 'storage'] as const;
export type BuildTarget = (typeof BUILD_TARGETS)[number];

const builds = new Map<BuildTarget, Promise<string>>();
/**
 * Builds (or finds in the cache) the binaries of `targets`, each once per process; returns their
 * directory. The targets not asked for yet go to one build, which downloads their modules while it
 * compiles (build.sh).
 */
export async function ensureBinaries(...targets: BuildTarget[]): Promise<string> {
  if (targets.length === 0) targets = ['k8s'];
  const missing = targets.filter((target) => !builds.has(target));
  if (missing.length) {
    const build = runBuild(missing);
    for (const target of missing) builds.set(target, build);
    build.catch(() => missing.forEach((target) => builds.delete(target)));
  }
  return (await Promise.all(targets.map((target) => builds.get(target)!)))[0]!;
}

async function runBuild(targets: BuildTarget[]): Promise<string> {
  return (await runScript(path.join(here, 'build.sh'), targets)).pop()!;
}

/** A TCP port free on `host` (default 127.0.0.1) right now; the one copy, for scripts and tests. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  // Below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from which every outgoing
  // connection takes its local port: a port chosen there can be taken by a client socket before the
  // server it was chosen for binds it.
  const [low] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768'))
    .trim()
    .split(/\s+/)
    .map(Number);
  const below = Math.min(low ?? 32768, 32768);
  for (let attempt = 0; attempt < 20 && below > 12_000; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (below - 10_000));
    if (await listensOn(port, host)) return port;
  }
  return listensOn(0, host);
}

/** Listens on `port` (0: any) of `host` and closes again: the port it got, or 0 when it was taken. */
function listensOn(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', (error: NodeJS.ErrnoException) =>
      port !== 0 && (error.code === 'EADDRINUSE' || error.code === 'EACCES') ? resolve(0) : reject(error),
    );
    server.listen(port, host, () => {
      const { port: got } = server.address() as net.AddressInfo;
      server.close(() => resolve(got));
    });
  });
}

function httpStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const client = url.startsWith('https:') ? https : http;
    const request = client.get(url, { headers, rejectUnauthorized: false, timeout: 2000 }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', () => resolve(0));
    request.on('timeout', () => request.destroy());
  });
}

function startProcess(dir: string, name: Component, bin: string, args: string[]): number {
  return startDetached(path.join(dir, 'logs', `${name}.log`), path.join(bin, name), args);
}

function kubeconfigYaml(server: string, caFile: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: local\n  cluster:\n    server: ${server}\n    certificate-authority: ${caFile}`,
    'users:',
    `- name: admin\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: local\n  context:\n    cluster: local\n    user: admin\n    namespace: default',
    'current-context: local',
    '',
  ].join('\n');
}

/**
 * Without the real node no volume provisioner runs and kwok mounts nothing, so claims stay Pending;
 * the volume plugins of the scheduler would keep every pod with a claim unscheduled. They are off then;
 * everything else is the default scheduler. With the real node (`volumes`) it is the default scheduler:
 * VolumeBinding names the node of a WaitForFirstConsumer claim's first pod for the provisioner
 * (storage.ts). A pod on the kwok node then needs its claims bound (e.g. to a PersistentVolume made for
 * it): an unbound claim of the default class keeps it unschedulable (the class's volumes are on the
 * real node only).
 */
function schedulerConfigYaml(kubeconfig: string, volumes: boolean): string {
  const disabled = volumes ? [] : ['VolumeBinding', 'VolumeZone', 'VolumeRestrictions', 'NodeVolumeLimits'];
  return [
    'apiVersion: kubescheduler.config.k8s.io/v1',
    'kind: KubeSchedulerConfiguration',
    `clientConnection:\n  kubeconfig: ${kubeconfig}\n  qps: 200\n  burst: 400`,
    'leaderElection:\n  leaderElect: false',
    'profiles:',
    '- schedulerName: default-scheduler',
    ...(disabled.length
      ? ['  plugins:', '    multiPoint:', '      disabled:', ...disabled.map((name) => `      - name: ${name}`)]
      : []),
    '',
  ].join('\n');
}

export interface ControlPlaneOptions {
  /**
   * Range of Service ClusterIPs (never contacted: nothing routes them here). There is one Service per
   * session and per warm instance, so the default /16 leaves room for a whole test run or benchmark.
   */
  serviceClusterIpRange?: string;
  /**
   * Off by default. When set, kube-apiserver writes an audit log, `<dir>/logs/kube-apiserver-audit.log`
   * (path in the state's `auditLog`): one JSON line per request and stage, at level Metadata for every
   * request (who, verb, resource, user agent, response code; no bodies), the RequestReceived stage
   * omitted (so one line per request, two for a long-running one such as a watch: ResponseStarted
   * and ResponseComplete). Kept cheap: the batch mode takes the file write off the request path
   * (the log backend writes each event as it comes, in one goroutine); the file is never rotated.
   */
  auditLog?: boolean;
  /**
   * End the control plane with this process, even when it is killed (npm start): a watchdog holds a
   * pipe from this process and, when the pipe closes, stops what `dir`'s state records. Off for
   * `npm run cluster -- up`, whose control plane outlives the command by design.
   */
  tiedToThisProcess?: boolean;
  /**
   * Off by default. A real node, `real-node-0`, beside the kwok node: kubelet, containerd and a CNI
   * bridge on this machine (root only; see real-node.ts), tainted so that only pods with
   * REAL_NODE_PLACEMENT land there, with a dynamic volume provisioner whose StorageClass `local-path` is
   * the default (storage.ts; the scheduler's volume plugins are on). The first start installs Debian
   * packages and builds kubelet, Traefik, kube-router, local-path-provisioner and the pause and helper
   * images (15 minutes or more); later starts take seconds. `stopControlPlane` removes it all.
   */
  realNode?: boolean;
  /**
   * Off by default. Without the real node no claim ever binds, and the PV controller syncs every
   * pending claim every 15 s, each sync patching the claim's FailedBinding Event: a wave of one write
   * per claim (a warm pool's hundreds within a few seconds) that a real cluster, whose claims bind,
   * does not have. When set, pending claims are synced when they or a volume change, and on a resync
   * once an hour. Binding is unchanged: a volume pre-bound to a claim queues the claim's sync itself.
   */
  quietPendingClaims?: boolean;
  /** kwok's pod IPs, in the loopback range; default 127.1.0.1/16. Control planes side by side need their own. */
  podCidr?: string;
  /** The real node's ingress (Traefik) port on loopback; default: a free one. */
  ingressPort?: number;
  /** With the real node: enforce NetworkPolicies there (kube-router). Default on; npm start applies none. */
  networkPolicies?: boolean;
  /** Told each step of the start as it begins (a hung start's diagnostics name it). */
  onStep?: (step: string) => void;
}

/**
 * A detached Node process that waits for this process's end (its stdin pipe closing: exit, crash or
 * SIGKILL) and then runs `npm run cluster -- down` on `dir` (stopControlPlane).
 */
function startWatchdog(dir: string): void {
  const root = path.resolve(here, '../..');
  const down = [process.execPath, '--import', 'tsx', path.join(here, 'cli.ts'), 'down'];
  const script = `
    process.stdin.resume();
    process.stdin.on('end', () => require('node:child_process').spawnSync(${JSON.stringify(down[0])},
      ${JSON.stringify(down.slice(1))}, { cwd: ${JSON.stringify(root)}, stdio: 'ignore',
      env: { ...process.env, IDE_CLOUD_CLUSTER_DIR: ${JSON.stringify(dir)} } }));`;
  const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  // The pipe stays open as long as this process lives; it must not keep the event loop alive.
  (child.stdin as net.Socket).unref();
}

/** The audit policy of `auditLog`: metadata of every request, from its response on. */
const AUDIT_POLICY_YAML = [
  'apiVersion: audit.k8s.io/v1',
  'kind: Policy',
  'omitStages:',
  '- RequestReceived',
  'rules:',
  '- level: Metadata',
  '',
].join('\n');

/** The binaries the real node of `options` runs beside kube-apiserver's (build.sh targets). */
export function realNodeBuilds(options: Pick<ControlPlaneOptions, 'networkPolicies'>): BuildTarget[] {
  return ['kubelet', 'traefik', ...(options.networkPolicies === false ? [] : ['network-policy' as const]), 'storage'];
}

/** Starts every component in `dir` (created fresh) and returns once the API server is ready with CRDs installed. */
export async function startControlPlane(dir: string, options: ControlPlaneOptions = {}): Promise<ControlPlaneState> {
  const step = (message: string): void => {
    log(message);
    options.onStep?.(message);
  };
  // The real node's packages and images (Debian's downloads, debootstrap) overlap the Go compiles.
  options.onStep?.(options.realNode ? "building the binaries and the node's images" : 'building the binaries');
  const [bin, prepared] = await Promise.all([
    ensureBinaries('k8s', ...(options.realNode ? realNodeBuilds(options) : [])),
    options.realNode ? prepareRealNode() : undefined,
  ]);
  await rm(dir, { recursive: true, force: true });
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  if (options.tiedToThisProcess) startWatchdog(dir);
  await mkdir(path.join(dir, 'certs'), { recursive: true });
  const state: ControlPlaneState = { dir, kubeconfig: path.join(dir, 'kubeconfig'), server: '', pids: {} };
  const saveState = () => writeFile(path.join(dir, 'state.json'), JSON.stringify(state, null, 2));
  try {
    const [etcdClient, etcdPeer, apiPort, cmPort, schedulerPort, kwokPort] = await Promise.all(
      Array.from({ length: 6 }, freePort),
    );
    const token = randomBytes(24).toString('hex');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const saKey = path.join(dir, 'certs', 'sa.key');
    const saPub = path.join(dir, 'certs', 'sa.pub');
    await writeFile(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    await writeFile(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
    await writeFile(path.join(dir, 'certs', 'tokens.csv'), `${token},admin,admin,system:masters\n`, { mode: 0o600 });

    step('starting etcd');
    state.pids.etcd = startProcess(dir, 'etcd', bin, [
      '--name=local',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=local=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    await saveState();
    await waitFor(
      'etcd',
      async () => (await httpStatus(`http://127.0.0.1:${etcdClient}/health`)) === 200,
      30_000,
      state.pids.etcd,
    );

    step('starting kube-apiserver');
    const certDir = path.join(dir, 'certs', 'apiserver');
    state.server = `https://127.0.0.1:${apiPort}`;
    const auditArgs: string[] = [];
    if (options.auditLog) {
      const policy = path.join(dir, 'audit-policy.yaml');
      await writeFile(policy, AUDIT_POLICY_YAML);
      state.auditLog = path.join(dir, 'logs', 'kube-apiserver-audit.log');
      auditArgs.push(
        `--audit-policy-file=${policy}`,
        `--audit-log-path=${state.auditLog}`,
        '--audit-log-format=json',
        // Asynchronous: requests only queue their events (a buffer of 10000; an event that finds it
        // full is dropped and counted in apiserver_audit_error_total).
        '--audit-log-mode=batch',
        // No rotation: 0 would mean lumberjack's default of 100 MB; this is 1 TB.
        '--audit-log-maxsize=1048576',
      );
    }
    state.pids['kube-apiserver'] = startProcess(dir, 'kube-apiserver', bin, [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${certDir}`,
      `--service-cluster-ip-range=${options.serviceClusterIpRange ?? '10.0.0.0/16'}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      `--token-auth-file=${path.join(dir, 'certs', 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--allow-privileged=true',
      '--endpoint-reconciler-type=none',
      '--enable-priority-and-fairness=false',
      '--profiling=false',
      ...auditArgs,
      // kubectl logs/exec reach the real node's kubelet at its address (its hostname resolves nowhere).
      ...(options.realNode ? ['--kubelet-preferred-address-types=InternalIP,Hostname'] : []),
    ]);
    await saveState();
    await waitFor(
      'kube-apiserver',
      async () => (await httpStatus(`${state.server}/readyz`, { Authorization: `Bearer ${token}` })) === 200,
      120_000,
      state.pids['kube-apiserver'],
    );
    const caFile = path.join(certDir, 'apiserver.crt');
    await writeFile(state.kubeconfig, kubeconfigYaml(state.server, caFile, token), { mode: 0o600 });

    step('starting kube-controller-manager, kube-scheduler and kwok');
    const common = [`--kubeconfig=${state.kubeconfig}`, '--leader-elect=false', '--bind-address=127.0.0.1'];
    const allowPaths = '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics';
    state.pids['kube-controller-manager'] = startProcess(dir, 'kube-controller-manager', bin, [
      ...common,
      `--secure-port=${cmPort}`,
      allowPaths,
      `--root-ca-file=${caFile}`,
      `--service-account-private-key-file=${saKey}`,
      '--use-service-account-credentials=false',
      // kwok posts node status about once a minute and keeps no node lease, so the node lifecycle
      // controller would mark the node NotReady between posts and flip every pod's Ready condition.
      // kwok's pods have loopback addresses, which the API server refuses as endpoints: the endpoint
      // controllers would retry every Service forever (Warning events, ~100 writes/s of load). Nothing
      // here routes through Services, so they are off.
      // With the real node, its ingress controller (Traefik) finds pods through EndpointSlices.
      options.realNode
        ? '--controllers=*,-node-lifecycle-controller,-endpoints-controller,-endpointslice-mirroring-controller'
        : '--controllers=*,-node-lifecycle-controller,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller',
      '--concurrent-deployment-syncs=10',
      '--concurrent-replicaset-syncs=10',
      '--concurrent-gc-syncs=20',
      // Its clients' defaults (20 requests/s, 30 burst) made it, not IDE Cloud, the limit of how fast
      // hundreds of sessions' pods appear (500 Deployments: 83 s at ~6 pods/s); a large cluster's
      // controller manager and scheduler are run with more.
      '--kube-api-qps=200',
      '--kube-api-burst=400',
      ...(options.quietPendingClaims ? ['--pvclaimbinder-sync-period=1h'] : []),
    ]);
    const schedulerConfig = path.join(dir, 'scheduler.yaml');
    await writeFile(schedulerConfig, schedulerConfigYaml(state.kubeconfig, options.realNode === true));
    state.pids['kube-scheduler'] = startProcess(dir, 'kube-scheduler', bin, [
      `--config=${schedulerConfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${schedulerPort}`,
      allowPaths,
    ]);
    state.pids.kwok = startProcess(dir, 'kwok', bin, [
      `--kubeconfig=${state.kubeconfig}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      `--server-address=127.0.0.1:${kwokPort}`,
      // Pod IPs from the loopback range: a test can serve a pod's port (e.g. the data bridge) on the
      // pod's own IP, and nothing ever sends traffic to an address off this machine.
      `--cidr=${options.podCidr ?? '127.1.0.1/16'}`,
      '--node-ip=127.0.0.1',
    ]);
    await saveState();

    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    await registerKwokNode(kc);
    step('installing CRDs');
    await installCrds(kc);
    await waitForNodeReady(kc, 60_000);
    // The TaintNodesByCondition admission gives every new node a not-ready taint, which only the
    // node lifecycle controller (off, see above) would take away.
    await kc
      .makeApiClient(k8s.CoreV1Api)
      .patchNode(
        { name: KWOK_NODE, body: { spec: { taints: null } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
    if (options.realNode) {
      step(`starting the real node ${REAL_NODE}`);
      state.realNode = path.join(dir, 'node');
      await saveState();
      const [kubelet, kubeletHealthz, ingress, ingressPing, networkPolicyHealth] = await Promise.all(
        Array.from({ length: 5 }, freePort),
      );
      await startRealNode(state.realNode, {
        kubeconfig: state.kubeconfig,
        bin,
        networkPolicies: options.networkPolicies !== false,
        onStep: options.onStep,
        prepared,
        ports: {
          kubelet: kubelet!,
          kubeletHealthz: kubeletHealthz!,
          ingress: options.ingressPort ?? ingress!,
          ingressPing: ingressPing!,
          networkPolicyHealth: networkPolicyHealth!,
        },
      });
    }
    log(`ready: ${state.server}`);
    return state;
  } catch (error) {
    await stopControlPlane(dir).catch(() => undefined);
    throw error;
  }
}

async function registerKwokNode(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNode({
    body: {
      metadata: {
        name: KWOK_NODE,
        annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          type: 'kwok',
          'kubernetes.io/hostname': KWOK_NODE,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
        },
      },
      status: {
        // A fake node runs nothing: room for a whole test run's or benchmark's pods (~2000 sessions at
        // the default requests), yet a pod asking for 1000 CPUs still never fits.
        allocatable: { cpu: '512', memory: '2Ti', pods: '5000' },
        capacity: { cpu: '512', memory: '2Ti', pods: '5000' },
      },
    },
  });
}

async function waitForNodeReady(kc: k8s.KubeConfig, timeoutMs: number): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitFor(
    `node ${KWOK_NODE}`,
    async () => {
      const node = await core.readNode({ name: KWOK_NODE });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    },
    timeoutMs,
  );
}

export async function readState(dir: string): Promise<ControlPlaneState | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dir, 'state.json'), 'utf8')) as ControlPlaneState;
  } catch {
    return undefined;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
    } catch {
      // already gone
    }
  }
}

/** Stops every process recorded in `dir` (by PID, whole process group) and removes the directory. */
export async function stopControlPlane(dir: string): Promise<void> {
  const state = await readState(dir);
  // The real node first, while the API server still answers its kubelet.
  if (state?.realNode) await stopRealNode(state.realNode);
  const pids = Object.values(state?.pids ?? {}).filter((pid): pid is number => typeof pid === 'number');
  // Reverse start order: kwok and the controllers before the API server, etcd last.
  for (const pid of [...pids].reverse()) signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  for (const pid of pids.filter(isAlive)) signalGroup(pid, 'SIGKILL');
  if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
}

/** Synchronous variant for process exit handlers, where nothing asynchronous runs any more. */
export function killControlPlaneSync(state: ControlPlaneState): void {
  if (state.realNode) {
    try {
      const node = JSON.parse(readFileSync(path.join(state.realNode, 'node.json'), 'utf8')) as {
        pids: Record<string, number>;
      };
      for (const pid of Object.values(node.pids)) if (pid) signalGroup(pid, 'SIGKILL');
    } catch {
      // not started
    }
  }
  for (const pid of Object.values(state.pids).reverse()) if (pid) signalGroup(pid, 'SIGKILL');
}

export async function describeControlPlane(dir: string): Promise<string[]> {
  const state = await readState(dir);
  if (!state) return [`no control plane in ${dir}`];
  const lines = COMPONENTS.map((name) => {
    const pid = state.pids[name];
    return `${name.padEnd(24)} ${pid && isAlive(pid) ? `running (pid ${pid})` : 'not running'}`;
  });
  if (state.realNode) {
    try {
      const node = await readNodeState(state.realNode);
      if (!node) throw new Error('not started');
      for (const [name, pid] of Object.entries(node.pids))
        lines.push(`${`${name} (${REAL_NODE})`.padEnd(24)} ${isAlive(pid) ? `running (pid ${pid})` : 'not running'}`);
      lines.push(`ingress                  ${node.ingressUrl}`);
    } catch {
      lines.push(`${REAL_NODE.padEnd(24)} not running`);
    }
  }
  lines.push(`server                   ${state.server}`, `KUBECONFIG=${state.kubeconfig}`);
  return lines;
}

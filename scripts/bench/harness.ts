// What the benchmark runs on: its own control plane in a temporary directory (startCluster); then
// (startIdeCloud) the operator and the REST service as child processes running the server build's
// bundles as the image does (so their RSS and CPU, read from /proc, are those of production's
// processes), a data-bridge stand-in on 0.0.0.0:<port> (every kwok pod IP is a loopback address), and
// watches that time what the operator writes. Everything is stopped again by stop(), also on Ctrl-C or error.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { requestText } from '../../server/src/http/request-text.js';
import { configureClient } from '../../server/src/kube/client.js';
import { ideCloudResources, type IdeCloudResources } from '../../server/src/kube/resources.js';
import { LABELS } from '../../server/src/model/api-group.js';
import type { AppDefinitionSpecInput } from '../../server/src/model/app-definition.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session } from '../../server/src/model/session.js';
import { OPERATOR_ENV, type OperatorConfigInput } from '../../server/src/operator/config.js';
import { isFreeReadyInstance } from '../../server/src/operator/index.js';
import { sessionOfRoutePath } from '../../server/src/operator/manifests.js';
import { Informer } from '../../server/src/kube/informer.js';
import { cpuProfileDir, partProfileDir } from './cpu-profile.js';
import {
  freePort,
  killControlPlaneSync,
  startControlPlane,
  stopControlPlane,
  type ControlPlaneState,
} from '../cluster/control-plane.js';
import { AuditLog } from './auditlog.js';
import type { Launched } from './launches.js';
import {
  chartMemoryLimit,
  inCgroup,
  makeMemoryCgroup,
  memoryUsage,
  removeMemoryCgroup,
  type AppliedMemoryLimit,
  type MemoryCgroup,
  type ServerPart,
} from './memory-limit.js';
import { processStats, sleep, until } from './util.js';

export const NAMESPACE = 'bench';
/** The floor's namespace (scenarios/floor.ts): none of IDE Cloud's watches nor the bench's sees it. */
export const FLOOR_NAMESPACE = 'bench-floor';

/** Operator settings of the run: defaults, except a faster data-bridge health poll (default 1000 ms). */
export const OPERATOR_SETTINGS: Partial<OperatorConfigInput> = {
  eagerStart: true,
  bridgeHealthAttempts: 300,
  bridgeHealthIntervalMs: 200,
  bridgeRequestTimeoutMs: 2000,
};

/**
 * What runs is what the image runs: the command of the operator's and the service's stage of
 * images/server/Dockerfile (`CMD ["node", <node flags>, "server/dist/bundle/<part>.mjs"]`), read from
 * the Dockerfile itself, with NODE_ENV production: the output of the server workspace's build, never
 * TypeScript through tsx (idle, the operator through tsx holds about 60 MB more RSS than compiled).
 */
export function imageCommand(root: string, stage: 'operator' | 'service'): { nodeFlags: string[]; entry: string } {
  const dockerfile = readFileSync(path.join(root, 'images/server/Dockerfile'), 'utf8');
  const from = dockerfile.search(new RegExp(`^FROM \\S+ AS ${stage}$`, 'm'));
  const cmd = from < 0 ? null : /^CMD (\[.*\])$/m.exec(dockerfile.slice(from));
  const argv = cmd ? (JSON.parse(cmd[1]!) as string[]) : [];
  if (argv[0] !== 'node' || argv.length < 2) throw new Error(`images/server/Dockerfile: no node CMD for ${stage}`);
  return { nodeFlags: argv.slice(1, -1), entry: argv.at(-1)! };
}
export const NODE_ENV = 'production';
export const SERVER_DIST = 'server/dist';
export const BUILD_COMMAND = ['npm', 'run', 'build', '--workspace', 'server'] as const;

export interface ServerBuild {
  command: string;
  buildMs: number;
  nodeVersion: string;
  /** Server files that differ from the commit (git status): the build, and so the run, includes them. */
  uncommittedServerFiles: string[];
}

/**
 * Deletes server/dist and builds it again (`npm run build --workspace server`: tsc, then the
 * bundles of server/src/build/bundle.ts) on every run, so the processes measured always run this checkout's code:
 * never a stale build, never files of deleted sources. Throws, with tsc's output, if the build fails.
 */
export function buildServer(root: string): ServerBuild {
  const t0 = Date.now();
  rmSync(path.join(root, SERVER_DIST), { recursive: true, force: true });
  const [command, ...args] = BUILD_COMMAND;
  const build = spawnSync(command, args, { cwd: root, encoding: 'utf8' });
  if (build.error) throw new Error(`${BUILD_COMMAND.join(' ')}: ${build.error.message}`);
  if (build.status !== 0) {
    const output = `${build.stdout}${build.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`${BUILD_COMMAND.join(' ')} failed (exit ${build.status ?? build.signal}):\n${output}`);
  }
  for (const { entry } of [imageCommand(root, 'operator'), imageCommand(root, 'service')]) {
    if (!existsSync(path.join(root, entry))) throw new Error(`the server build did not produce ${entry}`);
  }
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=all', '--', 'server'], {
    cwd: root,
    encoding: 'utf8',
  });
  return {
    command: BUILD_COMMAND.join(' '),
    buildMs: Date.now() - t0,
    nodeVersion: process.version,
    uncommittedServerFiles: status.stdout.split('\n').filter(Boolean),
  };
}

/** The command line of a running process, from /proc, with node's path shortened to `node`. */
export function commandLine(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter(Boolean)
    .map((arg) => (arg === process.execPath ? 'node' : arg))
    .join(' ');
}

/** Per session: when this process's watch first saw each step (Date.now() ms). */
export interface SessionTimes {
  added?: number;
  firstStatus?: number;
  strategy?: string;
  reserved?: number;
  running?: number;
  /** First seen with status.url; `statusChangesBeforeUrl`: events before it whose status had changed (status writes). */
  url?: number;
  statusChangesBeforeUrl?: number;
  /** The status of the latest event seen (JSON), to tell status writes from metadata writes. */
  lastStatus?: string;
  statusChanges?: number;
  envInjected?: number;
  /** lastTransitionTime of EnvInjected=True (1 s granularity). */
  envInjectedTransition?: string;
  deleted?: number;
}

/**
 * Per session: the warm instance whose reservation (Lease) carried its session label first, and the route
 * write that added its path: the `ingressChange`-th change of Ingress `ingress` seen by the watch
 * (creation 1), which launches.ts pairs with the Ingress's writes in the audit log.
 */
export interface Placement {
  instance?: string;
  instanceSeen?: number;
  ingress?: string;
  ingressChange?: number;
  routeSeen?: number;
}

/** Per pool-instance pod: when its Ready=True was first seen, and its session label. */
export interface PodTimes {
  session?: string;
  ready?: number;
  readyTransition?: string;
}

/** A started operator or service, and the chart's memory limit it runs under. */
export interface ServerPartProcess {
  child: ChildProcess;
  memoryLimit: AppliedMemoryLimit;
  /** Its memory cgroup while it runs, if the machine gave one. */
  cgroup?: MemoryCgroup;
}

/**
 * The operator or the service as the image runs it, under its pod's memory limit: `node <entry>`
 * (a shell that joins the cgroup execs it), so the PID is the process's own and /proc/<pid> shows its
 * memory and CPU; its node flags and NODE_ENV production, so a NODE_OPTIONS of the caller's shell is
 * not passed on. Output to `logFile`.
 */
export function spawnServerPart(
  root: string,
  name: ServerPart,
  env: Record<string, string>,
  logFile: string,
): ServerPartProcess {
  const { nodeFlags, entry } = imageCommand(root, name);
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  // Where a burst's time goes inside the process (USAGE): the profile is written when it stops.
  const profileDir = cpuProfileDir();
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${partProfileDir(profileDir, name)}`] : [];
  const argv = [process.execPath, ...nodeFlags, ...profile, entry];
  const limit = chartMemoryLimit(root, name);
  const cgroup = makeMemoryCgroup(name, limit.bytes);
  const [command, ...args] = 'dir' in cgroup ? inCgroup(cgroup, argv) : argv;
  const fd = openSync(logFile, 'a');
  const child = spawn(command!, args, {
    cwd: root,
    env: { ...inherited, NODE_ENV, ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  if ('reason' in cgroup) return { child, memoryLimit: { quantity: limit.quantity, notApplied: cgroup.reason } };
  const remove = () => removeMemoryCgroup(cgroup);
  child.once('exit', remove).once('error', remove);
  return {
    child,
    cgroup,
    memoryLimit: { quantity: limit.quantity, cgroup: cgroup.dir, cgroupVersion: cgroup.version },
  };
}

/** The operator's environment for `settings` (objects as JSON, as the chart writes them). */
export function operatorEnv(settings: Partial<OperatorConfigInput>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (value !== undefined)
      env[OPERATOR_ENV[key as keyof typeof OPERATOR_ENV]] =
        typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  return env;
}

export class Bench {
  readonly root: string;
  dir = '';
  state?: ControlPlaneState;
  kc = new k8s.KubeConfig();
  resources!: IdeCloudResources;
  core!: k8s.CoreV1Api;
  apps!: k8s.AppsV1Api;
  operator?: ChildProcess;
  service?: ChildProcess;
  /** The operator and the service as last started, with their memory limits. */
  private readonly parts: Partial<Record<ServerPart, ServerPartProcess>> = {};
  private memoryLimitsAtStop?: Partial<Record<ServerPart, AppliedMemoryLimit>>;
  serviceUrl = '';
  readonly appId = randomBytes(12).toString('hex');
  bridgePort = 0;
  bridgeRequests = { health: 0, data: 0 };
  private bridge?: http.Server;
  private readonly sources: Informer[] = [];
  readonly sessions = new Map<string, SessionTimes>();
  readonly pods = new Map<string, PodTimes>();
  /**
   * The launches' connections to the service, kept open. node:http, not fetch, whose layers (undici,
   * web streams) took a quarter of the benchmark's CPU in a claim burst, on the cores the launches it
   * measures run on. An idle connection goes after 4 s, before the service closes it (Node's server
   * keeps one 5 s): a launch sent on one the service is closing would fail.
   */
  private readonly launchAgent = new http.Agent({ keepAlive: true, timeout: LAUNCH_IDLE_CONNECTION_MS });
  /** Per session name: its warm instance and its route (from the Deployment and Ingress watches). */
  readonly placements = new Map<string, Placement>();
  /** Per Ingress: changes seen (ADDED, MODIFIED and DELETED events) and the session paths in the last one. */
  private readonly ingressSeen = new Map<string, { changes: number; sessions: Set<string> }>();
  deployments!: Informer<k8s.V1Deployment>;
  reservations!: Informer<k8s.V1Lease>;
  /** kube-apiserver's audit log, read for IDE Cloud's own requests. */
  audit!: AuditLog;
  sessionSource!: Informer<Session>;
  private stopped = false;

  constructor(root: string) {
    this.root = root;
  }

  /** The control plane alone, with the benchmark's namespace: what the floor runs on. */
  async startCluster(log: (line: string) => void): Promise<void> {
    this.dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-bench-'));
    log(`control plane in ${this.dir}`);
    // One Service per session and per warm instance: more than the default /24 of ClusterIPs holds.
    // The audit log tells IDE Cloud's own requests from every other client's (auditlog.ts). The warm
    // pool's claims never bind on fake nodes: their Events' waves every 15 s would fall on some bursts.
    this.state = await startControlPlane(path.join(this.dir, 'cluster'), {
      serviceClusterIpRange: '10.0.0.0/16',
      auditLog: true,
      quietPendingClaims: true,
    });
    if (!this.state.auditLog) throw new Error('the control plane started without an audit log');
    this.audit = new AuditLog(this.state.auditLog);
    this.kc.loadFromFile(this.state.kubeconfig);
    this.resources = ideCloudResources(this.kc, NAMESPACE);
    this.core = this.kc.makeApiClient(k8s.CoreV1Api);
    this.apps = this.kc.makeApiClient(k8s.AppsV1Api);
    for (const name of [NAMESPACE, FLOOR_NAMESPACE]) await this.core.createNamespace({ body: { metadata: { name } } });
    // The default service account must exist before pods can be created in the namespace.
    await until(
      'the default service account',
      async () =>
        this.core.readNamespacedServiceAccount({ name: 'default', namespace: NAMESPACE }).then(
          () => true,
          () => false,
        ),
      60_000,
      200,
    );
  }

  /**
   * A client configuration of the running control plane for a client of the benchmark's own, configured
   * as the operator's and named `userAgent`, so the audit log tells its requests from IDE Cloud's.
   */
  clientConfig(userAgent: string): k8s.KubeConfig {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(this.state!.kubeconfig);
    return configureClient(kc, userAgent);
  }

  /** IDE Cloud on the running control plane: the data-bridge stand-in, the watches, the operator and the service. */
  async startIdeCloud(): Promise<void> {
    await this.startBridge();
    this.startWatches();
    await this.startOperator();
    await this.startService();
  }

  private childLog(name: string): number {
    return openSync(path.join(this.dir, `${name}.log`), 'a');
  }

  logTail(name: string, lines = 20): string {
    try {
      return readFileSync(path.join(this.dir, `${name}.log`), 'utf8')
        .trim()
        .split('\n')
        .slice(-lines)
        .join('\n');
    } catch {
      return '';
    }
  }

  /**
   * The chart's memory limit each part runs under, with what its cgroup counted (its peak, and whether
   * the limit bit): so far while the parts run, up to their stop once stopped (a cgroup goes with its
   * process).
   */
  memoryLimits(): Partial<Record<ServerPart, AppliedMemoryLimit>> {
    if (this.memoryLimitsAtStop) return this.memoryLimitsAtStop;
    const limits: Partial<Record<ServerPart, AppliedMemoryLimit>> = {};
    for (const [name, started] of Object.entries(this.parts) as [ServerPart, ServerPartProcess][]) {
      const usage = started.cgroup && memoryUsage(started.cgroup);
      limits[name] = usage ? { ...started.memoryLimit, usage } : started.memoryLimit;
    }
    return limits;
  }

  private spawnChild(name: ServerPart, env: Record<string, string>): ChildProcess {
    const started = spawnServerPart(this.root, name, env, path.join(this.dir, `${name}.log`));
    this.parts[name] = started;
    const { child } = started;
    child.on('exit', (code, signal) => {
      if (!this.stopped) process.stderr.write(`\n${name} exited (${code ?? signal}):\n${this.logTail(name)}\n`);
    });
    return child;
  }

  private async startOperator(): Promise<void> {
    this.operator = this.spawnChild('operator', {
      ...operatorEnv({ ...OPERATOR_SETTINGS, namespace: NAMESPACE, kubeconfig: this.state!.kubeconfig }),
      IDE_CLOUD_LOG_LEVEL: 'warn',
    });
  }

  private async startService(): Promise<void> {
    const port = await freePort();
    this.service = this.spawnChild('service', {
      SERVICE_AUTH_TOKEN: this.appId,
      ADMIN_API_TOKEN: randomBytes(12).toString('hex'),
      IDE_CLOUD_NAMESPACE: NAMESPACE,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      KUBECONFIG: this.state!.kubeconfig,
    });
    this.serviceUrl = `http://127.0.0.1:${port}`;
    await until(
      'the service',
      async () =>
        fetch(`${this.serviceUrl}/q/health`).then(
          (r) => r.ok,
          () => false,
        ),
      60_000,
      200,
    );
  }

  /** Answers GET /health and POST /data of every pod (pod IPs are loopback addresses). */
  private async startBridge(): Promise<void> {
    this.bridgePort = await freePort('0.0.0.0');
    this.bridge = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/health') {
        this.bridgeRequests.health++;
        res.writeHead(200).end('ok');
      } else if (req.method === 'POST' && req.url === '/data') {
        req.resume();
        req.on('end', () => {
          this.bridgeRequests.data++;
          res.writeHead(200).end();
        });
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve, reject) => {
      this.bridge!.once('error', reject);
      this.bridge!.listen(this.bridgePort, '0.0.0.0', () => resolve());
    });
  }

  private startWatches(): void {
    const base = { namespace: NAMESPACE, rewatchIntervalMs: 3_600_000 };
    this.sessionSource = new Informer<Session>(this.kc, {
      ...base,
      path: this.resources.sessions.path,
      apiVersion: 'ide.cloud/v1beta10',
      kind: 'Session',
    }).on((type, s) => this.onSession(type, s));
    this.deployments = new Informer<k8s.V1Deployment>(this.kc, {
      ...base,
      path: `/apis/apps/v1/namespaces/${NAMESPACE}/deployments`,
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      labelSelector: `${LABELS.component}=pool-instance`,
    });
    this.reservations = new Informer<k8s.V1Lease>(this.kc, {
      ...base,
      path: `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases`,
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      labelSelector: `${LABELS.component}=pool-instance`,
    }).on((_type, lease) => this.onReservation(lease));
    const ingresses = new Informer<k8s.V1Ingress>(this.kc, {
      ...base,
      path: `/apis/networking.k8s.io/v1/namespaces/${NAMESPACE}/ingresses`,
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
    }).on((type, i) => this.onIngress(type, i));
    const pods = new Informer<k8s.V1Pod>(this.kc, {
      ...base,
      path: `/api/v1/namespaces/${NAMESPACE}/pods`,
      apiVersion: 'v1',
      kind: 'Pod',
      labelSelector: `${LABELS.component}=pool-instance`,
    }).on((_type, p) => this.onPod(p));
    this.sources.push(this.sessionSource as unknown as Informer, this.deployments as unknown as Informer);
    this.sources.push(this.reservations as unknown as Informer);
    this.sources.push(pods as unknown as Informer, ingresses as unknown as Informer);
    for (const s of this.sources) s.start();
  }

  private onSession(type: string, s: Session): void {
    const now = Date.now();
    const name = s.metadata.name;
    let t = this.sessions.get(name);
    if (!t) this.sessions.set(name, (t = {}));
    t.added ??= now;
    if (type === 'DELETED') {
      t.deleted ??= now;
      return;
    }
    const status = s.status;
    const statusText = JSON.stringify(status ?? {});
    if (t.lastStatus !== undefined && statusText !== t.lastStatus) t.statusChanges = (t.statusChanges ?? 0) + 1;
    t.lastStatus = statusText;
    if (status?.url && t.url === undefined) {
      t.url = now;
      t.statusChangesBeforeUrl = (t.statusChanges ?? 1) - 1;
    }
    if (status && (status.phase || status.conditions?.length)) t.firstStatus ??= now;
    if (status?.startStrategy && !t.strategy) {
      t.strategy = status.startStrategy;
      t.reserved = now;
    }
    if (status?.phase === 'Running' && status.url) t.running ??= now;
    const injected = status?.conditions?.find((c) => c.type === 'EnvInjected' && c.status === 'True');
    if (injected && t.envInjected === undefined) {
      t.envInjected = now;
      t.envInjectedTransition = injected.lastTransitionTime;
    }
  }

  private placement(session: string): Placement {
    let p = this.placements.get(session);
    if (!p) this.placements.set(session, (p = {}));
    return p;
  }

  private onReservation(lease: k8s.V1Lease): void {
    const session = lease.metadata?.labels?.[LABELS.session];
    if (!session) return;
    const p = this.placement(session);
    if (p.instance) return;
    p.instance = lease.metadata?.name;
    p.instanceSeen = Date.now();
  }

  /** Every change of an Ingress is counted; a session path new in it is that change's. */
  private onIngress(type: string, i: k8s.V1Ingress): void {
    const name = i.metadata?.name ?? '';
    const seen = this.ingressSeen.get(name) ?? { changes: 0, sessions: new Set<string>() };
    this.ingressSeen.set(name, seen);
    seen.changes++;
    const sessions = new Set<string>();
    if (type !== 'DELETED') {
      for (const rule of i.spec?.rules ?? []) {
        for (const p of rule.http?.paths ?? []) {
          const session = sessionOfRoutePath(p.path ?? '');
          if (session) sessions.add(session);
        }
      }
    }
    for (const session of sessions) {
      const p = this.placement(session);
      if (seen.sessions.has(session) || p.ingress) continue;
      Object.assign(p, { ingress: name, ingressChange: seen.changes, routeSeen: Date.now() });
    }
    seen.sessions = sessions;
  }

  private onPod(p: k8s.V1Pod): void {
    const name = p.metadata?.name ?? '';
    let t = this.pods.get(name);
    if (!t) this.pods.set(name, (t = {}));
    t.session ??= p.metadata?.labels?.[LABELS.session];
    const ready = p.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
    if (ready && t.ready === undefined) {
      t.ready = Date.now();
      t.readyTransition = ready.lastTransitionTime ? new Date(ready.lastTransitionTime).toISOString() : undefined;
    }
  }

  async applyAppDefinition(spec: AppDefinitionSpecInput): Promise<void> {
    await this.resources.appDefinitions.apply(spec.name, { spec });
  }

  /** Pool instances of `app` that exist, run ready and are not reserved. */
  freeReadyInstances(app: string): number {
    return this.deployments
      .list()
      .filter((d) => isFreeReadyInstance(d, this.reservations.get(d.metadata?.name ?? ''), app)).length;
  }

  sessionsOf(app: string): Session[] {
    return this.sessionSource.list().filter((s) => s.spec.appDefinition === app);
  }

  /** POST /service; returns the client-side latency in ms and the URL. */
  async launch(
    user: string,
    appDefinition: string,
    extra: { ephemeral?: boolean; workspaceName?: string; timeout?: number } = { ephemeral: true },
  ): Promise<Launched> {
    const sentAt = Date.now();
    const t0 = performance.now();
    const body = JSON.stringify({ appId: this.appId, user, appDefinition, ...extra });
    const { status, text } = await requestText(`${this.serviceUrl}/service`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      agent: this.launchAgent,
      idleTimeoutMs: LAUNCH_ANSWER_MS,
    });
    const ms = performance.now() - t0;
    if (status !== 200) throw new Error(`launch for ${user}: HTTP ${status} ${text.slice(0, 300)}`);
    const session = sessionOfRoutePath(new URL(text).pathname) ?? '';
    return { ms, url: text, sentAt, answeredAt: sentAt + ms, session };
  }

  /** GET /service/session/{appId}/{user}; returns the latency in ms. */
  async listSessions(user: string): Promise<number> {
    const t0 = performance.now();
    const response = await fetch(`${this.serviceUrl}/service/session/${this.appId}/${encodeURIComponent(user)}`);
    await response.arrayBuffer();
    const ms = performance.now() - t0;
    if (response.status !== 200) throw new Error(`list for ${user}: HTTP ${response.status}`);
    return ms;
  }

  /** Creates a Session the way the service does (labels and spec), directly through the API. */
  async createSession(name: string, user: string, appDefinition: string): Promise<void> {
    await this.resources.sessions.create({
      metadata: {
        name,
        labels: { [LABELS.user]: userLabelValue(user), [LABELS.appDefinition]: appDefinition },
      },
      spec: { user, appDefinition, sessionSecret: randomBytes(16).toString('hex') },
    });
  }

  /** Deletes every session of `app` and waits until the operator has let them go. */
  async deleteSessionsOf(app: string, timeoutMs = 300_000): Promise<void> {
    const custom = this.kc.makeApiClient(k8s.CustomObjectsApi);
    await custom.deleteCollectionNamespacedCustomObject({
      group: 'ide.cloud',
      version: 'v1beta10',
      namespace: NAMESPACE,
      plural: 'sessions',
      labelSelector: `${LABELS.appDefinition}=${app}`,
    });
    await until(`sessions of ${app} to be gone`, () => this.sessionsOf(app).length === 0, timeoutMs, 100);
  }

  operatorPid(): number {
    return this.operator!.pid!;
  }

  /**
   * CPU seconds (user + system) used so far by each process of the run: the control plane's
   * components, the operator and the service while they run, and the benchmark's own client. On a
   * machine whose cores a burst fills, where a launch's time goes is where the CPU goes.
   */
  cpuSeconds(): Record<string, number> {
    const pids: [string, number | undefined][] = [
      ...Object.entries(this.state?.pids ?? {}),
      ['operator', this.operator?.exitCode === null ? this.operator.pid : undefined],
      ['service', this.service?.exitCode === null ? this.service.pid : undefined],
    ];
    const usage = process.cpuUsage();
    const seconds: Record<string, number> = { bench: (usage.user + usage.system) / 1e6 };
    for (const [name, pid] of pids) {
      if (!pid) continue;
      try {
        seconds[name] = processStats(pid).cpuSeconds;
      } catch {
        // Gone: nothing to count.
      }
    }
    return seconds;
  }

  servicePid(): number {
    return this.service!.pid!;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.launchAgent.destroy();
    await Promise.all(this.sources.map((s) => s.stop().catch(() => undefined)));
    this.memoryLimitsAtStop = this.memoryLimits();
    await Promise.all([this.operator, this.service].map((c) => stopChild(c)));
    await this.audit?.close().catch(() => undefined);
    await new Promise<void>((resolve) => (this.bridge ? this.bridge.close(() => resolve()) : resolve()));
    this.bridge?.closeAllConnections();
    if (this.dir) {
      await stopControlPlane(path.join(this.dir, 'cluster')).catch(() => undefined);
      // Stopped: the exit handler must not signal these PIDs again (they may belong to others by then).
      this.state = undefined;
      await rm(this.dir, { recursive: true, force: true });
    }
  }

  /** Last resort at process exit, where nothing asynchronous runs any more. */
  killSync(): void {
    for (const child of [this.operator, this.service]) {
      if (child?.pid && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    if (this.state) killControlPlaneSync(this.state);
  }
}

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const result = await Promise.race([exited.then(() => 'exited'), sleep(10_000).then(() => 'timeout')]);
  if (result === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

/** How long a launch's idle connection to the service stays open (the service's own bound is 5 s). */
const LAUNCH_IDLE_CONNECTION_MS = 4000;
/** A launch unanswered this long fails the run (fetch's default bound). */
const LAUNCH_ANSWER_MS = 300_000;

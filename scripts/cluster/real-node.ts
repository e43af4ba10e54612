// A real node beside the kwok node (control-plane.ts, option realNode): kubelet built from the same
// wrapper module as kube-apiserver, containerd, runc and the CNI plugins from Debian's packages, a
// locally built pause image. The node is tainted: only pods that tolerate REAL_NODE_TAINT land there.
// Its ingress controller, Traefik (built from Go modules), listens on loopback and routes the Ingresses
// of class REAL_NODE_INGRESS_CLASS to pod IPs on the node's bridge. There is no kube-proxy: pods reach
// the API server, and only it, through its Service's ClusterIP (a DNAT rule in the chain IDE-CLOUD-API to
// kube-apiserver on loopback), so in-cluster clients work as in any cluster. NetworkPolicies are enforced
// on the node's pods by kube-router's firewall (network-policy.ts). Claims bind through a real dynamic
// provisioner, local-path-provisioner (storage.ts): the default StorageClass `local-path` (binding
// WaitForFirstConsumer, reclaim Delete) makes each volume a directory under `<its directory>/volumes`
// with a helper pod on the node (image ide-cloud/local-path-helper, scripts/images/build.sh).
//
// It owns, and stopRealNode removes: its processes (containerd, kubelet, Traefik, kube-router,
// local-path-provisioner, the shims and every process in the pods' cgroups), its directory with the
// volumes, the mounts under it and the pods' network namespaces, the bridge
// `idecloud0`, the iptables chains that appeared while it ran (KUBE-*, CNI-*, IDE-CLOUD-*), the cgroups `kubepods`,
// the ipsets kube-router made, the machine paths kubelet and containerd write to when they were absent before (/var/lib/kubelet,
// /var/log/pods, /var/log/containers, /run/containerd, /var/lib/cni, /run/netns), and ip_forward's value.
// One real node per machine (their names and chains are machine-wide): a lock in /run says whose it is.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ipsets, removeIpsets, startNetworkPolicyController, stopNetworkPolicyController } from './network-policy.js';
import { isAlive, runScript, startDetached, waitFor } from './processes.js';
import { startStorageProvisioner, stopStorageProvisioner, storageProvisionerReady } from './storage.js';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

export const REAL_NODE = 'real-node-0';
export const REAL_NODE_LABELS = { type: 'real', 'ide-cloud.dev/real-node': 'true' } as const;
export const REAL_NODE_TAINT = { key: 'ide-cloud.dev/real-node', value: 'true', effect: 'NoSchedule' } as const;
/** What a pod needs to run on the real node: `{ ...spec, ...REAL_NODE_PLACEMENT }`. */
export const REAL_NODE_PLACEMENT = {
  nodeSelector: { 'ide-cloud.dev/real-node': 'true' },
  tolerations: [{ key: REAL_NODE_TAINT.key, operator: 'Equal' as const, value: 'true', effect: 'NoSchedule' as const }],
};
export const REAL_NODE_BRIDGE = 'idecloud0';
export const REAL_NODE_SUBNET = '10.217.0.0/24';
/** The bridge's address: the node's InternalIP, where kubelet listens and pods reach the host. */
export const REAL_NODE_IP = '10.217.0.1';
/** The IngressClass Traefik serves (an operator's IDE_CLOUD_INGRESS_CLASS_NAME, the chart's operator.ingressClassName). */
export const REAL_NODE_INGRESS_CLASS = 'traefik';
const TRAEFIK_CONTROLLER = 'traefik.io/ingress-controller';
const LOCK = '/run/ide-cloud-real-node';
/** Machine paths kubelet, containerd and CNI write to; removed at the end when they were absent before. */
const MACHINE_PATHS = ['/var/lib/kubelet', '/var/log/pods', '/var/log/containers', '/run/containerd', '/var/lib/cni'];
// /var/run is /run on Debian: the one directory of the pods' network namespaces.
const NETNS_DIRS = ['/run/netns'];
const CHAIN_PATTERN = /^(KUBE-|CNI-|IDE-CLOUD-)/;
const API_CHAIN = 'IDE-CLOUD-API';

export interface RealNodeState {
  root: string;
  socket: string;
  pids: { containerd?: number; kubelet?: number; traefik?: number; networkPolicy?: number; storage?: number };
  kubeletPort: number;
  /** Traefik's HTTP entry point, on loopback: `http://127.0.0.1:<port>`. */
  ingressUrl: string;
  /** Chains per `<family>:<table>` before the node started (the ones after it, matching KUBE-/CNI-, are its own). */
  chainsBefore: Record<string, string[]>;
  /** MACHINE_PATHS and NETNS_DIRS entries absent before. */
  createdPaths: string[];
  netnsBefore: string[];
  ipsetsBefore: string[];
  kubepodsCgroupsBefore: boolean;
  ipForwardBefore: string;
}

const log = (message: string): void => {
  process.stderr.write(`[real node ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
};

async function sh(command: string, args: string[], input?: string): Promise<string> {
  if (input === undefined) return (await run(command, args, { maxBuffer: 64 << 20 })).stdout;
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, (error, stdout) => (error ? reject(error) : resolve(stdout)));
    child.stdin!.end(input);
  });
}

/** Installs the Debian packages the real node and the image builds need (once; needs root). */
export async function installRealNodePackages(): Promise<void> {
  await runScript(path.join(here, 'install-real-node-packages.sh'), []);
}

/** The images scripts/images/build.sh makes (each target prints its OCI archive). */
export type ImageTarget =
  | 'pause'
  | 'local-path-helper'
  | 'auth-proxy'
  | 'service'
  | 'operator'
  | 'landing-page'
  | 'session-base'
  | `session-${string}`;

/**
 * The build target of an image reference the project builds: `ide-cloud/session-c:latest` and
 * `docker.io/ide-cloud/session-c` are `session-c`; a target name is itself.
 */
export function imageTarget(image: string): ImageTarget {
  const name = image
    .replace(/^docker\.io\//, '')
    .replace(/^ide-cloud\//, '')
    .replace(/[:@].*$/, '');
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`not an image this project builds: ${image}`);
  return name as ImageTarget;
}

/** Builds (or finds in the cache) the OCI archive of a local image: scripts/images/build.sh <target>. */
export async function buildImage(target: ImageTarget): Promise<string> {
  return (await runScript(path.join(here, '../images/build.sh'), [target])).pop()!;
}

/** `ctr images import` of an OCI archive into the real node's containerd. */
export async function importImage(node: RealNodeState, archive: string): Promise<void> {
  await sh('ctr', ['--address', node.socket, '-n', 'k8s.io', 'images', 'import', archive]);
}

async function chains(): Promise<Record<string, string[]>> {
  const result: Record<string, string[]> = {};
  for (const family of ['iptables', 'ip6tables']) {
    const saved = await sh(`${family}-save`, []).catch(() => '');
    let table = '';
    for (const line of saved.split('\n')) {
      if (line.startsWith('*')) table = line.slice(1);
      else if (line.startsWith(':')) (result[`${family}:${table}`] ??= []).push(line.slice(1).split(' ')[0]!);
    }
  }
  return result;
}

function startProcess(root: string, name: string, file: string, args: string[]): number {
  return startDetached(path.join(root, `${name}.log`), file, args);
}

function containerdConfig(root: string, socket: string, pauseImage: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${root}/containerd/root"
state = "${root}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "${socket}"

[ttrpc]
  address = "${socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "${root}/containerd/opt"

[${cri}]
  sandbox_image = "${pauseImage}"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails in runc create.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "${root}/cni/net.d"
`;
}

function cniConfig(root: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'ide-cloud-real-node',
      plugins: [
        {
          type: 'bridge',
          bridge: REAL_NODE_BRIDGE,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: REAL_NODE_SUBNET, gateway: REAL_NODE_IP }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: path.join(root, 'cni', 'ipam'),
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

/**
 * Traefik's static configuration: one HTTP entry point on loopback, ping on a second one, the
 * Kubernetes Ingress provider (its API server and credentials from KUBECONFIG, never from arguments)
 * and the file provider for `dynamicFile` (traefikDynamicConfig).
 */
function traefikConfig(ingressPort: number, adminPort: number, dynamicFile: string): string {
  return JSON.stringify(
    {
      global: { checkNewVersion: false, sendAnonymousUsage: false },
      entryPoints: { web: { address: `127.0.0.1:${ingressPort}` }, traefik: { address: `127.0.0.1:${adminPort}` } },
      ping: { entryPoint: 'traefik' },
      // A new session's route is served 50 ms after its Ingress changed, not the default 2 s: the
      // student waits for it (the operator hands a URL out once served); a reload costs Traefik little.
      providers: {
        providersThrottleDuration: '50ms',
        kubernetesIngress: { ingressClass: REAL_NODE_INGRESS_CLASS },
        // Written once before Traefik starts: no watch on the node's directory, where logs are written.
        file: { filename: dynamicFile, watch: false },
      },
      log: { level: 'INFO' },
    },
    null,
    2,
  );
}

/**
 * Traefik's dynamic configuration: a default certificate for its TLS store. Without one Traefik
 * generates an RSA key for it at every reload, each route's included: 15 to 200 ms before a new
 * session's route is served on this machine, about 2 ms with it.
 */
function traefikDynamicConfig(certFile: string, keyFile: string): string {
  return JSON.stringify({ tls: { stores: { default: { defaultCertificate: { certFile, keyFile } } } } }, null, 2);
}

function kubeletConfig(socket: string, port: number, healthzPort: number): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // On the bridge only (never the machine's public interface): anonymous requests are allowed.
      address: REAL_NODE_IP,
      port,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      cgroupDriver: 'cgroupfs',
      failSwapOn: false,
      failCgroupV1: false,
      containerRuntimeEndpoint: `unix://${socket}`,
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      resolvConf: '/etc/resolv.conf',
      // Images are imported, not pulled: never collect them, and evict only when the machine is full.
      evictionHard: { 'nodefs.available': '1%', 'imagefs.available': '1%', 'memory.available': '100Mi' },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      registerWithTaints: [REAL_NODE_TAINT],
      serializeImagePulls: false,
      maxPods: 50,
    },
    null,
    2,
  );
}

/** What the real node needs of the machine it runs on. */
export interface MachineFacts {
  platform: NodeJS.Platform;
  uid: number | undefined;
  cgroups: boolean;
  onPath: (program: string) => boolean;
  /** The directory of a real node already running here. */
  runningNode: string | undefined;
}

export function thisMachine(): MachineFacts {
  return {
    platform: process.platform,
    uid: process.getuid?.(),
    cgroups: existsSync('/sys/fs/cgroup/cgroup.controllers') || existsSync('/sys/fs/cgroup/memory'),
    onPath: (program) => (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(path.join(dir, program))),
    runningNode: runningRealNodeOwner(),
  };
}

/**
 * Why a machine cannot run the real node, in a few words (undefined: it can). It needs Linux with
 * cgroups, root, and Debian's packages (installed by installRealNodePackages when missing), and it is
 * one per machine.
 */
export function realNodeUnavailable(machine: MachineFacts = thisMachine()): string | undefined {
  if (machine.platform !== 'linux') return `the real node needs Linux, this is ${machine.platform}`;
  if (machine.uid !== 0) return 'the real node needs root (kubelet, containerd, mounts, iptables)';
  if (!machine.cgroups) return 'the real node needs cgroups (/sys/fs/cgroup)';
  for (const program of ['apt-get', 'dpkg-query', 'ip'])
    if (!machine.onPath(program)) return `the real node needs Debian's packages (${program} is missing)`;
  if (machine.runningNode) return `a real node already runs on this machine (${machine.runningNode}), one at a time`;
  return undefined;
}

export interface NodeChoice {
  realNode: boolean;
  /** With fake pods only: the one line that says why. */
  notice?: string;
}

const fakePods = (why: string): NodeChoice => ({
  realNode: false,
  notice: `Fake pods only (${why}): sessions start, but nothing runs in their pods.`,
});

/**
 * npm start's and `npm run cluster -- up`'s choice: the real node where the machine allows it, unless
 * `--fake-pods` is among `args`.
 */
export function chooseNodes(args: string[], machine?: MachineFacts): NodeChoice {
  const why = args.includes('--fake-pods') ? 'chosen with --fake-pods' : realNodeUnavailable(machine);
  return why ? fakePods(why) : { realNode: true };
}

/** chooseNodes, then the node's Debian packages installed (the first time): an install that fails is a missing requirement too. */
export async function decideNodes(args: string[]): Promise<NodeChoice> {
  const choice = chooseNodes(args);
  if (!choice.realNode) return choice;
  try {
    await installRealNodePackages();
    return choice;
  } catch (error) {
    return fakePods(`the node's Debian packages could not be installed: ${(error as Error).message}`);
  }
}

/** The directory of the real node running on this machine, if one runs. */
function runningRealNodeOwner(): string | undefined {
  let owner: string;
  try {
    owner = readFileSync(path.join(LOCK, 'owner'), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const state = JSON.parse(readFileSync(path.join(owner, 'node.json'), 'utf8')) as RealNodeState;
    return isAlive(state.pids.containerd) || isAlive(state.pids.kubelet) ? owner : undefined;
  } catch {
    return undefined;
  }
}

/** The state of the real node running on this machine (whoever started it), if one runs. */
export async function runningRealNode(): Promise<RealNodeState | undefined> {
  const owner = runningRealNodeOwner();
  return owner ? readNodeState(owner) : undefined;
}

/** Takes the machine's real-node lock for `root`, or says whose it is. A dead owner's lock is taken over. */
async function takeLock(root: string): Promise<void> {
  try {
    await mkdir(LOCK);
  } catch {
    const running = runningRealNodeOwner();
    if (running) throw new Error(`a real node already runs on this machine (${running}): one at a time; stop it first`);
    // A dead owner's leftovers go first.
    const owner = await readFile(path.join(LOCK, 'owner'), 'utf8').catch(() => '');
    if (owner && (await readNodeState(owner))) await stopRealNode(owner).catch(() => undefined);
    await mkdir(LOCK, { recursive: true });
  }
  await writeFile(path.join(LOCK, 'owner'), root);
}

/** The state a real node keeps in its directory (`<control plane dir>/node`), if it started. */
export async function readNodeState(root: string): Promise<RealNodeState | undefined> {
  try {
    return JSON.parse(await readFile(path.join(root, 'node.json'), 'utf8')) as RealNodeState;
  } catch {
    return undefined;
  }
}

export interface StartRealNodeOptions {
  /** The control plane's admin kubeconfig (kubelet registers with it). */
  kubeconfig: string;
  /** The directory of kubelet, traefik, kube-router and local-path-provisioner. */
  bin: string;
  /** Run kube-router, which enforces NetworkPolicies on the node's pods. */
  networkPolicies: boolean;
  /** Free ports: kubelet's server and health endpoint, Traefik's HTTP entry point and its ping, kube-router's health. */
  ports: { kubelet: number; kubeletHealthz: number; ingress: number; ingressPing: number; networkPolicyHealth: number };
  /** Told each step of the start as it begins. */
  onStep?: (step: string) => void;
  /** What prepareRealNode gave, when the caller ran it already (beside its other builds). */
  prepared?: PreparedRealNode;
}

/** The OCI archives of the images a real node starts with. */
export interface PreparedRealNode {
  pause: string;
  volumeHelper: string;
}

/** Installs the node's Debian packages (once) and builds (or finds cached) the images it starts with. */
export async function prepareRealNode(): Promise<PreparedRealNode> {
  await installRealNodePackages();
  return { pause: await buildImage('pause'), volumeHelper: await buildImage('local-path-helper') };
}

/** Starts containerd and kubelet under `root` and returns once the node is Ready and schedulable. */
export async function startRealNode(root: string, options: StartRealNodeOptions): Promise<RealNodeState> {
  if (process.getuid?.() !== 0) throw new Error('the real node needs root (kubelet, containerd, mounts)');
  const started = Date.now();
  const step = (message: string): void => {
    log(message);
    options.onStep?.(message);
  };
  options.onStep?.("building the node's packages and images");
  const { pause: pauseArchive, volumeHelper: helperArchive } = options.prepared ?? (await prepareRealNode());
  await mkdir(root, { recursive: true });
  await takeLock(root);
  const socket = path.join(root, 'containerd.sock');
  const node: RealNodeState = {
    root,
    socket,
    pids: {},
    kubeletPort: options.ports.kubelet,
    ingressUrl: `http://127.0.0.1:${options.ports.ingress}`,
    chainsBefore: await chains(),
    createdPaths: [...MACHINE_PATHS, ...NETNS_DIRS].filter((p) => !existsSync(p)),
    ipsetsBefore: await ipsets(),
    netnsBefore: NETNS_DIRS.flatMap((d) => (existsSync(d) ? readdirSync(d).map((n) => path.join(d, n)) : [])),
    kubepodsCgroupsBefore: cgroupDirs().length > 0,
    ipForwardBefore: readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(),
  };
  const save = () => writeFile(path.join(root, 'node.json'), JSON.stringify(node, null, 2));
  await save();
  try {
    // The bridge exists before kubelet, whose node IP is its address; the CNI bridge plugin adopts it.
    await sh('ip', ['link', 'add', REAL_NODE_BRIDGE, 'type', 'bridge']);
    await sh('ip', ['addr', 'add', `${REAL_NODE_IP}/24`, 'dev', REAL_NODE_BRIDGE]);
    await sh('ip', ['link', 'set', REAL_NODE_BRIDGE, 'up']);

    const pauseImage = await sandboxImage();
    await mkdir(path.join(root, 'cni', 'net.d'), { recursive: true });
    await writeFile(path.join(root, 'cni', 'net.d', '10-ide-cloud.conflist'), cniConfig(root));
    await writeFile(path.join(root, 'containerd.toml'), containerdConfig(root, socket, pauseImage));
    step('starting containerd');
    node.pids.containerd = startProcess(root, 'containerd', 'containerd', [
      '--config',
      path.join(root, 'containerd.toml'),
    ]);
    await save();
    await waitFor(
      'containerd',
      async () => (await sh('ctr', ['--address', socket, 'version']), true),
      30_000,
      node.pids.containerd,
    );
    step('importing the pause and volume helper images');
    await importImage(node, pauseArchive);
    await importImage(node, helperArchive);

    step('starting kubelet');
    const kubeletRoot = path.join(root, 'kubelet');
    await mkdir(kubeletRoot, { recursive: true });
    await writeFile(
      path.join(root, 'kubelet.json'),
      kubeletConfig(socket, options.ports.kubelet, options.ports.kubeletHealthz),
    );
    node.pids.kubelet = startProcess(root, 'kubelet', path.join(options.bin, 'kubelet'), [
      `--config=${path.join(root, 'kubelet.json')}`,
      `--kubeconfig=${options.kubeconfig}`,
      `--root-dir=${kubeletRoot}`,
      `--cert-dir=${path.join(kubeletRoot, 'pki')}`,
      `--hostname-override=${REAL_NODE}`,
      `--node-ip=${REAL_NODE_IP}`,
      `--node-labels=${Object.entries(REAL_NODE_LABELS)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`,
    ]);
    await save();
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(options.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    step(`waiting for ${REAL_NODE} to be Ready`);
    await waitFor(
      `node ${REAL_NODE}`,
      async () =>
        (await core.readNode({ name: REAL_NODE })).status?.conditions?.some(
          (c) => c.type === 'Ready' && c.status === 'True',
        ) ?? false,
      120_000,
      node.pids.kubelet,
    );
    await routeApiServer(kc);
    // No node lifecycle controller here to remove the not-ready taint the admission gave the new node.
    await core.patchNode(
      { name: REAL_NODE, body: { spec: { taints: [REAL_NODE_TAINT] } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await startIngress(node, options, kc);
    if (options.networkPolicies) {
      step('starting kube-router (network policies)');
      node.pids.networkPolicy = await startNetworkPolicyController(root, {
        bin: options.bin,
        kubeconfig: options.kubeconfig,
        nodeName: REAL_NODE,
        healthPort: options.ports.networkPolicyHealth,
      });
      await save();
    }
    step('starting local-path-provisioner (volumes)');
    node.pids.storage = await startStorageProvisioner(root, {
      bin: options.bin,
      kubeconfig: options.kubeconfig,
      kc,
      nodeName: REAL_NODE,
    });
    await save();
    await storageProvisionerReady(root, node.pids.storage);
    log(
      `ready in ${((Date.now() - started) / 1000).toFixed(1)} s (kubelet on ${REAL_NODE_IP}:${options.ports.kubelet}, ` +
        `ingress ${node.ingressUrl})`,
    );
    return node;
  } catch (error) {
    await stopRealNode(root).catch(() => undefined);
    throw error;
  }

  /**
   * Pods' in-cluster clients dial the `kubernetes` Service's ClusterIP: DNAT it to kube-apiserver on
   * loopback, allowed from the node's bridge only (route_localnet on it; the bridge goes at `down`).
   * The API server's serving certificate names that ClusterIP, so TLS checks pass as in a cluster.
   */
  async function routeApiServer(kc: k8s.KubeConfig): Promise<void> {
    const service = await kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const apiServer = new URL(kc.getCurrentCluster()!.server);
    await writeFile(`/proc/sys/net/ipv4/conf/${REAL_NODE_BRIDGE}/route_localnet`, '1');
    await sh('iptables', ['-t', 'nat', '-N', API_CHAIN]);
    await sh('iptables', [
      '-t',
      'nat',
      '-A',
      API_CHAIN,
      '-i',
      REAL_NODE_BRIDGE,
      '-d',
      `${service.spec!.clusterIP!}/32`,
      '-p',
      'tcp',
      '--dport',
      String(service.spec!.ports![0]!.port),
      '-j',
      'DNAT',
      '--to-destination',
      `127.0.0.1:${apiServer.port}`,
    ]);
    await sh('iptables', ['-t', 'nat', '-I', 'PREROUTING', '-j', API_CHAIN]);
  }

  async function startIngress(n: RealNodeState, o: StartRealNodeOptions, kc: k8s.KubeConfig): Promise<void> {
    // Traefik serves the Ingresses whose class names its controller.
    await kc.makeApiClient(k8s.NetworkingV1Api).createIngressClass({
      body: { metadata: { name: REAL_NODE_INGRESS_CLASS }, spec: { controller: TRAEFIK_CONTROLLER } },
    });
    step('starting traefik');
    // One self-signed EC certificate per node, made here (Debian's openssl).
    const certFile = path.join(n.root, 'traefik-default.crt');
    const keyFile = path.join(n.root, 'traefik-default.key');
    await sh('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '3650',
      '-subj',
      '/CN=ide-cloud real node default',
    ]);
    const dynamicFile = path.join(n.root, 'traefik-dynamic.json');
    await writeFile(dynamicFile, traefikDynamicConfig(certFile, keyFile));
    await writeFile(
      path.join(n.root, 'traefik.json'),
      traefikConfig(o.ports.ingress, o.ports.ingressPing, dynamicFile),
    );
    n.pids.traefik = startDetached(
      path.join(n.root, 'traefik.log'),
      path.join(o.bin, 'traefik'),
      [`--configfile=${path.join(n.root, 'traefik.json')}`],
      { KUBECONFIG: o.kubeconfig },
    );
    await save();
    await waitFor(
      'traefik',
      async () => (await fetch(`http://127.0.0.1:${o.ports.ingressPing}/ping`)).ok,
      60_000,
      n.pids.traefik,
    );
  }
}

/** The kubelet's sandbox (pause) image, on the node from its start. */
export async function sandboxImage(): Promise<string> {
  return `registry.k8s.io/pause:${await pinned('PAUSE_VERSION')}`;
}

async function pinned(name: string): Promise<string> {
  const env = await readFile(path.join(here, 'versions.env'), 'utf8');
  const value = new RegExp(`^${name}=(.+)$`, 'm').exec(env)?.[1];
  if (!value) throw new Error(`${name} is not in versions.env`);
  return value.trim();
}

/** The `kubepods` cgroups of every cgroup v1 hierarchy (or of the v2 one). */
function cgroupDirs(): string[] {
  const base = '/sys/fs/cgroup';
  const dirs = existsSync(path.join(base, 'kubepods')) ? [path.join(base, 'kubepods')] : [];
  for (const name of existsSync(base) ? readdirSync(base) : []) {
    const dir = path.join(base, name, 'kubepods');
    if (existsSync(dir)) dirs.push(dir);
  }
  return [...new Set(dirs)];
}

/** Every process in the cgroups below `dir`. */
function cgroupProcesses(dir: string): number[] {
  const pids: number[] = [];
  const walk = (d: string): void => {
    try {
      for (const line of readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.push(+line);
      for (const entry of readdirSync(d, { withFileTypes: true }))
        if (entry.isDirectory()) walk(path.join(d, entry.name));
    } catch {
      // gone meanwhile
    }
  };
  walk(dir);
  return pids;
}

function removeCgroupTree(dir: string): void {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true }))
      if (entry.isDirectory()) removeCgroupTree(path.join(dir, entry.name));
    rmdirSync(dir);
  } catch {
    // gone, or still busy (reported by the caller's check)
  }
}

/** Processes whose command line names `text` (the shims name containerd's socket). */
function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || +entry === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(text)) pids.push(+entry);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function kill(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

async function waitGone(pids: number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some((pid) => isAlive(pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return pids.filter((pid) => isAlive(pid));
}

/** Mount points under any of `prefixes`, deepest first. */
function mountsUnder(prefixes: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[4]!.replace(/\\040/g, ' '));
  return [...new Set(points.filter((p) => prefixes.some((prefix) => p === prefix || p.startsWith(`${prefix}/`))))].sort(
    (a, b) => b.length - a.length,
  );
}

/** Stops the real node of `root` and removes everything it made (see the file's comment); idempotent. */
export async function stopRealNode(root: string): Promise<void> {
  const node = await readNodeState(root);
  if (!node) return;
  // kubelet first (it would restart what is stopped), then every pod process, the shims, containerd.
  // Nothing of theirs needs a graceful end: everything they leave is removed below.
  await stopStorageProvisioner(node.pids.storage);
  await stopNetworkPolicyController(node.pids.networkPolicy);
  if (node.pids.traefik) {
    kill([-node.pids.traefik, node.pids.traefik], 'SIGKILL');
    await waitGone([node.pids.traefik], 5_000);
  }
  if (node.pids.kubelet) {
    kill([-node.pids.kubelet, node.pids.kubelet], 'SIGKILL');
    await waitGone([node.pids.kubelet], 5_000);
  }
  if (!node.kubepodsCgroupsBefore) {
    for (let round = 0; round < 20; round++) {
      const pods = cgroupDirs().flatMap(cgroupProcesses);
      if (pods.length === 0) break;
      kill(pods, 'SIGKILL');
      await waitGone(pods, 2_000);
    }
  }
  const shims = processesNaming(node.socket);
  kill(shims, 'SIGKILL');
  await waitGone(shims, 5_000);
  if (node.pids.containerd) {
    kill([-node.pids.containerd, node.pids.containerd], 'SIGTERM');
    kill(await waitGone([node.pids.containerd], 10_000), 'SIGKILL');
    await waitGone([node.pids.containerd], 5_000);
  }

  const newNetns = NETNS_DIRS.flatMap((d) => (existsSync(d) ? readdirSync(d).map((n) => path.join(d, n)) : [])).filter(
    (p) => !node.netnsBefore.includes(p),
  );
  const kubeletOutside = node.createdPaths.filter((p) => MACHINE_PATHS.includes(p));
  for (const point of mountsUnder([root, ...kubeletOutside, ...newNetns])) {
    await sh('umount', [point]).catch(() => sh('umount', ['-l', point]).catch(() => undefined));
  }
  for (const netns of newNetns) await rm(netns, { force: true }).catch(() => undefined);
  if (!node.kubepodsCgroupsBefore) for (const dir of cgroupDirs()) removeCgroupTree(dir);

  // The pods' veth pairs go with their network namespaces, which the kernel frees asynchronously:
  // delete the host ends on the bridge (each takes its pair with it) rather than wait for that.
  const ports = await sh('ip', ['-o', 'link', 'show', 'master', REAL_NODE_BRIDGE]).catch(() => '');
  for (const line of ports.split('\n').filter(Boolean)) {
    const name = line.split(': ')[1]?.split('@')[0];
    if (name) await sh('ip', ['link', 'del', name]).catch(() => undefined);
  }
  await sh('ip', ['link', 'del', REAL_NODE_BRIDGE]).catch(() => undefined);
  await removeChains(node.chainsBefore);
  await removeIpsets(node.ipsetsBefore ?? []);
  if (node.ipForwardBefore !== '1') await writeFile('/proc/sys/net/ipv4/ip_forward', node.ipForwardBefore);
  for (const p of node.createdPaths) await rm(p, { recursive: true, force: true }).catch(() => undefined);
  await rm(root, { recursive: true, force: true });
  const owner = await readFile(path.join(LOCK, 'owner'), 'utf8').catch(() => '');
  if (owner === root) await rm(LOCK, { recursive: true, force: true });
}

/** Removes the KUBE-* and CNI-* chains absent from `before`, and the rules that jump to them. */
async function removeChains(before: Record<string, string[]>): Promise<void> {
  for (const family of ['iptables', 'ip6tables']) {
    const saved = await sh(`${family}-save`, []).catch(() => '');
    const tables = new Map<string, { ours: string[]; rules: string[] }>();
    let table = '';
    for (const line of saved.split('\n')) {
      if (line.startsWith('*')) {
        table = line.slice(1);
        tables.set(table, { ours: [], rules: [] });
      } else if (line.startsWith(':')) {
        const chain = line.slice(1).split(' ')[0]!;
        if (CHAIN_PATTERN.test(chain) && !(before[`${family}:${table}`] ?? []).includes(chain))
          tables.get(table)!.ours.push(chain);
      } else if (line.startsWith('-A ')) tables.get(table)!.rules.push(line);
    }
    let restore = '';
    for (const [name, { ours, rules }] of tables) {
      if (ours.length === 0) continue;
      const jumpsToOurs = rules.filter((rule) => {
        const [, chain] = rule.split(' ');
        const target = / -[jg] (\S+)/.exec(rule)?.[1];
        return !ours.includes(chain!) && target !== undefined && ours.includes(target);
      });
      restore += `*${name}\n`;
      restore += jumpsToOurs.map((rule) => `-D${rule.slice(2)}\n`).join('');
      restore += ours.map((chain) => `-F ${chain}\n`).join('');
      restore += ours.map((chain) => `-X ${chain}\n`).join('');
      restore += 'COMMIT\n';
    }
    if (restore) await sh(`${family}-restore`, ['--noflush'], restore);
  }
}

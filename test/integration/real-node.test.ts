// The real node (scripts/cluster/real-node.ts): a control plane of its own with kubelet and containerd
// beside the kwok node; the auth proxy's image built from images/auth-proxy/Dockerfile, unchanged, with
// buildah (scripts/images/build.sh), imported into the node's containerd and run as a real pod; an
// Ingress of the class the operator and chart are given routed through Traefik (the node's ingress
// controller) to that pod. Then `down`, and nothing of the node is left: processes, mounts, links,
// iptables chains, directories, the volumes the provisioner made. A node of its own, not the one the
// other real-node suites share: it checks `down`.
// Root only (CI runs as root). Cold (packages, kubelet, Traefik, base images, the image): about 17 min;
// warm: ~1 min.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import {
  ensureBinaries,
  KWOK_NODE,
  stopControlPlane,
  type ControlPlaneState,
} from '../../scripts/cluster/control-plane.js';
import { isAlive } from '../../scripts/cluster/processes.js';
import {
  buildImage,
  importImage,
  installRealNodePackages,
  REAL_NODE,
  REAL_NODE_BRIDGE,
  REAL_NODE_INGRESS_CLASS,
  REAL_NODE_PLACEMENT,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';
import { volumesDir } from '../../scripts/cluster/storage.js';
import {
  classlessClaim,
  execInPod,
  machineState,
  seconds,
  shellPod,
  startRealNodeCluster,
  stopSharedRealNode,
  type MachineState,
} from '../support/real-node.js';

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { timeout: 3000, headers }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .on('error', reject)
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy(new Error('timeout'));
      });
  });
}

/** The auth proxy as the operator runs it in anonymous mode (server/src/operator/auth-proxy.ts), on the real node. */
function authProxyPod(name: string): k8s.V1Pod {
  return {
    metadata: { name, labels: { app: name } },
    spec: {
      ...REAL_NODE_PLACEMENT,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'auth-proxy',
          image: 'ide-cloud/auth-proxy:0.1.0',
          imagePullPolicy: 'Never',
          args: [
            '--alpha-config=/etc/ide-cloud/auth-proxy/url-key.yaml',
            '--email-domain=*',
            '--skip-auth-route=.*',
            '--cookie-secure=false',
            '--reverse-proxy=true',
          ],
          env: [
            { name: 'AUTH_PROXY_ADDRESS', value: '0.0.0.0:8080' },
            { name: 'AUTH_PROXY_UPSTREAM', value: 'http://127.0.0.1:8081' },
            { name: 'OAUTH2_PROXY_COOKIE_SECRET', value: '0123456789abcdef0123456789abcdef' },
          ],
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ping', port: 8080 }, periodSeconds: 1 },
        },
      ],
    },
  };
}

describe('the real node', function () {
  this.timeout(25 * 60_000);
  let state: ControlPlaneState | undefined;
  let dir: string;
  let node: RealNodeState;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let initially: MachineState;
  const timings: string[] = [];

  before(async () => {
    // The machine without the node the other suites share, as `down` must leave it.
    await stopSharedRealNode();
    // ipset and iptables come with the node's packages: installed first, so `initially` can list them.
    await installRealNodePackages();
    initially = machineState();
    const since = Date.now();
    ({ state, node, kc, core } = await startRealNodeCluster('real-node'));
    dir = state.dir;
    timings.push(`control plane with the real node ${seconds(since)}`);
  });

  after(async () => {
    if (state) await stopControlPlane(state.dir);
    if (timings.length) console.log(`      real node timings: ${timings.join(', ')}`);
  });

  it('runs the auth proxy image built from its Dockerfile as a real pod', async () => {
    let since = Date.now();

    // The real node: Ready, only its own taint, the machine's kubelet; the kwok node is still kwok's.
    const real = await core.readNode({ name: REAL_NODE });
    assert.deepEqual(
      real.spec?.taints?.map((t) => `${t.key}=${t.value}:${t.effect}`),
      ['ide-cloud.dev/real-node=true:NoSchedule'],
    );
    assert.equal(real.status?.nodeInfo?.kubeletVersion, 'v1.34.4');
    assert.match(real.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:/);
    const kwok = await core.readNode({ name: KWOK_NODE });
    assert.equal(kwok.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
    assert.equal(real.metadata?.annotations?.['kwok.x-k8s.io/node'], undefined);

    since = Date.now();
    const archive = await buildImage('auth-proxy');
    timings.push(`auth-proxy image ${seconds(since)}`);
    since = Date.now();
    await importImage(node, archive);
    timings.push(`import ${seconds(since)}`);

    // As the operator runs it in anonymous mode (server/src/operator/auth-proxy.ts), on the real node.
    since = Date.now();
    // As the operator runs it in anonymous mode, on the real node.
    await core.createNamespacedPod({ namespace: 'default', body: authProxyPod('auth-proxy') });
    // And one that asks for nothing: the taint keeps it on the kwok node.
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'fake' }, spec: { containers: [{ name: 'c', image: 'ide-cloud/auth-proxy:0.1.0' }] } },
    });
    const pod = await waitFor(
      'the auth proxy pod Ready',
      async () => {
        const p = await core.readNamespacedPod({ name: 'auth-proxy', namespace: 'default' });
        const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return ready ? p : undefined;
      },
      120_000,
    );
    timings.push(`pod Ready ${seconds(since)}`);
    assert.equal(pod.spec?.nodeName, REAL_NODE);
    const fake = await waitFor(
      'the unpinned pod scheduled',
      async () => (await core.readNamespacedPod({ name: 'fake', namespace: 'default' })).spec?.nodeName,
      60_000,
    );
    assert.equal(fake, KWOK_NODE);

    // The pod's HTTP port from the host, its logs and exec through the API server.
    const ping = await get(`http://${pod.status!.podIP}:8080/ping`);
    assert.deepEqual(ping, { status: 200, body: 'OK' });
    const logs = await core.readNamespacedPodLog({ name: 'auth-proxy', namespace: 'default' });
    assert.match(logs, /GET - "\/ping" HTTP\/1\.1 "kube-probe\/1\.34" 200/);
    const stdout = new PassThrough();
    let out = '';
    stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const status = await new Promise<k8s.V1Status>((resolve, reject) => {
      new k8s.Exec(kc)
        .exec('default', 'auth-proxy', 'auth-proxy', ['oauth2-proxy', '--version'], stdout, null, null, false, resolve)
        .catch(reject);
    });
    assert.equal(status.status, 'Success');
    assert.match(out, /oauth2-proxy v7\.8\.1/);
    // The image's proxy is the host's build (build.sh auth-proxy, the same key), not compiled again.
    const hostProxy = await readFile(path.join(await ensureBinaries('auth-proxy'), 'oauth2-proxy'));
    const inImage = await execInPod(kc, 'default', 'auth-proxy', 'auth-proxy', [
      'sha256sum',
      '/usr/local/bin/oauth2-proxy',
    ]);
    assert.equal(inImage.split(' ')[0], createHash('sha256').update(hostProxy).digest('hex'));

    // kubelet's KUBE-FIREWALL drops traffic to 127.0.0.0/8 from elsewhere: kwok's loopback pod
    // addresses (127.1.x.x), served and reached on this machine, still work.
    const server = net.createServer((socket) => socket.end('kwok'));
    await new Promise<void>((resolve) => server.listen(0, '127.1.200.7', resolve));
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect((server.address() as net.AddressInfo).port, '127.1.200.7');
      let data = '';
      socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    server.close();
    assert.equal(reply, 'kwok');
  });

  it(`routes an Ingress of class ${REAL_NODE_INGRESS_CLASS} through Traefik to a real pod, and only that class`, async () => {
    const networking = kc.makeApiClient(k8s.NetworkingV1Api);
    // Its own backend pod: the first test's pod stays for `down` to stop.
    await core.createNamespacedPod({ namespace: 'default', body: authProxyPod('routed') });
    await waitFor(
      'the routed pod Ready',
      async () =>
        (await core.readNamespacedPod({ name: 'routed', namespace: 'default' })).status?.conditions?.some(
          (c) => c.type === 'Ready' && c.status === 'True',
        ) || undefined,
      120_000,
    );
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'routed' },
        spec: { selector: { app: 'routed' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    });
    const ingress = (name: string, className: string, pathPrefix: string): k8s.V1Ingress => ({
      metadata: { name },
      spec: {
        ingressClassName: className,
        rules: [
          {
            host: 'ide.localtest.me',
            http: {
              paths: [
                {
                  path: pathPrefix,
                  pathType: 'Prefix',
                  backend: { service: { name: 'routed', port: { name: 'http' } } },
                },
              ],
            },
          },
        ],
      },
    });
    // The operator's shape of a route: a Prefix path on the session host, to a Service's named port.
    await networking.createNamespacedIngress({
      namespace: 'default',
      body: ingress('routed', REAL_NODE_INGRESS_CLASS, '/ping'),
    });
    // Another controller's class: Traefik leaves it alone.
    await networking.createNamespacedIngress({ namespace: 'default', body: ingress('other', 'nginx', '/oauth2/') });
    const host = { Host: 'ide.localtest.me' };
    const since = Date.now();
    const routed = await waitFor(
      'the route through Traefik',
      async () => {
        const answer = await get(`${node.ingressUrl}/ping`, host);
        return answer.status === 200 ? answer : undefined;
      },
      120_000,
    );
    timings.push(`route through Traefik ${seconds(since)}`);
    assert.deepEqual(routed, { status: 200, body: 'OK' });
    assert.equal(node.ingressUrl.startsWith('http://127.0.0.1:'), true);
    // The pod served it (its log has a /ping from someone other than kubelet's probe).
    // Its log reaches the kubelet by a path of its own, after the answer came back through Traefik.
    await waitFor(
      'the pod log of the routed /ping',
      async () =>
        /GET - "\/ping" HTTP\/1\.1 "(?!kube-probe)[^"]*" 200/.test(
          await core.readNamespacedPodLog({ name: 'routed', namespace: 'default' }),
        ) || undefined,
      30_000,
    );
    assert.equal((await get(`${node.ingressUrl}/oauth2/sign_in`, host)).status, 404);
    assert.equal((await get(`${node.ingressUrl}/ping`, { Host: 'elsewhere.example' })).status, 404);
    // Its default TLS certificate comes from the file provider: without one Traefik makes an RSA key at
    // every reload, and a new session's route waits for it (real-node.ts, traefikDynamicConfig).
    const traefikLog = await readFile(path.join(node.root, 'traefik.log'), 'utf8');
    assert.match(traefikLog, /Starting provider \*file\.Provider/);
    assert.doesNotMatch(traefikLog, /ERR.*(certificate|X509|key pair|file\.Provider|providerName=file)/);

    // The pod gone, its route answers 404 (Traefik follows the EndpointSlices).
    await core.deleteNamespacedPod({ name: 'routed', namespace: 'default', gracePeriodSeconds: 0 });
    await waitFor(
      'the route gone with its pod',
      async () => ((await get(`${node.ingressUrl}/ping`, host)).status === 404 ? true : undefined),
      60_000,
    );
  });

  it('down stops kubelet, containerd, Traefik, kube-router, local-path-provisioner and the pods, and leaves nothing behind', async () => {
    // A volume in use at `down`: the provisioner made it for a pod that wrote to it.
    const namespace = 'volume-left';
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedPersistentVolumeClaim({ namespace, body: classlessClaim('left') });
    await core.createNamespacedPod({
      namespace,
      body: shellPod('left', 'left', 'echo left > /data/hello.txt', REAL_NODE_PLACEMENT),
    });
    await waitFor(
      'the pod writing to its volume',
      async () =>
        (await core.readNamespacedPod({ name: 'left', namespace })).status?.phase === 'Succeeded' ? true : undefined,
      120_000,
    );
    const volumes = volumesDir(node.root);
    assert.ok(existsSync(volumes));
    const storage = node.pids.storage;
    assert.ok(isAlive(storage));
    const during = machineState();
    assert.ok(during.links.includes(REAL_NODE_BRIDGE));
    assert.ok(during.iptables.some((line) => line.includes(':KUBE-FIREWALL')));
    const shims = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(node.socket))
      .map((line) => +line.trim().split(' ')[0]!);
    assert.ok(shims.length > 0);
    assert.deepEqual(
      Object.entries(node.pids).map(([name, pid]) => `${name} ${isAlive(pid) ? 'running' : 'gone'}`),
      ['containerd running', 'kubelet running', 'traefik running', 'networkPolicy running', 'storage running'],
    );
    const pids = [...Object.values(node.pids), ...shims];
    const since = Date.now();
    await stopControlPlane(state!.dir);
    timings.push(`down ${seconds(since)}`);
    const root = state!.realNode!;
    state = undefined;
    assert.deepEqual(pids.filter(isAlive), []);
    assert.equal(isAlive(storage), false);
    assert.equal(existsSync(volumes), false);
    assert.deepEqual(machineState(), initially);
    assert.equal(existsSync(dir), false);
    assert.equal(existsSync(root), false);
    assert.equal(existsSync('/run/ide-cloud-real-node'), false);
    assert.deepEqual(
      execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(root)),
      [],
    );
  });
});

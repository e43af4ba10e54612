// The chart's NetworkPolicies, enforced by traffic: on the real node, kube-router's firewall
// (scripts/cluster/network-policy.ts) applies them to real pods, and pods try each flow the policies
// allow or deny (network-policy.test.ts checks what the API server can tell: which pods they select).
// Stand-ins run the service image's Node with a few lines of HTTP: an IDE pod (the IDE's port, the
// authentication proxy's port `http`, the data bridge's port), the operator, a pod of the ingress
// controller's namespace, and a stranger in another namespace. Every flow is first seen connected
// without the policies, and a refused one's target is seen still serving the node, so a refusal is the
// policies' doing, not a broken network or a dead pod; a try that fails to happen fails the test.
// Traffic from the node itself (Traefik and the kubelet's probes run there) is allowed by kube-router,
// as by most plugins.
// The cloud's metadata service (issue 27, item 3) is a listener of this process on the link-local
// address clouds give it, added to the node's bridge: pods reach it through their gateway, as they
// would reach a real one, and kube-router filters that traffic by the pods' egress policies too.
// Root only, like the other real-node suites.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ensureBinaries, stopControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import { REAL_NODE, REAL_NODE_BRIDGE, REAL_NODE_PLACEMENT } from '../../scripts/cluster/real-node.js';
import { eventually } from '../support/kube.js';
import { execInPod, seconds, shipImage, startRealNodeCluster } from '../support/real-node.js';

const run = promisify(execFile);
const chart = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../charts/ide-cloud');
const RELEASE = 'rel';
const IDE_NAMESPACE = 'np-ide';
const INGRESS_NAMESPACE = 'np-ingress';
const OTHER_NAMESPACE = 'np-other';
const IMAGE = 'ide-cloud/service:0.1.0';
const PORTS = { ide: 3000, proxy: 4180, bridge: 16281, egressAllowed: 8443 } as const;
/** The address of the metadata service of the big clouds (AWS, GCP, Azure, OpenStack). */
const METADATA_ADDRESS = '169.254.169.254';

/** Answers `open <port>` on each port, and runs until killed (a client too, with no port). */
const SERVER = `for (const p of process.argv.slice(1)) require('http').createServer((q, s) => s.end('open ' + p)).listen(+p); setInterval(() => {}, 1 << 30);`;
/**
 * Prints what became of one try at the URL: `connected <body>`, `refused` (the connection was refused:
 * kube-router rejects what a policy denies), `timed out` (no answer within 2 s), or `error <code>` for
 * anything else (a bad address, an unreachable host), so a try that never happened reads as no outcome.
 */
const CLIENT = `fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => r.text()).then(
  (body) => console.log('connected ' + body),
  (e) => console.log(e.name === 'TimeoutError' ? 'timed out' : e.cause?.code === 'ECONNREFUSED' ? 'refused' : 'error ' + (e.cause?.code ?? e.name)));`;

/** What a try at a flow can come to: `error <code>` and anything unexpected are not outcomes but failures. */
type Outcome = 'connected' | 'refused' | 'timed out';
const OUTCOMES: readonly string[] = ['connected', 'refused', 'timed out'] satisfies Outcome[];

describe('security: the chart NetworkPolicies, enforced on the real node by traffic', function () {
  this.timeout(30 * 60_000);
  let state: ControlPlaneState | undefined;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  const timings: string[] = [];
  const ips: Record<string, string> = { metadata: METADATA_ADDRESS };
  let metadataService: http.Server | undefined;

  /** The chart's policies for IDE_NAMESPACE, the ingress controller in INGRESS_NAMESPACE. */
  async function renderPolicies(): Promise<k8s.V1NetworkPolicy[]> {
    const helm = path.join(await ensureBinaries('helm'), 'helm');
    const set = [
      // An installation with an identity provider (the policies are the same without one).
      'identityProvider.issuer=https://login.example.org/realms/ide-cloud',
      'identityProvider.sessionClient.secret=secret-of-the-session-client',
      `networkPolicy.ingressController.namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=${INGRESS_NAMESPACE}`,
      'networkPolicy.sessionEgress.cidr=0.0.0.0/0',
      `networkPolicy.sessionEgress.ports={${PORTS.egressAllowed}}`,
    ];
    const { stdout } = await run(helm, [
      'template',
      RELEASE,
      chart,
      '--namespace',
      IDE_NAMESPACE,
      '--show-only',
      'templates/network-policy.yaml',
      ...set.flatMap((value) => ['--set', value]),
    ]);
    // Into the client's models (`from` becomes `_from`): sent as parsed, a policy would lose its peers.
    return (k8s.loadAllYaml(stdout) as (k8s.KubernetesObject | null)[]).filter(
      (doc): doc is k8s.V1NetworkPolicy => doc?.kind === 'NetworkPolicy',
    );
  }

  /** A pod on the real node serving `open <port>` on `ports` (named as the chart's policies name them). */
  async function startPod(namespace: string, name: string, labels: Record<string, string>, ports: number[]) {
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels },
        spec: {
          ...REAL_NODE_PLACEMENT,
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'main',
              image: IMAGE,
              imagePullPolicy: 'Never',
              command: ['node', '-e', SERVER, ...ports.map(String)],
              ports: ports.map((port) => ({
                containerPort: port,
                ...(port === PORTS.proxy ? { name: 'http' } : {}),
              })),
            },
          ],
        },
      },
    });
  }

  /**
   * What `from` (namespace/pod) sees of http://<to>:<port>/: `connected` when the pod there answered, else
   * the client's line. Throws when the exec fails (a crashed pod, a missing client) or the client could not
   * try (`error <code>`), or something other than the pod there answered: none of these is a policy's doing.
   */
  async function reach(from: string, to: string, port: number): Promise<Outcome> {
    const [namespace, pod] = from.split('/') as [string, string];
    const answer = (
      await execInPod(kc, namespace, pod, 'main', ['node', '-e', CLIENT, `http://${ips[to]}:${port}/`])
    ).trim();
    const outcome = answer === `connected open ${port}` ? 'connected' : answer;
    assert.ok(OUTCOMES.includes(outcome), `${from} → ${to}:${port} gave ${JSON.stringify(answer)}`);
    return outcome as Outcome;
  }

  /** That `to` still serves `port` to this process (the node, which the policies let in): a refusal is theirs. */
  async function assertServes(to: string, port: number): Promise<void> {
    const body = await (await fetch(`http://${ips[to]}:${port}/`, { signal: AbortSignal.timeout(2000) })).text();
    assert.equal(body, `open ${port}`, `${to}:${port} from the node`);
  }

  /** The flows each policy allows or denies: [from, to, port, outcome with the policies]. */
  const FLOWS: [string, string, number, Outcome][] = [
    // Nobody outside reaches an IDE pod: not the IDE, not the proxy, not the bridge.
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.ide, 'refused'],
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.proxy, 'refused'],
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.bridge, 'refused'],
    // The ingress controller reaches the authentication proxy only.
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.proxy, 'connected'],
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.ide, 'refused'],
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.bridge, 'refused'],
    // The operator reaches the data bridge only.
    [`${IDE_NAMESPACE}/operator`, 'ide', PORTS.bridge, 'connected'],
    [`${IDE_NAMESPACE}/operator`, 'ide', PORTS.ide, 'refused'],
    // A session goes out on the allowed ports only; the operator's egress is the API server's.
    [`${IDE_NAMESPACE}/ide`, 'stranger', PORTS.egressAllowed, 'connected'],
    [`${IDE_NAMESPACE}/ide`, 'stranger', PORTS.ide, 'refused'],
    // Not to the cloud's metadata service, though it listens on an allowed port (issue 27, item 3).
    [`${IDE_NAMESPACE}/ide`, 'metadata', PORTS.egressAllowed, 'refused'],
    [`${IDE_NAMESPACE}/operator`, 'stranger', PORTS.egressAllowed, 'refused'],
  ];

  before(async () => {
    let since = Date.now();
    let node;
    ({ state, node, kc, core } = await startRealNodeCluster('netpol'));
    timings.push(`control plane with the real node ${seconds(since)}`);
    await shipImage(node, 'service', timings);
    const policies = await renderPolicies();
    const sessions = policies.find((p) => p.metadata!.name!.endsWith('-sessions'))!;
    const operatorLabels = sessions.spec!.ingress![1]!._from![0]!.podSelector!.matchLabels!;
    for (const namespace of [IDE_NAMESPACE, INGRESS_NAMESPACE, OTHER_NAMESPACE]) {
      await core.createNamespace({ body: { metadata: { name: namespace } } });
    }
    since = Date.now();
    const managed = { 'app.kubernetes.io/managed-by': 'ide-cloud' };
    await startPod(IDE_NAMESPACE, 'ide', { ...managed, 'app.kubernetes.io/component': 'pool-instance' }, [
      PORTS.ide,
      PORTS.proxy,
      PORTS.bridge,
    ]);
    await startPod(IDE_NAMESPACE, 'operator', operatorLabels, []);
    await startPod(INGRESS_NAMESPACE, 'ingress', {}, []);
    await startPod(OTHER_NAMESPACE, 'stranger', {}, [PORTS.ide, PORTS.egressAllowed]);
    for (const [namespace, name] of [
      [IDE_NAMESPACE, 'ide'],
      [IDE_NAMESPACE, 'operator'],
      [INGRESS_NAMESPACE, 'ingress'],
      [OTHER_NAMESPACE, 'stranger'],
    ] as const) {
      const pod = await eventually(async () => {
        const p = await core.readNamespacedPod({ namespace, name });
        const container = p.status?.containerStatuses?.[0];
        assert.ok(container?.state?.running, `${name}: ${JSON.stringify(container?.state)}`);
        return p;
      }, 120_000);
      assert.equal(pod.spec?.nodeName, REAL_NODE);
      ips[name] = pod.status!.podIP!;
    }
    timings.push(`pods Running ${seconds(since)}`);
    // The bridge and this address go with the node; the listener with this suite.
    await run('ip', ['addr', 'add', `${METADATA_ADDRESS}/32`, 'dev', REAL_NODE_BRIDGE]);
    metadataService = http.createServer((_, res) => res.end(`open ${PORTS.egressAllowed}`));
    await new Promise<void>((resolve) => metadataService!.listen(PORTS.egressAllowed, METADATA_ADDRESS, resolve));
    // Without policies every flow is open (each server answers once it listens).
    for (const [from, to, port] of FLOWS) {
      await eventually(
        async () => assert.equal(await reach(from, to, port), 'connected', `${from} → ${to}:${port}`),
        30_000,
      );
    }
    const networking = kc.makeApiClient(k8s.NetworkingV1Api);
    for (const policy of policies) {
      await networking.createNamespacedNetworkPolicy({ namespace: IDE_NAMESPACE, body: policy });
    }
  });

  after(async () => {
    metadataService?.close();
    if (state) await stopControlPlane(state.dir);
    if (timings.length) console.log(`      network policy timings: ${timings.join(', ')}`);
  });

  /** Tries a flow until it comes to `expected` or 60 s pass (kube-router applies a new policy within a sync). */
  async function settledOutcome(from: string, to: string, port: number, expected: Outcome): Promise<Outcome> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      // A try that fails to happen throws here and ends the test at once.
      const outcome = await reach(from, to, port);
      if (outcome === expected || Date.now() > deadline) return outcome;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  for (const [from, to, port, expected] of FLOWS) {
    it(`${from} → ${to} port ${port}: ${expected}`, async () => {
      assert.equal(await settledOutcome(from, to, port, expected), expected, `${from} → ${to}:${port}`);
      // From then on the flow stays as expected.
      assert.equal(await reach(from, to, port), expected);
      if (expected !== 'connected') await assertServes(to, port);
    });
  }
});

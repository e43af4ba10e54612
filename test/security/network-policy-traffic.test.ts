// The chart's NetworkPolicies, enforced by traffic: on the real node, kube-router's firewall
// (scripts/cluster/network-policy.ts) applies them to real pods, and pods try each flow the policies
// allow or deny (network-policy.test.ts checks what the API server can tell: which pods they select).
// Stand-ins run the service image's Node with a few lines of HTTP: an IDE pod (the IDE's port, the
// authentication proxy's port `http`, the data bridge's port), the operator, a pod of the ingress
// controller's namespace, and a stranger in another namespace. Every flow is first seen open without
// the policies, so a closed one is the policies' doing, not a broken network. Traffic from the node
// itself (Traefik and the kubelet's probes run there) is allowed by kube-router, as by most plugins.
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
/** Prints `open <port>` when the URL answers within 2 s, `closed` otherwise. */
const CLIENT = `fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => r.text()).then(console.log, () => console.log('closed'));`;

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

  /** `open` or `closed`: what `from` (namespace/pod) sees of http://<to>:<port>/. */
  async function reach(from: string, to: string, port: number): Promise<string> {
    const [namespace, pod] = from.split('/') as [string, string];
    const answer = await execInPod(kc, namespace, pod, 'main', ['node', '-e', CLIENT, `http://${ips[to]}:${port}/`]);
    return answer.trim() === `open ${port}` ? 'open' : 'closed';
  }

  /** The flows each policy allows or denies: [from, to, port, expected with the policies]. */
  const FLOWS: [string, string, number, 'open' | 'closed'][] = [
    // Nobody outside reaches an IDE pod: not the IDE, not the proxy, not the bridge.
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.ide, 'closed'],
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.proxy, 'closed'],
    [`${OTHER_NAMESPACE}/stranger`, 'ide', PORTS.bridge, 'closed'],
    // The ingress controller reaches the authentication proxy only.
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.proxy, 'open'],
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.ide, 'closed'],
    [`${INGRESS_NAMESPACE}/ingress`, 'ide', PORTS.bridge, 'closed'],
    // The operator reaches the data bridge only.
    [`${IDE_NAMESPACE}/operator`, 'ide', PORTS.bridge, 'open'],
    [`${IDE_NAMESPACE}/operator`, 'ide', PORTS.ide, 'closed'],
    // A session goes out on the allowed ports only; the operator's egress is the API server's.
    [`${IDE_NAMESPACE}/ide`, 'stranger', PORTS.egressAllowed, 'open'],
    [`${IDE_NAMESPACE}/ide`, 'stranger', PORTS.ide, 'closed'],
    // Not to the cloud's metadata service, though it listens on an allowed port (issue 27, item 3).
    [`${IDE_NAMESPACE}/ide`, 'metadata', PORTS.egressAllowed, 'closed'],
    [`${IDE_NAMESPACE}/operator`, 'stranger', PORTS.egressAllowed, 'closed'],
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
        async () => assert.equal(await reach(from, to, port), 'open', `${from} → ${to}:${port}`),
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

  for (const [from, to, port, expected] of FLOWS) {
    it(`${from} → ${to} port ${port}: ${expected}`, async () => {
      // kube-router applies a new policy within a sync; from then on the flow stays as expected.
      await eventually(async () => assert.equal(await reach(from, to, port), expected), 60_000);
      assert.equal(await reach(from, to, port), expected);
    });
  }
});

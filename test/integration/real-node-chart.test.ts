// The chart on the real node: `helm install charts/ide-cloud` with the images built here from the
// project's Dockerfiles (scripts/images/build.sh), the chart as published, placed on the real node by a
// Helm post-renderer (scripts/cluster/real-node-placement.mjs) as a platform would place it on its
// nodes. The service, the operator and the landing page run as real pods; the test reaches them only
// through the ingress controller (Traefik) with the Ingress a platform would add in front of them.
// On the real node the suites share (test/support/real-node.ts), given back without the release's
// namespace. Root only (CI runs as root). Cold, after the other real-node suites built the images:
// about 1 min.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { ensureBinaries, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import {
  buildImage,
  importImage,
  REAL_NODE,
  REAL_NODE_INGRESS_CLASS,
  REAL_NODE_PLACEMENT,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';
import { eventually } from '../support/kube.js';
import { borrowSharedRealNode, REAL_NODE_HOOK_TIMEOUT_MS, seconds } from '../support/real-node.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RELEASE = 'ide-cloud';
const NAMESPACE = 'ide-cloud';
/** The host of the platform's Ingress in front of the service and the landing page. */
const HOST = 'ide-cloud.localtest.me';

describe('the chart on the real node', function () {
  this.timeout(60 * 60_000);
  let state: ControlPlaneState | undefined;
  let node: RealNodeState;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let helmBin: string;
  let giveBack: (() => Promise<void>) | undefined;
  const timings: string[] = [];

  before(async function () {
    this.timeout(REAL_NODE_HOOK_TIMEOUT_MS);
    let since = Date.now();
    const borrowed = await borrowSharedRealNode();
    giveBack = borrowed.giveBack;
    ({ state, node, kc, core } = borrowed.cluster);
    timings.push(`control plane with the real node (shared) ${seconds(since)}`);
    helmBin = path.join(await ensureBinaries('helm'), 'helm');
    since = Date.now();
    for (const target of ['service', 'operator', 'landing-page'] as const) {
      await importImage(node, await buildImage(target));
    }
    timings.push(`images built (or cached) and imported ${seconds(since)}`);
  });

  after(async () => {
    const since = Date.now();
    await giveBack?.();
    timings.push(`given back ${seconds(since)}`);
    if (timings.length) console.log(`      real node chart timings: ${timings.join(', ')}`);
  });

  /** GET through Traefik with the platform's host (node:http: fetch does not send a Host of its own). */
  function viaIngress(
    pathAndQuery: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      http
        .get(
          `${node.ingressUrl}${pathAndQuery}`,
          { headers: { Host: HOST, ...headers }, timeout: 5_000 },
          (response) => {
            let body = '';
            response.on('data', (chunk: Buffer) => (body += chunk.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          },
        )
        .on('error', reject)
        .on('timeout', function (this: http.ClientRequest) {
          this.destroy(new Error('timeout'));
        });
    });
  }

  it('helm install: the service, the operator and the landing page run as real pods, reached through Traefik', async () => {
    let since = Date.now();
    await run(
      helmBin,
      [
        'install',
        RELEASE,
        path.join(root, 'charts', 'ide-cloud'),
        '--namespace',
        NAMESPACE,
        '--create-namespace',
        // Anonymous mode: no identity provider is reachable from the real node's pods here.
        '--set',
        'identityProvider.enabled=false',
        '--set',
        'landingPage.letAnyoneActAsAnyUser=true',
        // The session images are not imported into this node; nothing is to be preloaded.
        '--set',
        'imagePreloading.enabled=false',
        // The node enforces the chart's policies (kube-router): the pods reach the API server through
        // the node's DNAT to its port on loopback, which the policy's API server ports must name.
        '--set',
        `networkPolicy.apiServer.ports={443,6443,${new URL(kc.getCurrentCluster()!.server).port}}`,
        '--set',
        `operator.ingressClassName=${REAL_NODE_INGRESS_CLASS}`,
        '--set',
        'operator.sessionHost=ide.localtest.me',
        '--set',
        'operator.sessionScheme=http',
        '--post-renderer',
        path.join(root, 'scripts', 'cluster', 'real-node-placement.mjs'),
        '--post-renderer-args',
        JSON.stringify(REAL_NODE_PLACEMENT),
      ],
      { env: { ...process.env, KUBECONFIG: state!.kubeconfig }, maxBuffer: 32 << 20 },
    );
    timings.push(`helm install ${seconds(since)}`);

    since = Date.now();
    for (const component of ['service', 'operator', 'landing-page']) {
      await eventually(async () => {
        const pods = await core.listNamespacedPod({
          namespace: NAMESPACE,
          labelSelector: `app=${component},app.kubernetes.io/instance=${RELEASE}`,
        });
        assert.ok(pods.items.length > 0, `${component}: no pods yet`);
        for (const pod of pods.items) {
          assert.equal(pod.spec?.nodeName, REAL_NODE);
          assert.ok(
            pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            `${pod.metadata?.name} not Ready: ${JSON.stringify(pod.status?.containerStatuses?.[0]?.state)}`,
          );
        }
      }, 180_000);
    }
    timings.push(`pods Ready ${seconds(since)}`);

    // The platform's route in front of the service and the landing page, of the class Traefik serves.
    const backend = (service: string): k8s.V1IngressBackend => ({ service: { name: service, port: { name: 'http' } } });
    await kc.makeApiClient(k8s.NetworkingV1Api).createNamespacedIngress({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'platform' },
        spec: {
          ingressClassName: REAL_NODE_INGRESS_CLASS,
          rules: [
            {
              host: HOST,
              http: {
                paths: [
                  { path: '/service/', pathType: 'Prefix', backend: backend(`${RELEASE}-service`) },
                  { path: '/openapi.json', pathType: 'Exact', backend: backend(`${RELEASE}-service`) },
                  { path: '/', pathType: 'Prefix', backend: backend(`${RELEASE}-landing-page`) },
                ],
              },
            },
          ],
        },
      },
    });

    // The service, through Traefik: its document, and the chart's app definitions read in-cluster.
    const openapi = await eventually(async () => {
      const answer = await viaIngress('/openapi.json');
      assert.equal(answer.status, 200, answer.body);
      return answer;
    }, 60_000);
    assert.match((JSON.parse(openapi.body) as { openapi: string }).openapi, /^3\./);
    const tokens = await core.readNamespacedSecret({ name: `${RELEASE}-tokens`, namespace: NAMESPACE });
    const adminToken = Buffer.from(tokens.data!['admin-api-token']!, 'base64').toString();
    const definitions = await eventually(async () => {
      const answer = await viaIngress('/service/admin/appdefinition', { 'X-Admin-Api-Token': adminToken });
      assert.equal(answer.status, 200, answer.body);
      const names = (JSON.parse(answer.body) as { appDefinitionName: string }[]).map((d) => d.appDefinitionName);
      assert.ok(names.includes('python-latest'), names.join(', '));
      return names;
    }, 60_000);
    assert.ok(definitions.length >= 6);

    // The landing page, through Traefik.
    const health = await viaIngress('/healthz');
    assert.equal(health.status, 200, health.body);
    const page = await viaIngress('/');
    assert.equal(page.status, 200);
    assert.match(page.body, /<html/i);

    // The operator leads (its Lease, renewed by the pod on the real node).
    const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    const operatorPods = (
      await core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: `app=operator,app.kubernetes.io/instance=${RELEASE}`,
      })
    ).items.map((pod) => pod.metadata!.name!);
    await eventually(async () => {
      const lease = await coordination.readNamespacedLease({ name: 'ide-cloud-operator', namespace: NAMESPACE });
      const holder = lease.spec?.holderIdentity ?? '';
      assert.ok(
        operatorPods.some((pod) => holder.startsWith(pod)),
        `holder ${holder}, pods ${operatorPods.join(', ')}`,
      );
    }, 60_000);
  });
});

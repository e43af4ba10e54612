// The images the project ships, built from their own Dockerfiles with buildah (scripts/images/build.sh)
// against local stand-ins of their base images, each run as a real pod on the real node
// (scripts/cluster/real-node.ts): the service, the operator and the landing page (the targets of
// images/server/Dockerfile) and a session image (images/session/Dockerfile on the session base).
// The control plane's processes reach the API server as in any cluster: in-cluster, through the
// `kubernetes` Service (the real node routes its ClusterIP to the API server).
// Root only (CI runs as root). Cold, after real-node.test.ts has built the node: about 10 min on 2 busy
// cores (Node stand-ins 1.5 min, server images 3 min, session base with code-server 5.5 min); warm:
// about 2 min (the server images rebuild in seconds when server/ changed; imports take the rest).
// On the real node the suites share (test/support/real-node.ts), given back without its namespace.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import {
  REAL_NODE,
  REAL_NODE_PLACEMENT,
  type ImageTarget,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';
import { ideCloudResources } from '../../server/src/kube/resources.js';
import { eventually } from '../support/kube.js';
import { createAppDefinition } from '../support/operator.js';
import {
  borrowSharedRealNode,
  execInPod,
  REAL_NODE_HOOK_TIMEOUT_MS,
  seconds,
  shipImage,
} from '../support/real-node.js';

const NAMESPACE = 'ide-cloud';
const SERVICE_ACCOUNT = 'ide-cloud-images';
const TOKENS = 'ide-cloud-tokens';

/** The chart's container security context (charts/ide-cloud/templates/_helpers.tpl): the images run under it. */
const CHART_SECURITY_CONTEXT: k8s.V1SecurityContext = {
  runAsNonRoot: true,
  runAsUser: 10001,
  runAsGroup: 10001,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

async function fetchText(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000), redirect: 'manual' });
  return { status: response.status, body: await response.text() };
}

describe('the images the project ships, on the real node', function () {
  this.timeout(60 * 60_000);
  let node: RealNodeState;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let giveBack: (() => Promise<void>) | undefined;
  const timings: string[] = [];

  before(async function () {
    this.timeout(REAL_NODE_HOOK_TIMEOUT_MS);
    const since = Date.now();
    const borrowed = await borrowSharedRealNode();
    giveBack = borrowed.giveBack;
    ({ node, kc, core } = borrowed.cluster);
    timings.push(`control plane with the real node (shared) ${seconds(since)}`);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    // What the service and operator may do is the chart's concern (its Roles); here, only that the
    // images run and reach the API server in-cluster.
    await core.createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: SERVICE_ACCOUNT } } });
    await kc.makeApiClient(k8s.RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: SERVICE_ACCOUNT },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: SERVICE_ACCOUNT, namespace: NAMESPACE }],
      },
    });
    await core.createNamespacedSecret({
      namespace: NAMESPACE,
      body: {
        metadata: { name: TOKENS },
        stringData: {
          'service-auth-token': 'service-token-0123456789',
          'admin-api-token': 'admin-token-0123456789',
          'bridge-token': 'bridge-token-0123456789',
        },
      },
    });
  });

  after(async () => {
    const since = Date.now();
    await giveBack?.();
    timings.push(`given back ${seconds(since)}`);
    if (timings.length) console.log(`      real node image timings: ${timings.join(', ')}`);
  });

  const ship = (target: ImageTarget): Promise<void> => shipImage(node, target, timings);

  const secretEnv = (name: string, key: string): k8s.V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: TOKENS, key } },
  });

  /** Creates a pod on the real node and waits until it is Ready; fails with its container's state. */
  async function runReady(pod: k8s.V1Pod): Promise<k8s.V1Pod> {
    const name = pod.metadata!.name!;
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: { ...pod, spec: { ...pod.spec!, ...REAL_NODE_PLACEMENT, terminationGracePeriodSeconds: 1 } },
    });
    const since = Date.now();
    const ready = await eventually(async () => {
      const p = await core.readNamespacedPod({ name, namespace: NAMESPACE });
      if (!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
        const logs = await core.readNamespacedPodLog({ name, namespace: NAMESPACE, tailLines: 20 }).catch(() => '');
        throw new Error(`${name} not Ready: ${JSON.stringify(p.status?.containerStatuses?.[0]?.state)}\n${logs}`);
      }
      return p;
    }, 180_000);
    timings.push(`${name} pod Ready ${seconds(since)}`);
    assert.equal(ready.spec?.nodeName, REAL_NODE);
    return ready;
  }

  const exec = (pod: string, container: string, command: string[]): Promise<string> =>
    execInPod(kc, NAMESPACE, pod, container, command);

  let serviceUrl: string;

  it('runs the service image (images/server/Dockerfile, target service): it answers its OpenAPI document, in-cluster', async () => {
    await ship('service');
    const pod = await runReady({
      metadata: { name: 'service' },
      spec: {
        serviceAccountName: SERVICE_ACCOUNT,
        containers: [
          {
            name: 'service',
            image: 'ide-cloud/service:0.1.0',
            imagePullPolicy: 'Never',
            env: [
              secretEnv('SERVICE_AUTH_TOKEN', 'service-auth-token'),
              secretEnv('ADMIN_API_TOKEN', 'admin-api-token'),
              { name: 'IDE_CLOUD_NAMESPACE', value: NAMESPACE },
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { httpGet: { path: '/openapi.json', port: 'http' }, periodSeconds: 1 },
            securityContext: CHART_SECURITY_CONTEXT,
          },
        ],
      },
    });
    serviceUrl = `http://${pod.status!.podIP}:8080`;
    const openapi = await fetchText(`${serviceUrl}/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.match((JSON.parse(openapi.body) as { openapi: string }).openapi, /^3\./);
    // An app definition written now reaches the service's cache through the in-cluster client.
    await createAppDefinition(ideCloudResources(kc, NAMESPACE), 'javascript');
    await eventually(async () => {
      const answer = await fetchText(`${serviceUrl}/service/admin/appdefinition`, {
        headers: { 'X-Admin-Api-Token': 'admin-token-0123456789' },
      });
      assert.equal(answer.status, 200, answer.body);
      assert.deepEqual(
        (JSON.parse(answer.body) as { appDefinitionName: string }[]).map((d) => d.appDefinitionName),
        ['javascript'],
      );
    }, 30_000);
  });

  it('runs the operator image (target operator): it takes the leader Lease through the in-cluster API', async () => {
    await ship('operator');
    await runReady({
      metadata: { name: 'operator' },
      spec: {
        serviceAccountName: SERVICE_ACCOUNT,
        containers: [
          {
            name: 'operator',
            image: 'ide-cloud/operator:0.1.0',
            imagePullPolicy: 'Never',
            env: [{ name: 'IDE_CLOUD_NAMESPACE', value: NAMESPACE }],
            securityContext: CHART_SECURITY_CONTEXT,
          },
        ],
      },
    });
    const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    const lease = await eventually(async () => {
      const l = await coordination.readNamespacedLease({ name: 'ide-cloud-operator', namespace: NAMESPACE });
      assert.ok(l.spec?.holderIdentity, 'the Lease has no holder yet');
      return l;
    }, 60_000);
    const renewed = lease.spec!.renewTime!;
    // It keeps renewing (the process stays up and its writes keep going through).
    await eventually(async () => {
      const l = await coordination.readNamespacedLease({ name: 'ide-cloud-operator', namespace: NAMESPACE });
      assert.equal(l.spec?.holderIdentity, lease.spec!.holderIdentity);
      assert.notEqual(String(l.spec?.renewTime), String(renewed));
    }, 60_000);
  });

  it('runs the landing page image (target landing-page): /healthz and the page, which bundles its client at start', async () => {
    await ship('landing-page');
    await core.createNamespacedConfigMap({
      namespace: NAMESPACE,
      body: { metadata: { name: 'landing-page' }, data: { 'apps.json': JSON.stringify([]) } },
    });
    const pod = await runReady({
      metadata: { name: 'landing-page' },
      spec: {
        containers: [
          {
            name: 'landing-page',
            image: 'ide-cloud/landing-page:0.1.0',
            imagePullPolicy: 'Never',
            env: [
              { name: 'SERVICE_URL', value: serviceUrl ?? 'http://127.0.0.1:1' },
              secretEnv('SERVICE_AUTH_TOKEN', 'service-auth-token'),
              { name: 'LANDING_PAGE_APPS_FILE', value: '/etc/ide-cloud/apps.json' },
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
            volumeMounts: [{ name: 'config', mountPath: '/etc/ide-cloud', readOnly: true }],
            securityContext: CHART_SECURITY_CONTEXT,
          },
        ],
        volumes: [{ name: 'config', configMap: { name: 'landing-page' } }],
      },
    });
    const base = `http://${pod.status!.podIP}:8080`;
    assert.equal((await fetchText(`${base}/healthz`)).status, 200);
    const page = await fetchText(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<html/i);
    // Its runtime stage ran npm ci with the build's npm configuration mounted: none of it stayed.
    await exec('landing-page', 'landing-page', [
      'sh',
      '-c',
      'test ! -e /usr/local/etc/npmrc && test ! -e /run/ide-cloud-build',
    ]);
  });

  it('runs a session image (session-javascript on the session base): the IDE and the data bridge answer', async () => {
    await ship('session-javascript');
    const pod = await runReady({
      metadata: { name: 'session' },
      spec: {
        containers: [
          {
            name: 'ide',
            image: 'ide-cloud/session-javascript:latest',
            imagePullPolicy: 'Never',
            env: [
              { name: 'SESSION_ENV_STRATEGY', value: 'data-bridge' },
              { name: 'DATA_BRIDGE_ENABLED', value: 'true' },
              secretEnv('DATA_BRIDGE_TOKEN', 'bridge-token'),
            ],
            ports: [
              { name: 'ide', containerPort: 3000 },
              { name: 'bridge', containerPort: 16281 },
            ],
            readinessProbe: { httpGet: { path: '/healthz', port: 'ide' }, periodSeconds: 1 },
          },
        ],
      },
    });
    const ip = pod.status!.podIP!;
    // code-server's own health endpoint, then the workbench page.
    const health = await fetchText(`http://${ip}:3000/healthz`);
    assert.equal(health.status, 200);
    assert.match(health.body, /"status"/);
    const workbench = await eventually(async () => {
      const answer = await fetchText(`http://${ip}:3000/?folder=/home/ide/workspace`);
      assert.equal(answer.status, 200, `workbench answered ${answer.status}`);
      return answer;
    }, 30_000);
    assert.match(workbench.body, /vs\/code|workbench/);
    // The bridge, its own process: health for anyone, values only with the instance's token.
    const bridge = await eventually(async () => {
      const answer = await fetchText(`http://${ip}:16281/health`);
      assert.equal(answer.status, 200);
      return answer;
    }, 30_000);
    assert.ok(bridge.body.length > 0);
    const refused = await fetchText(`http://${ip}:16281/data`, { method: 'POST', body: '{}' });
    assert.equal(refused.status, 401);
    // The session's own extensions are installed for the IDE's user, and the agent is on the PATH.
    const extensions = (await exec('session', 'ide', ['code-server', '--list-extensions'])).split('\n');
    assert.ok(extensions.includes('ide-cloud.data-bridge'), extensions.join(', '));
    assert.ok(extensions.includes('ide-cloud.ide-cloud-agent'), extensions.join(', '));
    assert.match(
      await exec('session', 'ide', ['sh', '-c', 'command -v ide-cloud-agent && command -v git']),
      /ide-cloud-agent\n.*git/,
    );
    // The build's npm configuration and CA bundle were bind mounts: nothing of them is in the image.
    await exec('session', 'ide', ['sh', '-c', 'test ! -e /usr/local/etc/npmrc && test ! -e /run/ide-cloud-build']);
  });
});

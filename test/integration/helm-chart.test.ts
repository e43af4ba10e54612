// The Helm chart against the real local kube-apiserver: lint, template, server-side dry-run, then a
// real install → admin PATCH → upgrade → uninstall, and what each service account may and may not do.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ensureBinaries } from '../../scripts/cluster/control-plane.js';
import { ideCloudResources } from '../../server/src/kube/resources.js';
import { parseServiceConfig, startService } from '../../server/src/service/index.js';
import { loadServiceConfig } from '../../server/src/service/config.js';
import { loadOperatorConfig } from '../../server/src/operator/config.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { testOperator } from '../support/operator.js';
import { call, SERVICE_AUTH_TOKEN, startTestService } from '../support/service-harness.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const chart = path.join(root, 'charts', 'ide-cloud');
const allOn = path.join(chart, 'ci', 'all-on-values.yaml');
/** What every installation must give at least: its identity provider (on by default). */
const ISSUER = [
  '--set',
  'identityProvider.issuer=https://login.example.org/realms/ide-cloud',
  '--set',
  'identityProvider.sessionClient.secret=secret-of-the-session-client',
];

type Manifest = k8s.KubernetesObject & Record<string, unknown>;

describe('Helm chart', function () {
  this.timeout(10 * 60_000);
  let cluster: TestCluster;
  let helmBin: string;
  let namespace: string;

  const helm = async (...args: string[]) =>
    (await run(helmBin, args, { env: { ...process.env, KUBECONFIG: cluster.kubeconfig }, maxBuffer: 32 << 20 })).stdout;
  const render = async (...args: string[]) =>
    YAML.parseAllDocuments(await helm('template', 'rel', chart, '--namespace', namespace, ...args))
      .map((doc) => doc.toJS() as Manifest | null)
      .filter((doc): doc is Manifest => doc !== null);

  before(async () => {
    [cluster, helmBin] = await Promise.all([
      useCluster(),
      ensureBinaries('helm').then((dir) => path.join(dir, 'helm')),
    ]);
    namespace = await createTestNamespace(cluster.kc, 'helm');
  });
  after(async () => deleteTestNamespace(cluster.kc, namespace));

  it('lints clean with the default values and with every option on', async () => {
    await helm('lint', '--strict', chart, ...ISSUER);
    await helm('lint', '--strict', chart, '-f', allOn);
  });

  it('defaults to the identity provider, and refuses anonymous mode with a landing page unless told it lets anyone act as any user', async () => {
    await assert.rejects(render(), /identityProvider.issuer is required/);
    const anonymous = ['--set', 'identityProvider.enabled=false'];
    await assert.rejects(render(...anonymous), /lets anyone act as any user/);
    const optedIn = await render(...anonymous, '--set', 'landingPage.letAnyoneActAsAnyUser=true');
    assert.ok(optedIn.some((d) => d.kind === 'Deployment' && d.metadata?.name === 'rel-ide-cloud-landing-page'));
    const noLandingPage = await render(...anonymous, '--set', 'landingPage.enabled=false');
    assert.ok(!noLandingPage.some((d) => d.kind === 'Deployment' && d.metadata?.name === 'rel-ide-cloud-landing-page'));
    const withIdentity = await render(...ISSUER);
    const service = withIdentity.find((d) => d.kind === 'Deployment' && d.metadata?.name === 'rel-ide-cloud-service');
    const env = (service?.spec as { template: { spec: k8s.V1PodSpec } }).template.spec.containers[0]!.env ?? [];
    assert.deepEqual(
      env.filter((e) => e.name.startsWith('IDENTITY_PROVIDER_ISSUER') || e.name === 'IDENTITY_PROVIDER_AUDIENCE'),
      [
        { name: 'IDENTITY_PROVIDER_ISSUER', value: 'https://login.example.org/realms/ide-cloud' },
        { name: 'IDENTITY_PROVIDER_AUDIENCE', value: 'ide-cloud' },
      ],
    );
  });

  it('has the service refuse unverified e-mails by default; taking them is an explicit value (issue 27, item 8)', async () => {
    const serviceConfig = async (...args: string[]) => {
      const manifests = await render(...ISSUER, ...args);
      const service = manifests.find((d) => d.kind === 'Deployment' && d.metadata?.name === 'rel-ide-cloud-service');
      const env: Record<string, string> = { SERVICE_AUTH_TOKEN: 'service-token-1', ADMIN_API_TOKEN: 'admin-token-1' };
      for (const e of (service?.spec as { template: { spec: k8s.V1PodSpec } }).template.spec.containers[0]!.env ?? [])
        if (e.value !== undefined) env[e.name] = e.value;
      return loadServiceConfig(env);
    };
    assert.equal((await serviceConfig()).identityProvider?.emailVerified, 'required');
    const optedOut = await serviceConfig('--set', 'identityProvider.emailVerified=ignored');
    assert.equal(optedOut.identityProvider?.emailVerified, 'ignored');
  });

  it('caps progress streams per client on the service and, with caps of its own, on the landing page (issue 27, item 5)', async () => {
    const manifests = await render(...ISSUER);
    const envOf = (name: string) => {
      const deployment = manifests.find((d) => d.kind === 'Deployment' && d.metadata?.name === name);
      const env: Record<string, string> = { SERVICE_AUTH_TOKEN: 'service-token-1', ADMIN_API_TOKEN: 'admin-token-1' };
      for (const e of (deployment?.spec as { template: { spec: k8s.V1PodSpec } }).template.spec.containers[0]!.env ??
        [])
        if (e.value !== undefined) env[e.name] = e.value;
      return env;
    };
    const service = loadServiceConfig(envOf('rel-ide-cloud-service'));
    assert.deepEqual(
      [
        service.progressStreamsPerUser,
        service.progressStreamsPerClient,
        service.progressStreamsTotal,
        service.trustProxy,
      ],
      [4, 250, 500, false],
    );
    const landing = envOf('rel-ide-cloud-landing-page');
    assert.deepEqual(
      [landing.PROGRESS_STREAMS_PER_CLIENT, landing.PROGRESS_STREAMS_TOTAL, landing.TRUST_PROXY],
      ['50', '200', '1'],
    );
    assert.ok(
      Number(landing.PROGRESS_STREAMS_TOTAL) < service.progressStreamsPerClient,
      "the page cannot fill the service's cap for one client",
    );
  });

  it('caps the workspaces of a user by service.workspacesPerUser (issue 27, item 1)', async () => {
    const workspacesPerUser = async (...args: string[]) => {
      const service = (await render(...ISSUER, ...args)).find(
        (d) => d.kind === 'Deployment' && d.metadata?.name === 'rel-ide-cloud-service',
      );
      const env = (service?.spec as { template: { spec: k8s.V1PodSpec } }).template.spec.containers[0]!.env ?? [];
      const value = env.find((e) => e.name === 'IDE_CLOUD_WORKSPACES_PER_USER')?.value;
      return loadServiceConfig({
        SERVICE_AUTH_TOKEN: 'service-token-1',
        ADMIN_API_TOKEN: 'admin-token-1',
        IDE_CLOUD_WORKSPACES_PER_USER: value,
      }).workspacesPerUser;
    };
    assert.equal(await workspacesPerUser(), 10);
    assert.equal(await workspacesPerUser('--set', 'service.workspacesPerUser=3'), 3);
  });

  it('renders the shipped app definitions with their landing-page visibility and the landing config from the same map', async () => {
    const docs = await render(...ISSUER);
    const appDefinitions = docs.filter((d) => d.kind === 'AppDefinition');
    assert.deepEqual(appDefinitions.map((d) => d.metadata?.name).sort(), [
      'c-latest',
      'c-templates-latest',
      'java-17-latest',
      'java-17-templates-latest',
      'javascript-latest',
      'ocaml-latest',
      'python-latest',
      'rust-latest',
    ]);
    const hidden = appDefinitions.filter((d) => d.metadata?.labels?.['ide-cloud.io/landing-page'] === 'hidden');
    assert.deepEqual(hidden.map((d) => d.metadata?.name).sort(), ['c-latest', 'java-17-latest']);
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.metadata?.name?.endsWith('landing-page'));
    const apps = JSON.parse((config?.data as Record<string, string>)['apps.json']!) as Array<{
      name: string;
      buildSystems: { id: string }[];
    }>;
    assert.deepEqual(apps.map((a) => a.name).sort(), [
      'c-templates-latest',
      'java-17-templates-latest',
      'javascript-latest',
      'ocaml-latest',
      'python-latest',
      'rust-latest',
    ]);
    assert.deepEqual(
      apps.find((a) => a.name === 'java-17-templates-latest')?.buildSystems.map((b) => b.id),
      ['maven', 'gradle'],
    );
    const java = appDefinitions.find((d) => d.metadata?.name === 'java-17-latest')?.spec as Record<string, unknown>;
    assert.equal(java.limitsMemory, '3000M', 'the Java override raises memory');
  });

  it("places the operator's session pods as operator.sessionPods says (the operator reads what the chart sets)", async () => {
    const operatorEnv = async (...args: string[]) => {
      const deployment = (await render(...args)).find(
        (m) => m.kind === 'Deployment' && m.metadata?.name === 'rel-ide-cloud-operator',
      ) as k8s.V1Deployment | undefined;
      assert.ok(deployment, 'the operator Deployment');
      const env: Record<string, string> = {};
      for (const e of deployment.spec!.template.spec!.containers[0]!.env ?? [])
        if (e.value !== undefined) env[e.name] = e.value;
      return loadOperatorConfig(env);
    };
    const placed = await operatorEnv('-f', allOn);
    assert.deepEqual(placed.sessionNodeSelector, { 'ide-cloud.example.org/ide': 'true' });
    assert.deepEqual(placed.sessionTolerations, [
      { key: 'ide-cloud.example.org/ide', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    assert.equal(placed.sessionImagePullPolicy, 'IfNotPresent');
    const unplaced = await operatorEnv(...ISSUER);
    assert.equal(unplaced.sessionNodeSelector, undefined);
    assert.equal(unplaced.sessionTolerations, undefined);
    assert.equal(unplaced.sessionImagePullPolicy, undefined);
  });

  it('puts operator.sessionPort into the session URLs and the sign-in redirect URL, never into the Ingress rule', async () => {
    const manifests = await render(
      ...ISSUER,
      '--set',
      'operator.sessionHost=ide.localhost',
      '--set',
      'operator.sessionScheme=http',
      '--set',
      'operator.sessionPort=8082',
    );
    const find = (kind: string, name: string) =>
      manifests.find((m) => m.kind === kind && m.metadata?.name === name) as unknown;
    const operator = find('Deployment', 'rel-ide-cloud-operator') as k8s.V1Deployment;
    const env: Record<string, string> = {};
    for (const e of operator.spec!.template.spec!.containers[0]!.env ?? [])
      if (e.value !== undefined) env[e.name] = e.value;
    assert.equal(loadOperatorConfig(env).sessionPort, 8082);
    const signIn = find('Deployment', 'rel-ide-cloud-session-sign-in') as k8s.V1Deployment;
    assert.ok(
      signIn.spec!.template.spec!.containers[0]!.args!.includes(
        '--redirect-url=http://ide.localhost:8082/oauth2/callback',
      ),
    );
    const ingress = find('Ingress', 'rel-ide-cloud-session-sign-in') as k8s.V1Ingress;
    assert.equal(ingress.spec!.rules![0]!.host, 'ide.localhost');
    const unported = (await render(...ISSUER)).find(
      (m) => m.kind === 'Deployment' && m.metadata?.name === 'rel-ide-cloud-operator',
    ) as k8s.V1Deployment;
    assert.ok(!unported.spec!.template.spec!.containers[0]!.env!.some((e) => e.name === 'IDE_CLOUD_SESSION_PORT'));
  });

  it('runs every container non-root with a read-only root file system and resource requests', async () => {
    for (const doc of await render('-f', allOn)) {
      const template = (doc.spec as { template?: { spec: k8s.V1PodSpec } } | undefined)?.template;
      if (!template) continue;
      for (const container of [...(template.spec.initContainers ?? []), ...template.spec.containers]) {
        const where = `${doc.kind}/${doc.metadata?.name}/${container.name}`;
        assert.equal(container.securityContext?.runAsNonRoot, true, where);
        assert.equal(container.securityContext?.readOnlyRootFilesystem, true, where);
        assert.ok(container.resources?.requests, `${where} has resource requests`);
      }
    }
  });

  it('is accepted by the API server (server-side dry-run) with the default values and with every option on', async () => {
    const objects = k8s.KubernetesObjectApi.makeApiClient(cluster.kc);
    const extensions = cluster.kc.makeApiClient(k8s.ApiextensionsV1Api);
    // The CRD a Prometheus Operator installation brings, so the ServiceMonitor can be checked too.
    await extensions
      .createCustomResourceDefinition({
        body: {
          metadata: { name: 'servicemonitors.monitoring.coreos.com' },
          spec: {
            group: 'monitoring.coreos.com',
            scope: 'Namespaced',
            names: { kind: 'ServiceMonitor', plural: 'servicemonitors', singular: 'servicemonitor' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
              },
            ],
          },
        },
      })
      .catch((error: unknown) => {
        if (!(error instanceof k8s.ApiException && error.code === 409)) throw error;
      });
    for (const args of [ISSUER, ['-f', allOn]]) {
      for (const doc of await render(...args)) {
        await objects
          .create({ ...doc, metadata: { ...doc.metadata, namespace } }, undefined, 'All')
          .catch((error: unknown) => {
            throw new Error(`${doc.kind}/${doc.metadata?.name} refused: ${(error as k8s.ApiException<string>).body}`);
          });
      }
    }
  });

  it('installs, keeps an admin PATCH of min/maxInstances and the tokens across an upgrade, and uninstalls leaving nothing', async () => {
    await helm('install', 'rel', chart, '--namespace', namespace, ...ISSUER);
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    const tokens = await core.readNamespacedSecret({ name: 'rel-ide-cloud-tokens', namespace });
    const decode = (key: string) => Buffer.from(tokens.data![key]!, 'base64').toString();
    assert.equal(decode('service-auth-token').length, 40);
    // The landing page's cookie key is its own: learning platforms hold the service auth token (appId).
    assert.equal(decode('landing-page-cookie-secret').length, 40);
    assert.notEqual(decode('landing-page-cookie-secret'), decode('service-auth-token'));
    const landing = await cluster.kc
      .makeApiClient(k8s.AppsV1Api)
      .readNamespacedDeployment({ name: 'rel-ide-cloud-landing-page', namespace });
    const cookieSecret = landing.spec?.template.spec?.containers[0]?.env?.find(
      (e) => e.name === 'LANDING_PAGE_COOKIE_SECRET',
    );
    assert.deepEqual(
      { ...cookieSecret?.valueFrom?.secretKeyRef },
      {
        name: 'rel-ide-cloud-tokens',
        key: 'landing-page-cookie-secret',
      },
    );

    // The admin PATCH through the real service, authenticated with the generated admin token.
    const service = await startService(
      parseServiceConfig({
        serviceAuthToken: decode('service-auth-token'),
        adminApiToken: decode('admin-api-token'),
        namespace,
        port: 0,
        host: '127.0.0.1',
        logLevel: 'silent',
      }),
      { kubeConfig: cluster.kc },
    );
    try {
      const response = await fetch(`${service.url}/service/admin/appdefinition/python-latest`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', 'x-admin-api-token': decode('admin-api-token') },
        body: JSON.stringify({ appId: decode('service-auth-token'), minInstances: 2, maxInstances: 7 }),
      });
      assert.equal(response.status, 200, await response.clone().text());
    } finally {
      await service.close();
    }

    await helm('upgrade', 'rel', chart, '--namespace', namespace, ...ISSUER, '--set', 'service.replicas=3');
    const { appDefinitions } = ideCloudResources(cluster.kc, namespace);
    const python = await appDefinitions.get('python-latest');
    assert.deepEqual([python.spec.minInstances, python.spec.maxInstances], [2, 7]);
    const rust = await appDefinitions.get('rust-latest');
    assert.deepEqual([rust.spec.minInstances, rust.spec.maxInstances], [0, 1000]);
    const after = await core.readNamespacedSecret({ name: 'rel-ide-cloud-tokens', namespace });
    assert.deepEqual(after.data, tokens.data, 'tokens survive the upgrade');
    const apps = cluster.kc.makeApiClient(k8s.AppsV1Api);

    // Removing an entry removes its AppDefinition (no new sessions of it); a running session stays.
    const { sessions } = ideCloudResources(cluster.kc, namespace);
    await sessions.create({
      metadata: { name: 'running-ocaml' },
      spec: { user: 'ada@example.org', appDefinition: 'ocaml-latest' },
    });
    await helm(
      'upgrade',
      'rel',
      chart,
      '--namespace',
      namespace,
      '--reuse-values',
      '--set',
      'appDefinitions.apps.ocaml-latest=null',
    );
    assert.equal(await appDefinitions.find('ocaml-latest'), undefined);
    assert.ok(await sessions.find('running-ocaml'), 'the running session is left alone');
    await sessions.delete('running-ocaml');
    assert.equal((await apps.readNamespacedDeployment({ name: 'rel-ide-cloud-service', namespace })).spec?.replicas, 3);

    await helm('uninstall', 'rel', '--namespace', namespace, '--wait');
    const selector = 'app.kubernetes.io/instance=rel';
    const leftovers = [
      ...(await appDefinitions.list(selector)),
      ...(await apps.listNamespacedDeployment({ namespace, labelSelector: selector })).items,
      ...(await apps.listNamespacedDaemonSet({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedSecret({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedService({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedServiceAccount({ namespace, labelSelector: selector })).items,
      ...(await core.listNamespacedResourceQuota({ namespace, labelSelector: selector })).items,
    ];
    assert.deepEqual(
      leftovers.map((o) => o.metadata?.name),
      [],
    );
  });

  describe('RBAC of the service accounts', () => {
    before(async () => {
      await helm(
        'install',
        'rbac',
        chart,
        '--namespace',
        namespace,
        ...ISSUER,
        '--set',
        'imagePreloading.enabled=false',
        '--set',
        'appDefinitions.apps.python-latest.minInstances=1',
      );
    });

    /** A client that authenticates as the chart's service account, with a token from the TokenRequest API. */
    async function asServiceAccount(account: string): Promise<k8s.KubeConfig> {
      const name = `rbac-ide-cloud-${account}`;
      const request = await cluster.kc.makeApiClient(k8s.CoreV1Api).createNamespacedServiceAccountToken({
        name,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const kc = new k8s.KubeConfig();
      kc.loadFromOptions({
        clusters: [cluster.kc.getCurrentCluster()!],
        users: [{ name, token: request.status!.token }],
        contexts: [{ name, cluster: cluster.kc.getCurrentCluster()!.name, user: name }],
        currentContext: name,
      });
      return kc;
    }

    it('is enough for the real operator and service: eager and lazy launches end to end under the accounts', async () => {
      const operator = await testOperator(await asServiceAccount('operator'), namespace, { eagerStart: true });
      const service = await startTestService(await asServiceAccount('service'), namespace);
      try {
        // The warm pool fills under the operator's account first.
        const { appDefinitions } = ideCloudResources(cluster.kc, namespace);
        await eventually(async () => {
          assert.equal((await appDefinitions.get('python-latest')).status?.pool?.ready, 1);
        }, 60_000);
        for (const [user, appDefinition] of [
          ['ada@example.org', 'python-latest'],
          ['bob@example.org', 'rust-latest'],
        ]) {
          const launch = await call(service.url, 'POST', '/service', {
            body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition, ephemeral: true, timeout: 1 },
          });
          assert.equal(launch.status, 200, launch.text);
          assert.match(launch.text, /^https?:\/\//);
          const sessions = await call(service.url, 'GET', `/service/session/${SERVICE_AUTH_TOKEN}/${user}`);
          const [session] = sessions.json as Array<{ name: string; startStrategy: string }>;
          assert.equal(session?.startStrategy, appDefinition === 'python-latest' ? 'eager' : 'lazy-fallback');
          const stop = await call(service.url, 'DELETE', '/service/session', {
            body: { appId: SERVICE_AUTH_TOKEN, user, sessionName: session!.name },
          });
          assert.equal(stop.status, 200, stop.text);
        }
      } finally {
        await service.close();
        await operator.stop();
      }
    });
    after(async () => {
      await helm('uninstall', 'rbac', '--namespace', namespace).catch(() => undefined);
    });

    // [account, verb, group, resource, namespace ('' = cluster-wide; undefined = the release's), subresource?, allowed]
    const table: Array<[string, string, string, string, string | undefined, string | undefined, boolean]> = [
      ['operator', 'create', 'apps', 'deployments', undefined, undefined, true],
      ['operator', 'patch', 'ide.cloud', 'sessions', undefined, 'status', true],
      ['operator', 'watch', 'ide.cloud', 'appdefinitions', undefined, undefined, true],
      ['operator', 'update', 'networking.k8s.io', 'ingresses', undefined, undefined, true],
      ['operator', 'create', 'coordination.k8s.io', 'leases', undefined, undefined, true],
      // The warm instances' reservations: watched, claimed by an update, deleted with their instance.
      ['operator', 'watch', 'coordination.k8s.io', 'leases', undefined, undefined, true],
      ['operator', 'update', 'coordination.k8s.io', 'leases', undefined, undefined, true],
      ['operator', 'delete', 'coordination.k8s.io', 'leases', undefined, undefined, true],
      ['operator', 'watch', 'coordination.k8s.io', 'leases', 'kube-system', undefined, false],
      ['operator', 'create', '', 'persistentvolumeclaims', undefined, undefined, true],
      // The binder pods of standby claims; pods elsewhere are not the operator's.
      ['operator', 'create', '', 'pods', undefined, undefined, true],
      ['operator', 'delete', '', 'pods', undefined, undefined, true],
      ['operator', 'create', '', 'pods', 'kube-system', undefined, false],
      ['operator', 'create', '', 'pods', undefined, 'exec', false],
      ['operator', 'get', '', 'secrets', undefined, undefined, true],
      // Lazy sessions' values and warm instances' bridge tokens: Secrets by name; never listed or watched.
      ['operator', 'create', '', 'secrets', undefined, undefined, true],
      ['operator', 'patch', '', 'secrets', undefined, undefined, true],
      // A warm instance's data-bridge token goes with the instance.
      ['operator', 'delete', '', 'secrets', undefined, undefined, true],
      ['operator', 'delete', '', 'secrets', 'kube-system', undefined, false],
      ['operator', 'list', '', 'secrets', undefined, undefined, false],
      ['operator', 'watch', '', 'secrets', undefined, undefined, false],
      ['operator', 'create', '', 'secrets', 'kube-system', undefined, false],
      ['operator', 'list', '', 'secrets', '', undefined, false],
      ['operator', 'get', '', 'secrets', 'kube-system', undefined, false],
      ['operator', 'create', 'apps', 'deployments', 'kube-system', undefined, false],
      ['operator', 'delete', '', 'nodes', '', undefined, false],
      ['service', 'create', 'ide.cloud', 'sessions', undefined, undefined, true],
      ['service', 'patch', 'ide.cloud', 'appdefinitions', undefined, undefined, true],
      ['service', 'patch', 'ide.cloud', 'sessions', undefined, 'status', true],
      // The unanswered mark of a launch's session, cleared before its URL is answered.
      ['service', 'patch', 'ide.cloud', 'sessions', undefined, undefined, true],
      ['service', 'patch', 'ide.cloud', 'workspaces', undefined, undefined, false],
      ['service', 'list', 'metrics.k8s.io', 'pods', undefined, undefined, true],
      ['service', 'create', 'apps', 'deployments', undefined, undefined, false],
      // By name only: the metadata of a secret a launch names (env.fromSecrets), to check its mark.
      ['service', 'get', '', 'secrets', undefined, undefined, true],
      ['service', 'list', '', 'secrets', undefined, undefined, false],
      ['service', 'list', '', 'secrets', '', undefined, false],
      ['service', 'watch', '', 'secrets', undefined, undefined, false],
      ['service', 'get', '', 'secrets', 'kube-system', undefined, false],
      ['service', 'delete', 'ide.cloud', 'appdefinitions', undefined, undefined, false],
    ];
    for (const [account, verb, group, resource, ns, subresource, allowed] of table) {
      const where = ns === '' ? 'cluster-wide' : (ns ?? 'in its namespace');
      it(`${account} ${allowed ? 'can' : 'cannot'} ${verb} ${group || 'core'}/${resource}${subresource ? `/${subresource}` : ''} ${where}`, async () => {
        const review = await cluster.kc.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
          body: {
            spec: {
              user: `system:serviceaccount:${namespace}:rbac-ide-cloud-${account}`,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
              resourceAttributes: { verb, group, resource, subresource, namespace: ns ?? namespace },
            },
          },
        });
        assert.equal(review.status?.allowed ?? false, allowed);
      });
    }
  });
});

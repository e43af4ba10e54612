// npm start: IDE Cloud on the local control plane. Starts etcd, kube-apiserver, the controller
// manager, the scheduler and kwok, applies the CRDs and the chart's app definitions, and runs the
// operator (eager start on) and the REST service in this process. Ctrl-C stops everything it started.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { pino } from 'pino';
import { loadKubeConfig } from '../server/src/kube/client.js';
import { ideCloudResources } from '../server/src/kube/resources.js';
import type { AppDefinitionSpecInput } from '../server/src/model/app-definition.js';
import { deepLink, parseLandingConfig, startLandingPage, type LandingApp } from '../server/src/landing/index.js';
import { startOperator } from '../server/src/operator/index.js';
import { parseServiceConfig, startService } from '../server/src/service/index.js';
import { ensureBinaries, startControlPlane, stopControlPlane } from './cluster/control-plane.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = process.env.IDE_CLOUD_CLUSTER_DIR ?? path.join(root, '.cluster', 'start');
const namespace = process.env.IDE_CLOUD_NAMESPACE ?? 'ide-cloud';
const port = Number(process.env.PORT ?? 8080);
// One definition keeps a warm pool, so a newcomer sees both start strategies (eager and lazy).
const WARM = 'python-latest';

const cleanups: Array<() => Promise<unknown>> = [];
let stopping = false;
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.error('stopping…');
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));

/** Renders one template of the Helm chart, by helm itself: the chart is the one source of both. */
async function renderChart(template: string, ...set: string[]): Promise<string> {
  const helm = path.join(await ensureBinaries('helm'), 'helm');
  const args = ['template', 'dev', path.join(root, 'charts', 'ide-cloud'), '--show-only', `templates/${template}`];
  // npm start is anonymous on loopback: nobody but this machine's user reaches it.
  set.push('identityProvider.enabled=false', 'landingPage.letAnyoneActAsAnyUser=true');
  const { stdout } = await run(helm, [...args, ...set.flatMap((value) => ['--set', value])]);
  return stdout;
}

async function chartAppDefinitions(): Promise<AppDefinitionSpecInput[]> {
  const stdout = await renderChart('app-definitions.yaml', `appDefinitions.apps.${WARM}.minInstances=2`);
  return YAML.parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as { spec: AppDefinitionSpecInput } | null)
    .filter((doc) => doc !== null)
    .map((doc) => doc!.spec);
}

async function chartLandingApps(): Promise<LandingApp[]> {
  const config = YAML.parse(await renderChart('landing-page-config.yaml')) as { data: Record<string, string> };
  return JSON.parse(config.data['apps.json']!) as LandingApp[];
}

try {
  // Stopping a control plane that never started is a no-op; one that half started is stopped.
  cleanups.push(() => stopControlPlane(dir));
  const [state, definitions, landingApps] = await Promise.all([
    // Tied to this process: a killed npm start leaves no control plane behind.
    startControlPlane(dir, { tiedToThisProcess: true }),
    chartAppDefinitions(),
    chartLandingApps(),
  ]);

  const kc = loadKubeConfig(state.kubeconfig);
  await kc
    .makeApiClient(k8s.CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } })
    .catch((error: unknown) => {
      if (!(error instanceof k8s.ApiException && error.code === 409)) throw error;
    });
  const { appDefinitions } = ideCloudResources(kc, namespace);
  for (const spec of definitions) await appDefinitions.apply(spec.name, { spec });

  const operator = await startOperator(
    { namespace, eagerStart: true },
    { kubeConfig: kc, logger: pino({ level: process.env.LOG_LEVEL ?? 'info' }) },
  );
  cleanups.push(() => operator.stop());

  const serviceAuthToken = process.env.SERVICE_AUTH_TOKEN ?? randomBytes(16).toString('hex');
  const adminApiToken = process.env.ADMIN_API_TOKEN ?? randomBytes(16).toString('hex');
  const service = await startService(
    parseServiceConfig({ serviceAuthToken, adminApiToken, namespace, port, host: '127.0.0.1' }),
    { kubeConfig: kc },
  );
  cleanups.push(() => service.close());

  const landing = await startLandingPage(
    parseLandingConfig({
      serviceUrl: service.url,
      serviceAuthToken,
      apps: landingApps,
      port: Number(process.env.LANDING_PORT ?? port + 1),
      host: '127.0.0.1',
    }),
  );
  cleanups.push(() => landing.close());
  const example = deepLink(`${landing.url}/`, {
    appDef: WARM,
    gitUri: 'https://git.example.org/course/exercise.git',
    gitUser: 'student',
    gitMail: 'student@example.org',
    platformToken: 'example-token',
    user: 'student@example.org',
  });

  console.log(`\nIDE Cloud runs in namespace ${namespace} (anonymous mode; ${WARM} keeps a warm pool of 2).`);
  console.log(`KUBECONFIG=${state.kubeconfig}`);
  console.log(`SERVICE_URL=${service.url}`);
  console.log(`SERVICE_AUTH_TOKEN=${serviceAuthToken}`);
  console.log(`ADMIN_API_TOKEN=${adminApiToken}`);
  console.log(`LANDING_PAGE_URL=${landing.url}`);
  console.log(`Try a deep link: ${example}`);
  console.log('Ctrl-C stops everything.');
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  await stop(1);
}

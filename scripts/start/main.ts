// npm start [-- --fake-pods]: IDE Cloud on this machine, ready to open in a browser.
//
// Starts the local control plane (etcd, kube-apiserver, the controller manager, the scheduler and kwok)
// and, where the machine allows it (scripts/cluster/real-node.ts: Linux, root, Debian's packages), a real
// node beside it: kubelet, containerd, Traefik on a loopback port, local-path-provisioner (no kube-router:
// it applies no NetworkPolicy).
// Applies the CRDs and the chart's app definitions and runs the operator (eager start on), the REST
// service and the landing page in this process, anonymous on loopback. The printed deep link needs
// nothing from outside: a sample course repository is served by a git server here (smart HTTP, its
// credential in the URL, as a course's would be); the session host `ide.localhost` resolves to loopback
// in browsers without any lookup (RFC 6761), where Traefik serves it; the images of the link's app
// definition are built here once (builds.ts) and kept on the node, which keeps a warm pool of it.
// Without a real node (or with --fake-pods) sessions run on kwok's fake pods: the API works, no IDE opens.
//
// Ctrl-C, SIGTERM and SIGHUP stop everything it started; so does SIGKILL of npm alone (this process
// watches it) or of all its processes (the control plane's watchdog: control-plane.ts,
// tiedToThisProcess; builds end with their caller: scripts/cluster/end-with-caller.sh).
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { pino } from 'pino';
import { loadKubeConfig } from '../../server/src/kube/client.js';
import { Informer } from '../../server/src/kube/informer.js';
import { ideCloudResources } from '../../server/src/kube/resources.js';
import { API_VERSION } from '../../server/src/model/api-group.js';
import type { AppDefinition, AppDefinitionSpecInput } from '../../server/src/model/app-definition.js';
import { deepLink, parseLandingConfig, startLandingPage, type LandingApp } from '../../server/src/landing/index.js';
import { startOperator, type OperatorConfigInput } from '../../server/src/operator/index.js';
import { parseServiceConfig, startService } from '../../server/src/service/index.js';
import { ensureBinaries, startControlPlane, stopControlPlane } from '../cluster/control-plane.js';
import { ancestorNamed, isAlive } from '../cluster/processes.js';
import {
  decideNodes,
  importImage,
  REAL_NODE_INGRESS_CLASS,
  REAL_NODE_IP,
  REAL_NODE_PLACEMENT,
  readNodeState,
} from '../cluster/real-node.js';
import { buildWhatTheModeNeeds } from './builds.js';
import { startGitServer } from './git-server.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = process.env.IDE_CLOUD_CLUSTER_DIR ?? path.join(root, '.cluster', 'start');
const namespace = process.env.IDE_CLOUD_NAMESPACE ?? 'ide-cloud';
const port = Number(process.env.PORT ?? 8080);
const landingPort = Number(process.env.LANDING_PORT ?? port + 1);
/** Where Traefik serves the session host on loopback (real node only). */
const ingressPort = Number(process.env.INGRESS_PORT ?? port + 2);
/** The app definition of the printed deep link: it keeps a warm pool, so the link starts eagerly. */
const WARM = 'javascript-latest';
const WARM_INSTANCES = 2;
/** Its image (the chart's `ide-cloud/session-javascript`), built by scripts/images/build.sh. */
const WARM_IMAGE = 'session-javascript';
/** Resolves to loopback in every browser without a lookup (RFC 6761), and is a secure context there. */
const SESSION_HOST = 'ide.localhost';
const SAMPLE_REPOSITORY = 'course/exercise-1.git';
const SAMPLE_FILES = {
  'README.md': '# Exercise 1\n\nMake `greet` in `src/greet.js` greet by name, then run `npm test`.\n',
  'package.json': `${JSON.stringify({ name: 'exercise-1', private: true, scripts: { test: 'node --test' } }, null, 2)}\n`,
  'src/greet.js': "export function greet(name) {\n  return 'Hello';\n}\n",
  'test/greet.test.js':
    "import assert from 'node:assert/strict';\nimport test from 'node:test';\nimport { greet } from '../src/greet.js';\n\n" +
    "test('greets by name', () => assert.equal(greet('Ada'), 'Hello, Ada!'));\n",
};

const say = (line: string): void => console.log(line);
const cleanups: Array<() => Promise<unknown>> = [];
/** The control plane's start while it runs: a stop waits for it, so that it stops everything it started. */
let starting: Promise<unknown> | undefined;
let stopping = false;
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    console.error('stopping…');
    await starting?.catch(() => undefined);
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));
// npm runs this through a shell and tsx, which outlive npm when only npm is killed: so does this
// process, unless it watches npm (no process event tells a child its grandparent ended).
const npm = ancestorNamed('npm');
if (npm) setInterval(() => isAlive(npm) || void stop(0), 1000).unref();

/** Renders one template of the Helm chart, by helm itself: the chart is the one source of both. */
async function renderChart(template: string, ...set: string[]): Promise<unknown[]> {
  const helm = path.join(await ensureBinaries('helm'), 'helm');
  const args = ['template', 'dev', path.join(root, 'charts', 'ide-cloud'), '--show-only', `templates/${template}`];
  // npm start is anonymous on loopback: nobody but this machine's user reaches it.
  set.push('identityProvider.enabled=false', 'landingPage.letAnyoneActAsAnyUser=true');
  const { stdout } = await run(helm, [...args, ...set.flatMap((value) => ['--set', value])]);
  return YAML.parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as unknown)
    .filter((doc) => doc !== null);
}

async function chartParts(): Promise<{
  definitions: AppDefinitionSpecInput[];
  apps: LandingApp[];
  secret: k8s.V1Secret;
}> {
  const [definitions, [config], secrets] = await Promise.all([
    renderChart('app-definitions.yaml', `appDefinitions.apps.${WARM}.minInstances=${WARM_INSTANCES}`),
    renderChart('landing-page-config.yaml'),
    renderChart('secrets.yaml'),
  ]);
  // The session proxies' cookie key (the one Secret of the chart sessions need in anonymous mode).
  const secret = (secrets as k8s.V1Secret[]).find((s) => s.data?.['cookie-secret'] !== undefined)!;
  return {
    definitions: (definitions as { spec: AppDefinitionSpecInput }[]).map((doc) => doc.spec),
    apps: JSON.parse((config as { data: Record<string, string> }).data['apps.json']!) as LandingApp[],
    secret,
  };
}

/**
 * Waits until the app definition's warm pool has its free instances ready (its Ready condition),
 * saying how far it is; past `timeoutMs` it says why not and goes on (the link then starts lazily).
 */
async function warmPoolReady(kc: k8s.KubeConfig, name: string, timeoutMs: number): Promise<void> {
  const informer = new Informer<AppDefinition>(kc, {
    path: ideCloudResources(kc, namespace).appDefinitions.path,
    apiVersion: API_VERSION,
    kind: 'AppDefinition',
    namespace,
    fieldSelector: `metadata.name=${name}`,
    rewatchIntervalMs: 300_000,
  });
  let last = '';
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        say(`[start] the warm pool of ${name} is not ready after ${timeoutMs / 60_000} min (${last}): going on`);
        resolve();
      }, timeoutMs);
      informer.on((_type, definition) => {
        const pool = definition.status?.pool;
        const ready = definition.status?.conditions?.find((c) => c.type === 'Ready');
        const progress = pool
          ? `${pool.ready} of ${pool.desired} ready${ready?.message ? `: ${ready.message}` : ''}`
          : 'starting';
        if (progress !== last) say(`[start] warm pool of ${name}: ${(last = progress)}`);
        if (ready?.status === 'True') resolve();
      });
      informer.start();
    });
  } finally {
    clearTimeout(timer);
    await informer.stop();
  }
}

/** Whether nothing listens on `port` of loopback now. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

try {
  const started = Date.now();
  const { realNode, notice } = await decideNodes(process.argv.slice(2));
  if (notice) say(notice);
  // Found taken only once the node runs, the ingress port would fail the start late and obscurely.
  if (realNode && !(await portIsFree(ingressPort)))
    throw new Error(`INGRESS_PORT ${ingressPort} is taken: set INGRESS_PORT to a free port`);
  const archives = await buildWhatTheModeNeeds(realNode, ['auth-proxy', WARM_IMAGE], say);

  say(`[start] the control plane${realNode ? ' and the real node' : ''}`);
  // Stopping a control plane that never started is a no-op; one that half started is stopped.
  cleanups.push(() => stopControlPlane(dir));
  // Tied to this process: a killed npm start leaves no control plane (and no real node) behind.
  starting = startControlPlane(dir, { tiedToThisProcess: true, realNode, networkPolicies: false, ingressPort });
  const [state, chart] = await Promise.all([starting as ReturnType<typeof startControlPlane>, chartParts()]);
  starting = undefined;
  const node = state.realNode ? await readNodeState(state.realNode) : undefined;
  // Settled, never rejected: a stop may end containerd under the imports.
  const imported = Promise.allSettled(node ? archives.map((archive) => importImage(node, archive)) : []);

  const kc = loadKubeConfig(state.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((error: unknown) => {
    if (!(error instanceof k8s.ApiException && error.code === 409)) throw error;
  });
  await core.createNamespacedSecret({
    namespace,
    body: { ...chart.secret, metadata: { name: chart.secret.metadata!.name } },
  });

  // The sample course, where the session pods reach this machine (the node's bridge) or on loopback.
  const gitPassword = randomBytes(12).toString('hex');
  const git = await startGitServer({
    users: { student: gitPassword },
    host: node ? REAL_NODE_IP : '127.0.0.1',
    root: path.join(dir, 'git'),
  });
  cleanups.push(() => git.close());
  await git.createRepository(SAMPLE_REPOSITORY, { files: SAMPLE_FILES });

  const { appDefinitions } = ideCloudResources(kc, namespace);
  for (const spec of chart.definitions) await appDefinitions.apply(spec.name, { spec });
  for (const result of await imported) if (result.status === 'rejected') throw result.reason;

  const onTheNode: Partial<OperatorConfigInput> = node
    ? {
        sessionHost: SESSION_HOST,
        sessionPort: ingressPort,
        ingressClassName: REAL_NODE_INGRESS_CLASS,
        // The URL is handed over once Traefik serves its route: no 404 in the student's browser.
        routeCheckUrl: `http://127.0.0.1:${ingressPort}`,
        sessionNodeSelector: REAL_NODE_PLACEMENT.nodeSelector,
        sessionTolerations: REAL_NODE_PLACEMENT.tolerations,
        // Images are built here and loaded onto the node: one that is missing fails the launch at once.
        sessionImagePullPolicy: 'Never',
        missingImageHint: 'build it and load it onto the node with `npm run cluster -- image {image}`',
      }
    : {};
  const operator = await startOperator(
    { namespace, eagerStart: true, authProxySecretName: chart.secret.metadata!.name, ...onTheNode },
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
      apps: chart.apps,
      port: landingPort,
      host: '127.0.0.1',
    }),
  );
  cleanups.push(() => landing.close());
  if (node) await warmPoolReady(kc, WARM, 10 * 60_000);
  const landingUrl = `http://localhost:${landing.port}`;
  const example = deepLink(`${landingUrl}/`, {
    appDef: WARM,
    gitUri: git.urlWithCredentials(SAMPLE_REPOSITORY, 'student', gitPassword),
    gitUser: 'Student',
    gitMail: 'student@example.org',
    // What a course sends for its platform's API; the sample clones with the URL's credential instead.
    platformToken: randomBytes(12).toString('hex'),
    user: 'student@example.org',
  });

  say(
    `\nIDE Cloud runs in namespace ${namespace} (anonymous mode; ${WARM} keeps a warm pool of ${WARM_INSTANCES}` +
      `${node ? ' on the real node' : ' on fake pods'}), started in ${Math.round((Date.now() - started) / 1000)} s.`,
  );
  say(`KUBECONFIG=${state.kubeconfig}`);
  say(`SERVICE_URL=${service.url}`);
  say(`SERVICE_AUTH_TOKEN=${serviceAuthToken}`);
  say(`ADMIN_API_TOKEN=${adminApiToken}`);
  say(`LANDING_PAGE_URL=${landingUrl}`);
  if (node) say(`Sessions: http://${SESSION_HOST}:${ingressPort}/<session>/<key>/ (Traefik on 127.0.0.1)`);
  say(`Try a deep link: ${example}`);
  say('Ctrl-C stops everything.');
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  await stop(1);
}

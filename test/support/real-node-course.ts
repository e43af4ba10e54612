// A course on the real node, as the end-to-end suite and the benchmark's click-to-code scenario meet it:
// a git server with the exercise, the stand-in learning platform and a real OpenID Connect provider on
// the host; the REST service and the landing page on the host, the landing page routed through Traefik
// as a platform's Ingress would; the chart's sign-in proxy of the session host and the session pods on
// the real node; the operator on the host. The caller starts the operator and the service (in process
// for the suites' log assertions, as their own processes for the benchmark).
//
// Topology: pods have no cluster DNS and no kube-proxy, so the host's parts listen on REAL_NODE_IP, the
// node's bridge address, which the pods and the browser both reach; the issuer names it, so the
// browser and the pods' proxies see the same issuer. The student's browser reaches the landing page
// and the sessions at `*.localhost` names on Traefik's loopback port: Chromium resolves every
// `*.localhost` name to loopback and treats it as a secure context, as an installation's https is.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import YAML from 'yaml';
import { ensureBinaries, stopControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import {
  REAL_NODE_INGRESS_CLASS,
  REAL_NODE_IP,
  REAL_NODE_PLACEMENT,
  sandboxImage,
  type RealNodeState,
} from '../../scripts/cluster/real-node.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import {
  parseLandingConfig,
  startLandingPage,
  type LandingApp,
  type RunningLandingPage,
} from '../../server/src/landing/index.js';
import type { OperatorConfigInput } from '../../server/src/operator/index.js';
import { launchBrowser } from './browser.js';
import { eventually } from './kube.js';
import { logSink } from './landing.js';
import { startLearningPlatform, type LearningPlatform } from './learning-platform.js';
import { AUDIENCE } from './oidc.js';
import { listenLoginProvider, type LoginProvider } from './oidc-login.js';
import { createAppDefinition, ideCloudResources } from './operator.js';
import { borrowSharedRealNode, seconds, shipImage, startRealNodeCluster } from './real-node.js';
import { SERVICE_AUTH_TOKEN } from './service-harness.js';

export const COURSE_NAMESPACE = 'ide-cloud';
export const SESSION_HOST = 'ide.localhost';
/** Where students reach the landing page: a platform's Ingress, through Traefik, to the host process. */
export const LANDING_HOST = 'ide-cloud.localhost';
export const SESSION_IMAGE = 'ide-cloud/session-javascript:latest';
export const REPOSITORY = 'course/exercise-1.git';
export const EXERCISE_FILES = {
  'README.md': '# Exercise 1\n\nMake `npm test` pass.\n',
  'src/index.js': 'console.log("hello");\n',
};
/** The size of a student's browser window (the screenshots of the first screen). */
export const STUDENT_VIEWPORT = { width: 1280, height: 800 };
/** The repository's top level, as the explorer shows it. */
export const TOP_LEVEL = ['README.md', 'src'];
const CHART = path.resolve(import.meta.dirname, '..', '..', 'charts', 'ide-cloud');
const run = promisify(execFile);

export interface CourseApp {
  name: string;
  label: string;
  minInstances: number;
  maxInstances: number;
}

/** What the operator needs to serve this course; the caller adds its own settings and starts it. */
export type CourseOperatorSettings = Partial<OperatorConfigInput>;

export interface CourseOptions {
  /** Names the temporary directory. */
  suite: string;
  /**
   * On the real node the suites share (borrowSharedRealNode), given back at `stop` without the course's
   * namespace; otherwise a node of its own (the benchmark's), stopped at `stop`.
   */
  sharedNode?: boolean;
  apps: CourseApp[];
  /** Starts the service against the course's control plane with the course's identity provider. */
  startService(
    cluster: { kc: k8s.KubeConfig; kubeconfig: string },
    identityProvider: { issuer: string; audience: string },
  ): Promise<{ url: string; close(): Promise<void> }>;
  /** Starts the operator with the course's `settings` (on top of the caller's own). */
  startOperator(
    cluster: { kc: k8s.KubeConfig; kubeconfig: string },
    settings: CourseOperatorSettings,
  ): Promise<{ stop(): Promise<void> }>;
  /** Empty claims the operator keeps bound for lazy starts of new workspaces (its standbyClaims); default none. */
  standbyClaims?: number;
  /** Each start-up step's seconds. */
  timings: string[];
  /** A sink for the landing page's log lines (the suites search them for secrets). */
  landingLog?: ReturnType<typeof logSink>;
}

export interface Course {
  state: ControlPlaneState;
  node: RealNodeState;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  r: IdeCloudResources;
  git: GitServer;
  platform: LearningPlatform;
  idp: LoginProvider;
  landing: RunningLandingPage;
  browser: Browser;
  /** `http://ide.localhost:<port>` and `http://ide-cloud.localhost:<port>`. */
  sessionOrigin: string;
  landingOrigin: string;
  gitPassword: string;
  platformToken: string;
  /** Every secret the course made, for the searches of logs and files. */
  secrets: string[];
  repoUrl: string;
  /** The exercise's URL with the student's credential, as the platform puts it in a deep link. */
  gitUri: string;
  /** The deep link the course page's "open in IDE" button is. */
  deepLink(app: string, student: { gitUser: string; gitMail: string }): string;
  /** GET through Traefik with `host` (node:http: fetch does not send a Host of its own). */
  viaIngress(host: string, pathAndQuery: string): Promise<{ status: number; location?: string; body: string }>;
  /** A browser context that reaches only the course's hosts; `held` session URLs are answered here. */
  studentContext(hold?: { sessionUrls?: string[] }): Promise<{ context: BrowserContext; blocked: string[] }>;
  allowOnly(context: BrowserContext, blocked: string[], held?: string[]): Promise<void>;
  /** Signs in on the provider's development forms (login, then consent) when the page shows them. */
  signInIfAsked(page: Page, email: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startCourse(options: CourseOptions): Promise<Course> {
  const { timings } = options;
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    return await start();
  } catch (error) {
    await stop();
    throw error;
  }

  async function borrowedNode() {
    const { cluster, giveBack } = await borrowSharedRealNode();
    cleanups.push(giveBack);
    return cluster;
  }

  async function ownNode() {
    const cluster = await startRealNodeCluster(options.suite);
    cleanups.push(async () => {
      await stopControlPlane(cluster.state.dir);
      // The course's directory: the control plane's was in it, and the workspaces' volumes.
      await rm(path.dirname(cluster.state.dir), { recursive: true, force: true });
    });
    return cluster;
  }

  async function start(): Promise<Course> {
    let since = Date.now();
    const { state, node, kc, core } = await (options.sharedNode ? borrowedNode() : ownNode());
    timings.push(`control plane with the real node${options.sharedNode ? ' (shared)' : ''} ${seconds(since)}`);
    for (const target of ['auth-proxy', 'session-javascript'] as const) await shipImage(node, target, timings);
    since = Date.now();
    await core.createNamespace({ body: { metadata: { name: COURSE_NAMESPACE } } });
    const r = ideCloudResources(kc, COURSE_NAMESPACE);
    const ingressPort = Number(new URL(node.ingressUrl).port);
    const sessionOrigin = `http://${SESSION_HOST}:${ingressPort}`;
    const landingOrigin = `http://${LANDING_HOST}:${ingressPort}`;
    const sessionClientSecret = `sessions-${randomUUID()}`;
    const gitPassword = `git-pw-${randomUUID()}`;
    const platformToken = `lms-${randomUUID()}`;

    // The host's parts, where the pods reach them: the node's bridge address.
    const git = await startGitServer({ users: { student: gitPassword }, host: REAL_NODE_IP });
    cleanups.push(() => git.close());
    const repoUrl = await git.createRepository(REPOSITORY, { files: EXERCISE_FILES });
    const platform = await startLearningPlatform(REAL_NODE_IP);
    cleanups.push(() => platform.close());
    platform.validTokens.add(platformToken);
    const idp = await listenLoginProvider({ host: REAL_NODE_IP });
    cleanups.push(() => idp.close());
    const cluster = { kc, kubeconfig: state.kubeconfig };
    const service = await options.startService(cluster, { issuer: idp.issuer, audience: idp.audience });
    cleanups.push(() => service.close());
    const apps: LandingApp[] = options.apps.map(({ name, label }) => ({ name, label, buildSystems: [] }));
    const landing = await startLandingPage(
      parseLandingConfig({
        serviceUrl: service.url,
        serviceAuthToken: SERVICE_AUTH_TOKEN,
        apps,
        identityProvider: { issuer: idp.issuer, clientId: 'ide-cloud-landing-page', scope: idp.scope },
        port: 0,
        host: REAL_NODE_IP,
        logLevel: 'info',
      }),
      { logDestination: (options.landingLog ?? logSink()).stream },
    );
    cleanups.push(() => landing.close());
    // Served before any proxy starts: oauth2-proxy reads the provider's discovery document at start.
    await idp.start([
      { clientId: 'ide-cloud-landing-page', redirectUris: [`${landingOrigin}/`] },
      {
        clientId: 'ide-cloud-sessions',
        redirectUris: [`${sessionOrigin}/oauth2/callback`],
        secret: sessionClientSecret,
      },
    ]);

    const viaIngress: Course['viaIngress'] = (host, pathAndQuery) =>
      new Promise((resolve, reject) => {
        http
          .get(
            `${node.ingressUrl}${pathAndQuery}`,
            { headers: { Host: host, Accept: 'text/html' }, timeout: 10_000 },
            (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
            },
          )
          .on('error', reject)
          .on('timeout', function (this: http.ClientRequest) {
            this.destroy(new Error('timeout'));
          });
      });

    await installSessionSignIn({ kc, core, idp, sessionClientSecret, ingressPort });
    await routeLandingPage({ kc, core, port: Number(new URL(landing.url).port), viaIngress });
    for (const { name, minInstances, maxInstances } of options.apps)
      await createAppDefinition(r, name, { image: SESSION_IMAGE, minInstances, maxInstances });
    const operator = await options.startOperator(cluster, {
      namespace: COURSE_NAMESPACE,
      eagerStart: true,
      sessionHost: SESSION_HOST,
      sessionPort: ingressPort,
      sessionScheme: 'http',
      ingressClassName: REAL_NODE_INGRESS_CLASS,
      routeCheckUrl: node.ingressUrl,
      sessionIssuer: idp.issuer,
      sessionAudience: AUDIENCE,
      sessionNodeSelector: REAL_NODE_PLACEMENT.nodeSelector,
      sessionTolerations: REAL_NODE_PLACEMENT.tolerations,
      // The session image is imported, not pulled (its tag `latest` would mean Always).
      sessionImagePullPolicy: 'IfNotPresent',
      standbyClaims: options.standbyClaims ?? 0,
      claimBinderImage: await sandboxImage(),
      // Room for a restarted pod's code-server to come up.
      bridgeHealthAttempts: 240,
      bridgeHealthIntervalMs: 500,
      bridgeRequestTimeoutMs: 5000,
    });
    cleanups.push(() => operator.stop());
    const browser = await launchBrowser();
    cleanups.push(() => browser.close());
    timings.push(`host parts, sign-in proxy and operator ${seconds(since)}`);

    const allowOnly: Course['allowOnly'] = async (context, blocked, held) => {
      await context.route('**/*', (route) => {
        const url = route.request().url();
        const { hostname } = new URL(url);
        if (hostname === SESSION_HOST && held) {
          // The student does not open the IDE now: the landing page's hand-over is answered here.
          held.push(url);
          return route.fulfill({ status: 200, contentType: 'text/html', body: '<title>later</title>' });
        }
        if ([REAL_NODE_IP, SESSION_HOST, LANDING_HOST].includes(hostname)) return route.continue();
        blocked.push(url);
        return route.abort('blockedbyclient');
      });
    };

    return {
      state,
      node,
      kc,
      core,
      r,
      git,
      platform,
      idp,
      landing,
      browser,
      sessionOrigin,
      landingOrigin,
      gitPassword,
      platformToken,
      secrets: [sessionClientSecret, gitPassword, platformToken],
      repoUrl,
      gitUri: git.urlWithCredentials(REPOSITORY, 'student', gitPassword),
      deepLink: (app, { gitUser, gitMail }) =>
        `${landingOrigin}/?${new URLSearchParams({
          appDef: app,
          gitUri: git.urlWithCredentials(REPOSITORY, 'student', gitPassword),
          gitUser,
          gitMail,
          platformUrl: platform.url,
          platformToken,
        })}`,
      viaIngress,
      async studentContext(hold = {}) {
        const context = await browser.newContext({ viewport: STUDENT_VIEWPORT });
        const blocked: string[] = [];
        await allowOnly(context, blocked, hold.sessionUrls);
        return { context, blocked };
      },
      allowOnly,
      signInIfAsked,
      stop,
    };
  }
}

async function signInIfAsked(page: Page, email: string): Promise<void> {
  if (await page.locator('input[name=login]').count()) {
    await page.fill('input[name=login]', email);
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    // Then the consent form (a client not granted yet), or straight back to the client.
    await page.waitForSelector('input[name=login]', { state: 'detached', timeout: 30_000 });
    await page.waitForLoadState();
    await page
      .waitForSelector('input[name=prompt][value=consent]', { state: 'attached', timeout: 10_000 })
      .catch(() => undefined);
  }
  if (await page.locator('input[name=prompt][value=consent]').count()) {
    await page.click('button[type=submit]');
    await page.waitForLoadState();
  }
}

/** The chart's sign-in proxy of the session host (Secret, Deployment, Service, Ingress) on the real node. */
async function installSessionSignIn({
  kc,
  core,
  idp,
  sessionClientSecret,
  ingressPort,
}: {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  idp: LoginProvider;
  sessionClientSecret: string;
  ingressPort: number;
}): Promise<void> {
  const helm = path.join(await ensureBinaries('helm'), 'helm');
  const values = {
    'identityProvider.issuer': idp.issuer,
    'identityProvider.audience': AUDIENCE,
    'identityProvider.sessionClient.secret': sessionClientSecret,
    'operator.sessionHost': SESSION_HOST,
    'operator.sessionPort': String(ingressPort),
    'operator.sessionScheme': 'http',
    'operator.ingressClassName': REAL_NODE_INGRESS_CLASS,
  };
  const rendered = (
    await run(
      helm,
      [
        'template',
        'ide-cloud',
        CHART,
        '--namespace',
        COURSE_NAMESPACE,
        ...Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
      ],
      { maxBuffer: 32 << 20 },
    )
  ).stdout;
  const documents = YAML.parseAllDocuments(rendered).map(
    (d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null,
  );
  const find = <T>(kind: string, name: string): T => {
    const found = documents.find((d) => d?.kind === kind && d.metadata?.name === name);
    assert.ok(found, `the chart renders ${kind} ${name}`);
    return found as T;
  };
  const namespace = COURSE_NAMESPACE;
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const net = kc.makeApiClient(k8s.NetworkingV1Api);
  await core.createNamespacedSecret({ namespace, body: find('Secret', 'ide-cloud-auth-proxy') });
  await core.createNamespacedService({ namespace, body: find('Service', 'ide-cloud-session-sign-in') });
  await net.createNamespacedIngress({ namespace, body: find('Ingress', 'ide-cloud-session-sign-in') });
  const signIn = find<k8s.V1Deployment>('Deployment', 'ide-cloud-session-sign-in');
  signIn.spec!.template.spec = { ...signIn.spec!.template.spec!, ...REAL_NODE_PLACEMENT };
  await apps.createNamespacedDeployment({ namespace, body: signIn });
  await eventually(async () => {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app=session-sign-in' });
    assert.ok(
      pods.items.some((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      `the sign-in proxy is not Ready: ${JSON.stringify(pods.items.map((p) => p.status?.containerStatuses))}`,
    );
  }, 120_000);
}

/**
 * The platform's route to the landing page: an Ingress of Traefik's class for LANDING_HOST, to a
 * Service without selector whose EndpointSlice is the landing page's process on the host.
 */
async function routeLandingPage({
  kc,
  core,
  port,
  viaIngress,
}: {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  port: number;
  viaIngress: Course['viaIngress'];
}): Promise<void> {
  const name = 'landing-page';
  const namespace = COURSE_NAMESPACE;
  await core.createNamespacedService({
    namespace,
    body: { metadata: { name }, spec: { ports: [{ name: 'http', port: 80, targetPort: port as never }] } },
  });
  await kc.makeApiClient(k8s.DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: { name: `${name}-host`, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [REAL_NODE_IP], conditions: { ready: true } }],
      ports: [{ name: 'http', port, protocol: 'TCP' }],
    },
  });
  await kc.makeApiClient(k8s.NetworkingV1Api).createNamespacedIngress({
    namespace,
    body: {
      metadata: { name },
      spec: {
        ingressClassName: REAL_NODE_INGRESS_CLASS,
        rules: [
          {
            host: LANDING_HOST,
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { name: 'http' } } } }],
            },
          },
        ],
      },
    },
  });
  await eventually(async () => {
    const answer = await viaIngress(LANDING_HOST, '/healthz');
    assert.equal(answer.status, 200, `the landing page through Traefik: ${answer.status}`);
  }, 60_000);
}

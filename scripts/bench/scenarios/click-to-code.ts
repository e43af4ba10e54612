// Click to code: the seconds a student feels, from the click on "open in IDE" to the repository's files
// in the explorer, on the real node (test/support/real-node-course.ts: Traefik, the chart's sign-in
// proxy, the session image built here, a real OpenID Connect provider) with the operator and the
// service running as the image runs them. Every student is signed in to the provider already, as in a
// course, and has used the landing page and the session host before (the sign-in each keeps); each
// click opens a new tab.
//
// Cases: warm with a new workspace (the landing page's deep link), warm ephemeral (the platform's POST
// /service with the student's token, then the URL), lazy (an app definition without a pool; the image
// on the node; the new workspace takes one of the operator's standby claims), a relaunch of each warm workspace (stopped first: a pod of its own on the claim), and
// students clicking at once. Each launch is measured alone on a quiet node: the pool refilled, the
// standby claims bound, the sessions before it stopped. The floor of the IDE's own load: the same page load of a code-server
// started by hand on the host, on the same files.
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { BrowserContext } from 'playwright-core';
import { decideNodes } from '../../cluster/real-node.js';
import { LABELS } from '../../../server/src/model/api-group.js';
import type { Session } from '../../../server/src/model/session.js';
import { launchTarget } from '../../../server/src/landing/index.js';
import { SIGN_IN_COOKIE } from '../../../server/src/landing/sign-in-cookie.js';
import { Informer, type Obj } from '../../../server/src/kube/informer.js';
import { deploymentReady, podReady } from '../../../server/src/operator/index.js';
import { COMPONENT, poolInstanceName, sessionOfRoutePath } from '../../../server/src/operator/manifests.js';
import {
  COURSE_NAMESPACE,
  EXERCISE_FILES,
  SESSION_HOST,
  LANDING_HOST,
  STUDENT_VIEWPORT,
  TOP_LEVEL,
  startCourse,
  type Course,
} from '../../../test/support/real-node-course.js';
import { SERVICE_AUTH_TOKEN } from '../../../test/support/service-harness.js';
import { firstScreen, waitForFrameText, type FirstScreen } from '../../../test/support/browser.js';
import { VscodeHost } from '../../../test/support/vscode-host.js';
import { freePort } from '../../cluster/control-plane.js';
import { operatorEnv, spawnServerPart, stopChild } from '../harness.js';
import type { Scenario } from '../scenario.js';
import {
  CASES,
  CLICK_STEPS,
  cloneDoneAt,
  ideListeningAt,
  firstPaint,
  workbenchMarks,
  followPage,
  waitForFiles,
  type CaseName,
  type ClickTimeline,
} from '../student.js';
import { percentile, round, until } from '../util.js';

const WARM_APP = 'javascript-latest';
const LAZY_APP = 'javascript-lazy';
/** Empty claims the operator keeps bound (its standbyClaims): a new workspace's lazy start takes one. */
const STANDBY_CLAIMS = 2;
/** How long one launch may take before the scenario fails (a cold node's lazy start is well within). */
const LAUNCH_DEADLINE_MS = 120_000;

interface Student {
  email: string;
  gitUser: string;
  gitMail: string;
  context: BrowserContext;
  /** The landing page's access token, from the student's sign-in (signIn). */
  accessToken?: string;
}

/** The steps of a timeline the bench's watches see (the rest come from the browser and the session's log). */
type WatchedStep = Extract<
  keyof ClickTimeline,
  | 'sessionCreatedMs'
  | 'firstStatusMs'
  | 'routeWrittenMs'
  | 'podCreatedMs'
  | 'podScheduledMs'
  | 'containersRunningMs'
  | 'podReadyMs'
  | 'urlWrittenMs'
>;

interface Launch {
  session: string;
  strategy?: string;
  timeline: ClickTimeline;
}

export const clickToCode: Scenario = {
  name: 'click-to-code',
  title: 'click to code on the real node: the student’s seconds',
  weight: 12,
  needs: 'real-node',
  async run({ bench, sizes, progress }) {
    const choice = await decideNodes([]);
    if (!choice.realNode) return { clickToCode: { measured: false, reason: choice.notice } };
    const timings: string[] = [];
    const dir = path.join(bench.root, 'bench-artifacts');
    await mkdir(dir, { recursive: true });
    const children: { stop(): Promise<void> }[] = [];
    let serviceUrl = '';
    progress.step('the course on the real node (builds and imports images the first time)');
    const course = await startCourse({
      suite: 'bench-click',
      apps: [
        { name: WARM_APP, label: 'JavaScript', minInstances: sizes.clickTogether, maxInstances: 40 },
        { name: LAZY_APP, label: 'JavaScript (lazy)', minInstances: 0, maxInstances: 40 },
      ],
      standbyClaims: STANDBY_CLAIMS,
      startService: async ({ kubeconfig }, identityProvider) => {
        const port = await freePort();
        const { child } = spawnServerPart(
          bench.root,
          'service',
          {
            SERVICE_AUTH_TOKEN,
            ADMIN_API_TOKEN: randomUUID(),
            IDE_CLOUD_NAMESPACE: COURSE_NAMESPACE,
            PORT: String(port),
            HOST: '127.0.0.1',
            LOG_LEVEL: 'warn',
            KUBECONFIG: kubeconfig,
            IDENTITY_PROVIDER_ISSUER: identityProvider.issuer,
            IDENTITY_PROVIDER_AUDIENCE: identityProvider.audience,
          },
          path.join(dir, 'click-to-code-service.log'),
        );
        const url = (serviceUrl = `http://127.0.0.1:${port}`);
        await until(
          'the service',
          () =>
            fetch(`${url}/q/health`).then(
              (r) => r.ok,
              () => false,
            ),
          60_000,
          200,
        );
        return { url, close: () => stopChild(child) };
      },
      startOperator: async ({ kubeconfig }, settings) => {
        const { child } = spawnServerPart(
          bench.root,
          'operator',
          { ...operatorEnv({ ...settings, kubeconfig }), IDE_CLOUD_LOG_LEVEL: 'warn' },
          path.join(dir, 'click-to-code-operator.log'),
        );
        const stop = () => stopChild(child);
        children.push({ stop });
        return { stop };
      },
      timings,
    });
    const caches = watchCourse(course);
    try {
      await caches.synced;
      return { clickToCode: await measure(course, serviceUrl, sizes, progress, dir, timings, caches) };
    } finally {
      await caches.stop();
      for (const child of children) await child.stop().catch(() => undefined);
      await course.stop();
    }
  },
};

interface CourseCaches {
  /** The warm instances' Deployments, and the reservations that hold no session (a free instance has one). */
  instances: Informer<k8s.V1Deployment>;
  freeReservations: Informer<k8s.V1Lease>;
  /** Lazy starts' own pods (their `session` label). */
  sessionPods: Informer<k8s.V1Pod>;
  standbyClaims: Informer<k8s.V1PersistentVolumeClaim>;
  sessions: Informer<Session>;
  ingresses: Informer<k8s.V1Ingress>;
  synced: Promise<unknown>;
  stop(): Promise<unknown>;
}

/** The free warm instances, the standby claims and the sessions, watched: the waits between launches make no API reads. */
function watchCourse(course: Course): CourseCaches {
  const watch = <T extends Obj>(path: string, apiVersion: string, kind: string, labelSelector?: string): Informer<T> =>
    new Informer<T>(course.kc, {
      namespace: COURSE_NAMESPACE,
      rewatchIntervalMs: 3_600_000,
      path,
      apiVersion,
      kind,
      ...(labelSelector ? { labelSelector } : {}),
    });
  const deployments = `/apis/apps/v1/namespaces/${COURSE_NAMESPACE}/deployments`;
  const sessionComponent = `${LABELS.component}=${COMPONENT.session}`;
  const instances = watch<k8s.V1Deployment>(deployments, 'apps/v1', 'Deployment', LABELS.poolInstance);
  const freeReservations = watch<k8s.V1Lease>(
    `/apis/coordination.k8s.io/v1/namespaces/${COURSE_NAMESPACE}/leases`,
    'coordination.k8s.io/v1',
    'Lease',
    `${LABELS.poolInstance},!${LABELS.session}`,
  );
  const sessionPods = watch<k8s.V1Pod>(`/api/v1/namespaces/${COURSE_NAMESPACE}/pods`, 'v1', 'Pod', sessionComponent);
  const standbyClaims = watch<k8s.V1PersistentVolumeClaim>(
    `/api/v1/namespaces/${COURSE_NAMESPACE}/persistentvolumeclaims`,
    'v1',
    'PersistentVolumeClaim',
    `${LABELS.component}=${COMPONENT.standbyClaim}`,
  );
  const sessions = watch<Session>(course.r.sessions.path, 'ide.cloud/v1beta10', 'Session');
  const ingresses = watch<k8s.V1Ingress>(
    `/apis/networking.k8s.io/v1/namespaces/${COURSE_NAMESPACE}/ingresses`,
    'networking.k8s.io/v1',
    'Ingress',
  );
  const all = [instances, freeReservations, sessionPods, standbyClaims, sessions, ingresses] as Informer[];
  for (const informer of all) informer.start();
  return {
    instances,
    freeReservations,
    sessionPods,
    standbyClaims,
    sessions,
    ingresses,
    synced: Promise.all(all.map((i) => i.waitForSync())),
    stop: () => Promise.all(all.map((i) => i.stop())),
  };
}

async function measure(
  course: Course,
  serviceUrl: string,
  sizes: { clickLaunches: number; clickTogether: number },
  progress: { step(title: string): void; note(detail: string): void },
  dir: string,
  timings: string[],
  caches: CourseCaches,
) {
  const providerHost = new URL(course.idp.issuer).host;
  const hosts = { session: SESSION_HOST, landing: LANDING_HOST, provider: providerHost };
  const cases: Partial<Record<CaseName, Launch[]>> = {};
  let screenshots = 0;
  const firstScreens: Partial<Record<CaseName, FirstScreen>> = {};

  /**
   * The pool full and every instance Ready, the standby claims bound: nothing starts on the node while
   * a launch is measured.
   */
  const quietPool = async () => {
    await until(
      'the warm pool to be full and Ready, the standby claims bound',
      () => {
        const free = caches.instances
          .list()
          .filter((d) => !d.metadata?.deletionTimestamp && caches.freeReservations.get(d.metadata?.name ?? ''));
        const standby = caches.standbyClaims.list().filter((c) => !c.metadata?.deletionTimestamp);
        return (
          free.length === sizes.clickTogether &&
          free.every(deploymentReady) &&
          standby.length === STANDBY_CLAIMS &&
          standby.every((c) => c.status?.phase === 'Bound')
        );
      },
      300_000,
      100,
    );
  };

  const newStudent = async (kind: string): Promise<Student> => {
    const tag = randomUUID().slice(0, 8);
    const student = {
      email: `${kind}-${tag}@example.org`,
      gitUser: `Student ${tag}`,
      gitMail: `${tag}@students.example.org`,
      // No request interception (the suites' guard pauses every request in Node): a student's browser
      // has none. What it would ask beyond the course is recorded instead (followPage: otherOrigins).
      context: await course.browser.newContext({ viewport: STUDENT_VIEWPORT }),
    };
    await signIn(course, student);
    return student;
  };

  // When the bench's watches first saw each step of a session (ms since the epoch), by the step's name
  // in its timeline: its create, first status, path in an Ingress, a lazy start's pod and Deployment,
  // and its URL.
  const seen = new Map<string, Partial<Record<WatchedStep, number>>>();
  const saw = (name: string, step: WatchedStep) => {
    const steps = seen.get(name) ?? seen.set(name, {}).get(name)!;
    steps[step] ??= Date.now();
  };
  caches.sessions.on((type, s) => {
    if (type === 'DELETED' || s.metadata.deletionTimestamp) return;
    saw(s.metadata.name, 'sessionCreatedMs');
    if (s.status?.conditions?.length) saw(s.metadata.name, 'firstStatusMs');
    if (s.status?.url) saw(s.metadata.name, 'urlWrittenMs');
  });
  caches.sessionPods.on((type, pod) => {
    const name = pod.metadata?.labels?.[LABELS.session];
    if (type === 'DELETED' || pod.metadata?.deletionTimestamp || !name) return;
    saw(name, 'podCreatedMs');
    if (pod.spec?.nodeName) saw(name, 'podScheduledMs');
    const containers = pod.status?.containerStatuses ?? [];
    if (containers.length && containers.every((c) => c.state?.running)) saw(name, 'containersRunningMs');
    if (podReady(pod)) saw(name, 'podReadyMs');
  });
  caches.ingresses.on((type, ingress) => {
    if (type === 'DELETED') return;
    for (const rule of ingress.spec?.rules ?? [])
      for (const p of rule.http?.paths ?? []) {
        const name = sessionOfRoutePath(p.path ?? '');
        if (name) saw(name, 'routeWrittenMs');
      }
  });

  /** One click, followed to the files in the explorer; the session stopped afterwards unless kept. */
  const launch = async (
    student: Student,
    how: { app: string } | { ephemeral: true },
    caseName: CaseName,
  ): Promise<Launch> => {
    const page = await student.context.newPage();
    const follow = followPage(page, hosts);
    let session: string;
    if ('app' in how) {
      session = launchTarget(how.app, student.email, course.gitUri).sessionName;
      seen.delete(session);
      follow.click();
      await page.goto(course.deepLink(how.app, student), { waitUntil: 'commit' });
    } else {
      // The platform holds the student's token already: taken before the click, not timed.
      follow.click();
      const url = await platformLaunch(serviceUrl, course, student, student.accessToken!);
      follow.timeline().launchAnsweredMs = Date.now() - follow.clickedAt();
      session = sessionOfRoutePath(new URL(url).pathname)!;
      await page.goto(url, { waitUntil: 'commit' });
    }
    const failure = await waitForFiles(page, TOP_LEVEL, LAUNCH_DEADLINE_MS).then(
      () => undefined,
      async (error: Error) => {
        // Counted and kept (a screenshot, where the page was), and the run goes on.
        await page.screenshot({ path: path.join(dir, `click-to-code-${caseName}-failed.png`) }).catch(() => undefined);
        const text = ((await page.textContent('body').catch(() => '')) ?? '').replace(/\s+/g, ' ').slice(0, 200);
        const where = page
          .url()
          .replace(/\/[0-9a-f]{32}\/.*/, '/<key>/')
          .replace(/\?.*/, '');
        return `${error.message}; the page is at ${where}: ${text}`;
      },
    );
    if (failure) {
      progress.note(`${caseName}: a launch never showed the files: ${failure}`);
      await page.close();
      return { session, timeline: { ...follow.timeline(), failure } };
    }
    follow.filesShown();
    const timeline = follow.timeline();
    const after = (at: number | undefined) => (at ? at - follow.clickedAt() : undefined);
    for (const [step, at] of Object.entries(seen.get(session) ?? {}) as [WatchedStep, number][])
      timeline[step] = after(at);
    const paint = await firstPaint(page);
    if (paint) timeline.workbenchFirstPaintMs = paint - follow.clickedAt();
    const marks = await workbenchMarks(page);
    if (marks.workbenchScript) timeline.workbenchScriptMs = marks.workbenchScript - follow.clickedAt();
    if (marks.workbenchStarted) timeline.workbenchStartedMs = marks.workbenchStarted - follow.clickedAt();
    if (marks.explorerResolved) timeline.explorerResolvedMs = marks.explorerResolved - follow.clickedAt();
    const served = await course.r.sessions.get(session);
    const log = await sessionLog(course, served);
    timeline.cloneDoneMs = after(log ? cloneDoneAt(log) : undefined);
    // A warm instance's code-server listened long before the click.
    if (served.status?.startStrategy !== 'eager')
      timeline.ideListeningMs = after(log ? ideListeningAt(log) : undefined);
    if (screenshots++ === 0 || caseName === 'lazy') {
      // The first screen, once the README is open (after the measured window).
      firstScreens[caseName] = await firstScreen(page, {
        timeoutMs: 30_000,
        until: (x) => x.activeTab === 'Preview README.md',
      });
      await waitForFrameText(page, 'Exercise 1', 30_000).catch(() => undefined);
      await page.screenshot({ path: path.join(dir, `click-to-code-${caseName}.png`) }).catch(() => undefined);
    }
    await page.close();
    return { session, strategy: served.status?.startStrategy, timeline };
  };

  const stop = async (names: string[]) => {
    for (const name of names) await course.r.sessions.delete(name).catch(() => undefined);
    await until(
      'the stopped sessions to be gone',
      () => names.every((name) => !caches.sessions.get(name)),
      180_000,
      100,
    );
  };

  const n = sizes.clickLaunches;
  /**
   * `n` launches of a case, one at a time, each alone on a quiet node, its session stopped after it;
   * the student's browser context closed unless the case keeps it (for the relaunch).
   */
  const oneAtATime = async (
    caseName: CaseName,
    how: { app: string } | { ephemeral: true },
    student: (i: number) => Promise<Student>,
    keep = false,
  ) => {
    progress.step(`${CASES[caseName]}: ${n} launches`);
    for (let i = 0; i < n; i++) {
      const who = await student(i);
      await quietPool();
      const measured = await launch(who, how, caseName);
      (cases[caseName] ??= []).push(measured);
      await stop([measured.session]);
      if (!keep) await who.context.close();
    }
  };

  const warmStudents: Student[] = [];
  await quietPool();
  await oneAtATime(
    'warmWorkspace',
    { app: WARM_APP },
    async () => {
      const student = await newStudent('warm');
      warmStudents.push(student);
      return student;
    },
    true,
  );
  await oneAtATime('warmEphemeral', { ephemeral: true }, () => newStudent('ephemeral'));
  await oneAtATime('lazy', { app: LAZY_APP }, () => newStudent('lazy'));
  await oneAtATime('relaunch', { app: WARM_APP }, (i) => Promise.resolve(warmStudents[i]!));

  progress.step(`${sizes.clickTogether} students clicking at once`);
  const together = await Promise.all(Array.from({ length: sizes.clickTogether }, () => newStudent('together')));
  await quietPool();
  const measuredTogether = await Promise.all(together.map((s) => launch(s, { app: WARM_APP }, 'together')));
  cases.together = measuredTogether;
  await stop(measuredTogether.map((m) => m.session));
  for (const s of together) await s.context.close();

  progress.step('the floor: the same page load of a code-server started by hand on the host');
  const floor = await hostFloor(course, n);
  progress.note(timings.join(', '));

  return {
    measured: true,
    launchesPerCase: n,
    together: sizes.clickTogether,
    cases: Object.fromEntries(
      (Object.keys(CASES) as CaseName[]).map((k) => [k, summarizeCase(cases[k] ?? [])]),
    ) as Record<CaseName, ReturnType<typeof summarizeCase>>,
    floor,
    firstScreens,
    setup: timings,
  };
}

/**
 * Signed in to the provider (both clients consented), to the landing page (the sign-in its tabs keep)
 * and to the session host, as a course's student who has opened an IDE before is. The landing page's
 * access token is kept for the student's platform (the ephemeral case's POST /service).
 */
async function signIn(course: Course, student: Student): Promise<void> {
  const page = await student.context.newPage();
  await page.goto(`${course.landingOrigin}/`);
  await page.waitForSelector('input[name=login]', { timeout: 60_000 });
  await course.signInIfAsked(page, student.email);
  await page.waitForURL((u) => u.hostname === LANDING_HOST, { timeout: 60_000 });
  const token = await page.waitForFunction(
    () => {
      for (const key of Object.keys(sessionStorage))
        if (key.startsWith('oidc.user:'))
          return (JSON.parse(sessionStorage.getItem(key)!) as { access_token?: string }).access_token;
      return undefined;
    },
    undefined,
    { timeout: 30_000 },
  );
  student.accessToken = (await token.jsonValue()) as string;
  // The tab's sign-in is kept for the student's next tabs by the answer to its hand-over (a cookie
  // the page's server sets once the service confirmed the token): without it a launch goes to the provider.
  const kept = async () => (await student.context.cookies(course.landingOrigin)).some((c) => c.name === SIGN_IN_COOKIE);
  await until(`the landing page's kept sign-in cookie (${SIGN_IN_COOKIE}) of ${student.email}`, kept, 30_000);
  await page.goto(`${course.sessionOrigin}/oauth2/start?rd=%2F`);
  await course.signInIfAsked(page, student.email);
  await page.waitForURL((u) => u.hostname === SESSION_HOST, { timeout: 60_000 });
  const cookies = await student.context.cookies(course.sessionOrigin);
  if (!cookies.some((c) => c.name === '_ide_cloud_session'))
    throw new Error(`${student.email} has no sign-in cookie of the session host`);
  await page.close();
}

/** The platform's POST /service for an ephemeral session, with the student's token. */
async function platformLaunch(
  serviceUrl: string,
  course: Course,
  student: Student,
  accessToken: string,
): Promise<string> {
  const response = await fetch(`${serviceUrl}/service`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({
      appId: SERVICE_AUTH_TOKEN,
      user: student.email,
      appDefinition: WARM_APP,
      ephemeral: true,
      env: {
        fromMap: {
          IDE: 'true',
          GIT_URI: course.gitUri,
          GIT_USER: student.gitUser,
          GIT_MAIL: student.gitMail,
          PLATFORM_URL: course.platform.url,
          PLATFORM_TOKEN: course.platformToken,
        },
      },
    }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST /service: ${response.status} ${text.slice(0, 200)}`);
  return text;
}

/** The session's IDE container log with timestamps (the agent's lines). */
async function sessionLog(course: Course, session: Session): Promise<string | undefined> {
  const selector =
    session.status?.startStrategy === 'eager'
      ? `${LABELS.poolInstance}=${poolInstanceName(session.spec.appDefinition, Number(session.status.instanceId))}`
      : `${LABELS.session}=${session.metadata.name}`;
  const pods = await course.core.listNamespacedPod({ namespace: COURSE_NAMESPACE, labelSelector: selector });
  const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running');
  if (!pod) return undefined;
  return course.core.readNamespacedPodLog({
    name: pod.metadata!.name!,
    namespace: COURSE_NAMESPACE,
    container: pod.spec!.containers[0]!.name,
    timestamps: true,
  });
}

/** The IDE's own load on the host: first byte → files shown, the same files, a fresh browser context each time. */
async function hostFloor(course: Course, n: number) {
  const host = await VscodeHost.start({ name: 'floor', log: () => undefined });
  try {
    for (const [file, text] of Object.entries(EXERCISE_FILES)) {
      await mkdir(path.dirname(path.join(host.workspaceDir, file)), { recursive: true });
      await writeFile(path.join(host.workspaceDir, file), text);
    }
    const loads: number[] = [];
    for (let i = 0; i < n; i++) {
      const context = await course.browser.newContext({ viewport: STUDENT_VIEWPORT });
      const page = await context.newPage();
      let firstByte = 0;
      page.on('response', (r) => {
        if (!firstByte && r.request().isNavigationRequest() && r.status() === 200) firstByte = Date.now();
      });
      await page.goto(`${host.url}/?folder=${encodeURIComponent(host.workspaceDir)}`, { waitUntil: 'commit' });
      await waitForFiles(page, TOP_LEVEL, LAUNCH_DEADLINE_MS);
      loads.push(Date.now() - firstByte);
      await context.close();
    }
    return {
      n: loads.length,
      firstByteToFilesP50Ms: percentile(loads, 50),
      firstByteToFilesP95Ms: percentile(loads, 95),
      loadsMs: loads,
    };
  } finally {
    await host.stop();
  }
}

/** p50 and p95 of each step, IDE Cloud's part (click → first byte) and the IDE's (first byte → files). */
function summarizeCase(launches: Launch[]) {
  const of = (pick: (t: ClickTimeline) => number | undefined) => {
    const values = launches.map((l) => pick(l.timeline)).filter((v): v is number => v !== undefined);
    return { n: values.length, p50Ms: round(percentile(values, 50), 0), p95Ms: round(percentile(values, 95), 0) };
  };
  const steps = Object.fromEntries(CLICK_STEPS.map(([key]) => [key, of((t) => t[key])]));
  return {
    n: launches.length,
    total: of((t) => t.filesShownMs),
    ideCloud: of((t) => t.workbenchFirstByteMs),
    ide: of((t) =>
      t.filesShownMs !== undefined && t.workbenchFirstByteMs !== undefined
        ? t.filesShownMs - t.workbenchFirstByteMs
        : undefined,
    ),
    steps,
    errorPages: launches.flatMap((l) => l.timeline.errorPages),
    otherOrigins: [...new Set(launches.flatMap((l) => l.timeline.otherOrigins))],
    failures: launches.flatMap((l) => (l.timeline.failure ? [l.timeline.failure] : [])),
    sessionRedirects: launches.reduce((a, l) => a + l.timeline.sessionRedirects, 0),
    signInPagesAfterHandOver: launches.reduce((a, l) => a + l.timeline.signInPagesAfterHandOver, 0),
    strategies: launches.map((l) => l.strategy ?? 'unknown'),
    launches: launches.map((l) => ({ session: l.session, ...l.timeline })),
  };
}

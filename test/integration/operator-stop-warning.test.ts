// The warning before a stop (issue 17): the real operator warns the session's real bridge process (on
// the pod's address, with the instance's token) before an idle or lifetime stop, with the time left;
// activity the IDE reports to its bridge in the window keeps an idle session (not a lifetime one);
// with saveWorkOnStop the bridge runs the real agent, whose save lands the student's uncommitted change
// on a new branch of a real git server, with a token from the learning-platform stand-in; without it
// nothing is pushed. A lazy session's pod runs the bridge too, with the session's own token (from its
// Secret, by reference): it is warned and its work saved the same way. The IDE's side is played by the
// test on loopback, as the extension calls it.
import assert from 'node:assert/strict';
import { execFile, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { build } from 'esbuild';
import { cloneParticipation, RedactingLog } from '../../agent/src/core/index.js';
import { makeSandbox, type Sandbox } from '../../agent/test/helpers.js';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { ANNOTATIONS, LABELS } from '../../server/src/model/api-group.js';
import { parseStopWarning } from '../../server/src/model/data-bridge.js';
import type { Session } from '../../server/src/model/session.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import { startLearningPlatform, type LearningPlatform } from '../support/learning-platform.js';
import { endProcess, spawnTracked } from '../support/processes.js';
import {
  bridgeToken,
  cleanUpSuite,
  createAppDefinition,
  createSession,
  ideCloudResources,
  readyPodIp,
  running,
  testOperator,
  waitForSession,
} from '../support/operator.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PLATFORM_TOKEN = 'stop-lms-token-5d2e91';
const PARTICIPATION_TOKEN = 'stop-vcs-token-a7c403';
/** The idle timeout of the idle app definition (fractions allowed): the test waits about two thirds of it. */
const IDLE_MINUTES = 0.35;
/** The timed app definition's lifetime: the lifetime test waits about that long. */
const LIFETIME_MINUTES = 0.2;
const IDLE_WINDOW = 10;
const SAVE_WINDOW = 2;
/** A number of minutes as it appears in a stop reason, as a pattern. */
const minutesPattern = (minutes: number) => String(minutes).replaceAll('.', '\\.');

interface Notice {
  id: number;
  reason: string;
  secondsLeft: number;
  saveWork: boolean;
}

/** A real bridge process (the session image's extension/dist/bridge.mjs) serving one instance's pod address. */
interface BridgeProcess {
  instance: string;
  url: string;
  token: string;
  workspace: string;
  repository: string;
  child: ChildProcess;
  output: string[];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('operator: a warning before any stop, activity keeps the session, then the work is saved', function () {
  this.timeout(300_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let core: k8s.CoreV1Api;
  let operator: RunningOperator | undefined;
  let git: GitServer;
  let platform: LearningPlatform;
  let sandbox: Sandbox;
  let buildDir: string;
  let agentPath: string;
  const bridges = new Map<string, BridgeProcess>();
  const logs: string[] = [];
  const ports: Record<string, number> = {};

  /** The bridge of the warm instance a session holds. */
  function bridgeOf(session: Session): BridgeProcess {
    const bridge = bridges.get(`${session.spec.appDefinition}-pool-${session.status?.instanceId}`);
    assert.ok(bridge, `no bridge for ${session.metadata.name} (instance ${session.status?.instanceId})`);
    return bridge;
  }

  /** What the extension reads on its host (here the pod's address is on this host's loopback): the notice. */
  async function noticeAt(bridge: BridgeProcess): Promise<Notice | null> {
    const res = await fetch(`${bridge.url}/notice`, {
      headers: { authorization: `Bearer ${bridge.token}` },
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { notice: Notice | null }).notice;
  }

  /** What the extension reports on loopback when the student types or focuses the window. */
  async function reportActivity(bridge: BridgeProcess): Promise<void> {
    const res = await fetch(`${bridge.url}/activity`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bridge.token}` },
    });
    assert.equal(res.status, 200);
  }

  async function eventsOf(name: string): Promise<k8s.CoreV1Event[]> {
    const list = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=Session,involvedObject.name=${name}`,
    });
    return list.items;
  }

  /** The session's Event of that reason, once the recorder's background writer has sent it. */
  const eventOf = (name: string, reason: string) =>
    eventually(async () => {
      const event = (await eventsOf(name)).find((e) => e.reason === reason);
      assert.ok(event, `no ${reason} Event for ${name} yet`);
      return event;
    });

  const gone = (name: string) =>
    eventually(
      async () => {
        const session = await r.sessions.find(name);
        assert.ok(!session || session.metadata.deletionTimestamp, `${name} still running`);
      },
      150_000,
      250,
    );

  const branchesOf = async (repository: string) =>
    (
      await run('git', ['-C', path.join(git.root, repository), 'for-each-ref', '--format=%(refname)'], {
        env: sandbox.env,
      })
    ).stdout
      .trim()
      .split('\n');

  /** Starts the bridge of each warm instance of `app`, each over a workspace holding a participation clone with an uncommitted change. */
  async function serveBridges(app: string, instances: number, agent: string): Promise<void> {
    for (let id = 1; id <= instances; id++) {
      const instance = `${app}-pool-${id}`;
      const ip = await readyPodIp(cluster.kc, namespace, `${LABELS.poolInstance}=${instance}`);
      const token = await bridgeToken(cluster.kc, namespace, instance);
      const { repository, workspace } = await prepareWorkspace(instance);
      const bridge = await startBridge(instance, {
        ...sandbox.env,
        DATA_BRIDGE_ENABLED: 'true',
        DATA_BRIDGE_HOST: ip,
        DATA_BRIDGE_PORT: String(ports[app]),
        DATA_BRIDGE_TOKEN: token,
        WORKSPACE_DIR: workspace,
        DATA_BRIDGE_AGENT: agent,
      });
      bridges.set(instance, { ...bridge, instance, token, workspace, repository });
    }
  }

  /** A repository on the git server and a participation clone of it holding the student's uncommitted change. */
  async function prepareWorkspace(owner: string): Promise<{ repository: string; workspace: string }> {
    const repository = `course/${owner}.git`;
    await git.createRepository(repository, { files: { 'Task.java': 'class Task {}\n' } });
    const participation = `p-${owner}`;
    platform.participations.add(participation);
    platform.participationTokens.set(participation, PARTICIPATION_TOKEN);
    const workspace = path.join(sandbox.dir, owner);
    await cloneParticipation({
      platformUrl: platform.url,
      platformToken: PLATFORM_TOKEN,
      participationId: participation,
      repository: `${git.url}/${repository}`,
      participant: 'student',
      dir: workspace,
      log: new RedactingLog(() => {}),
      env: sandbox.env,
      credentialCacheSeconds: 0,
    });
    // The student's work, not committed yet.
    await writeFile(path.join(workspace, 'Task.java'), `class Task { String by = "${owner}"; }\n`);
    return { repository, workspace };
  }

  /** The bridge process with `env` (its host and port among it), once it answers /health. */
  async function startBridge(
    name: string,
    env: NodeJS.ProcessEnv,
  ): Promise<{ url: string; child: ChildProcess; output: string[] }> {
    const output: string[] = [];
    const child = spawnTracked(`data bridge (${name})`, process.execPath, [path.join(buildDir, 'bridge.mjs')], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (c: Buffer) => output.push(c.toString()));
    const url = `http://${env.DATA_BRIDGE_HOST}:${env.DATA_BRIDGE_PORT}`;
    await eventually(
      async () => {
        assert.equal(child.exitCode, null, `the bridge of ${name} exited: ${output.join('')}`);
        assert.ok((await fetch(`${url}/health`)).ok);
      },
      30_000,
      200,
    );
    return { url, child, output };
  }

  /**
   * The environment the kubelet gives a pod's IDE container (its first): literal values, and each
   * reference to a Secret's key read from that Secret, as the pod would see it.
   */
  async function containerEnvironment(pod: k8s.V1Pod): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const entry of pod.spec!.containers[0]!.env ?? []) {
      const ref = entry.valueFrom?.secretKeyRef;
      if (ref) {
        const secret = await core.readNamespacedSecret({ name: ref.name!, namespace });
        const encoded = secret.data?.[ref.key];
        assert.ok(encoded, `${entry.name}: secret ${ref.name} has no key ${ref.key}`);
        env[entry.name] = Buffer.from(encoded, 'base64').toString('utf8');
      } else if (entry.value !== undefined) env[entry.name] = entry.value;
    }
    return env;
  }

  before(async function () {
    this.timeout(300_000);
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'op-stopwarn');
    r = ideCloudResources(cluster.kc, namespace);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    sandbox = await makeSandbox();
    git = await startGitServer({ users: { student: PARTICIPATION_TOKEN } });
    platform = await startLearningPlatform();
    platform.validTokens.add(PLATFORM_TOKEN);
    // The bridge and the agent as the session image ships them: bundles, the agent an executable.
    buildDir = await mkdtemp(path.join(os.tmpdir(), 'stop-warning-build-'));
    const common = { bundle: true, platform: 'node', target: 'node20', format: 'esm', logLevel: 'warning' } as const;
    await build({
      ...common,
      entryPoints: [path.join(ROOT, 'extension/src/process.ts')],
      outfile: path.join(buildDir, 'bridge.mjs'),
    });
    const agent = path.join(buildDir, 'ide-cloud-agent');
    await build({
      ...common,
      entryPoints: [path.join(ROOT, 'agent/src/cli/index.ts')],
      outfile: agent,
      banner: { js: '#!/usr/bin/env node' },
    });
    await chmod(agent, 0o755);

    for (const app of ['idle', 'timed', 'saving', 'lazy-saving']) ports[app] = await freePort();
    const bridgeOptions = (app: string) => ({ dataBridgeEnabled: 'true', dataBridgePort: String(ports[app]) });
    await createAppDefinition(r, 'idle', {
      minInstances: 2,
      timeout: IDLE_MINUTES,
      stopWarningSeconds: IDLE_WINDOW,
      options: bridgeOptions('idle'),
    });
    await createAppDefinition(r, 'timed', {
      minInstances: 1,
      timeout: 30,
      maxLifetimeMinutes: LIFETIME_MINUTES,
      stopWarningSeconds: IDLE_WINDOW,
      options: bridgeOptions('timed'),
    });
    await createAppDefinition(r, 'saving', {
      minInstances: 1,
      timeout: 1,
      stopWarningSeconds: SAVE_WINDOW,
      saveWorkOnStop: true,
      options: bridgeOptions('saving'),
    });
    // No warm pool: its sessions start lazily, in pods of their own.
    await createAppDefinition(r, 'lazy-saving', {
      minInstances: 0,
      timeout: 1,
      stopWarningSeconds: SAVE_WINDOW,
      saveWorkOnStop: true,
      options: bridgeOptions('lazy-saving'),
    });
    operator = await testOperator(cluster.kc, namespace, { activityIntervalMs: 300 }, logs);
    await serveBridges('idle', 2, agent);
    await serveBridges('timed', 1, agent);
    await serveBridges('saving', 1, agent);
    agentPath = agent;
  });
  after(async function () {
    this.timeout(120_000);
    await cleanUpSuite(cluster.kc, namespace, [operator]);
    await Promise.all([...bridges.values()].map((bridge) => endProcess(bridge.child, 'SIGKILL')));
    await Promise.all([git?.close(), platform?.close()]);
    await sandbox?.remove();
    if (buildDir) await rm(buildDir, { recursive: true, force: true });
  });

  it('warns an idle session at its bridge with the time left, and stops it once the window has run out; activity in the window keeps another', async () => {
    const values = { PLATFORM_URL: platform.url, PLATFORM_TOKEN, GIT_USER: 'Student', GIT_MAIL: 's@example.org' };
    await createSession(r, 'idle-quiet', { user: 'quiet@example.com', appDefinition: 'idle', envVars: values });
    await createSession(r, 'idle-busy', { user: 'busy@example.com', appDefinition: 'idle', envVars: values });
    const [quiet, busy] = await Promise.all(['idle-quiet', 'idle-busy'].map((n) => waitForSession(r, n, running)));
    // Idle long enough that their stop is due in half a window: the window is open.
    const idleSince = new Date(Date.now() - IDLE_MINUTES * 60_000 + (IDLE_WINDOW * 1000) / 2).toISOString();
    for (const n of ['idle-quiet', 'idle-busy']) await r.sessions.patchStatus(n, { lastActivity: idleSince });

    const notices = await Promise.all(
      [quiet!, busy!].map((s) =>
        eventually(
          async () => {
            const notice = await noticeAt(bridgeOf(s));
            assert.ok(notice, `no notice at ${s.metadata.name}'s bridge yet`);
            return notice;
          },
          60_000,
          200,
        ),
      ),
    );
    for (const notice of notices) {
      assert.equal(notice.reason, 'Idle');
      assert.equal(notice.saveWork, false);
      assert.ok(notice.secondsLeft > 0 && notice.secondsLeft <= IDLE_WINDOW, `seconds left: ${notice.secondsLeft}`);
    }
    // The busy student types in the window: the extension tells the bridge.
    await reportActivity(bridgeOf(busy!));

    // The warning is recorded on the Session (once: an annotation, no status write).
    const warned = await eventually(async () => {
      const annotated = (await r.sessions.get('idle-quiet')).metadata.annotations?.[ANNOTATIONS.stopWarning];
      const warning = parseStopWarning(annotated);
      assert.ok(warning, 'the warning is not annotated yet');
      assert.equal(warning.kind, 'Idle', 'the warning names the stop it is for');
      return warning.at;
    });
    const warning = await eventOf('idle-quiet', 'StopWarning');
    assert.match(warning.message ?? '', /^the IDE was warned: Idle stop in \d+ s$/);

    await gone('idle-quiet');
    const stopped = await eventOf('idle-quiet', 'Stopped');
    assert.match(
      stopped.message ?? '',
      new RegExp(`^session stopped: Idle: no activity for more than ${minutesPattern(IDLE_MINUTES)} minute`),
    );
    // Not before the window had run out after the warning (Event times are whole seconds).
    const stoppedAt = new Date(stopped.firstTimestamp!).getTime();
    assert.ok(stoppedAt >= warned + IDLE_WINDOW * 1000 - 1000, `stopped ${stoppedAt - warned} ms after the warning`);
    const warnings = (await eventsOf('idle-quiet')).filter((e) => e.reason === 'StopWarning');
    assert.deepEqual(
      warnings.map((e) => e.count ?? 1),
      [1],
      'warned once',
    );
    // Without saveWorkOnStop nothing of the student's work was pushed, and nothing says otherwise.
    assert.deepEqual(await branchesOf(bridgeOf(quiet!).repository), ['refs/heads/main']);
    assert.ok(!(await eventsOf('idle-quiet')).some((e) => e.reason === 'WorkSaved' || e.reason === 'WorkNotSaved'));

    // Warned at the same time, the busy session runs on: its stop moved with the activity.
    const kept = await r.sessions.get('idle-busy');
    assert.ok(running(kept) && !kept.metadata.deletionTimestamp, 'activity in the window keeps the session');
    assert.equal(kept.status?.lastActivity, idleSince, 'status.lastActivity stays the service’s');
    // When that activity is old in turn, the student is warned again (a new notice).
    const again = await eventually(
      async () => {
        const notice = await noticeAt(bridgeOf(busy!));
        assert.ok(notice && notice.id > notices[1]!.id, 'no second notice yet');
        return notice;
      },
      120_000,
      250,
    );
    assert.equal(again.reason, 'Idle');
  });

  it('a lifetime stop warns too, and activity does not keep the session', async () => {
    // The lifetime runs from creation, so this waits about that long.
    await createSession(r, 'timed-1', { user: 'tim@example.com', appDefinition: 'timed' });
    const session = await waitForSession(r, 'timed-1', running);
    const bridge = bridgeOf(session);
    const notice = await eventually(
      async () => {
        const held = await noticeAt(bridge);
        assert.ok(held, 'no notice yet');
        return held;
      },
      120_000,
      250,
    );
    assert.equal(notice.reason, 'MaxLifetime');
    assert.ok(notice.secondsLeft > 0 && notice.secondsLeft <= IDLE_WINDOW, `seconds left: ${notice.secondsLeft}`);
    await reportActivity(bridge);
    await gone('timed-1');
    const stopped = await eventOf('timed-1', 'Stopped');
    assert.match(
      stopped.message ?? '',
      new RegExp(`^session stopped: MaxLifetime: running for more than ${minutesPattern(LIFETIME_MINUTES)} minute`),
    );
    assert.ok((await eventsOf('timed-1')).some((e) => e.reason === 'StopWarning'));
  });

  it("with saveWorkOnStop the student's uncommitted change lands on a new branch before the stop, and the Event names it", async () => {
    const values = { PLATFORM_URL: platform.url, PLATFORM_TOKEN, GIT_USER: 'Sam Student', GIT_MAIL: 'sam@example.org' };
    await createSession(r, 'saving-1', { user: 'sam@example.com', appDefinition: 'saving', envVars: values });
    const session = await waitForSession(r, 'saving-1', running);
    const bridge = bridgeOf(session);
    await r.sessions.patchStatus('saving-1', { lastActivity: new Date(Date.now() - 120_000).toISOString() });
    const notice = await eventually(
      async () => {
        const held = await noticeAt(bridge);
        assert.ok(held, 'no notice yet');
        return held;
      },
      60_000,
      200,
    );
    assert.equal(notice.saveWork, true, 'the notice says the work will be saved');

    await gone('saving-1');
    const saved = await eventually(
      async () => {
        const event = (await eventsOf('saving-1')).find((e) => e.reason === 'WorkSaved' || e.reason === 'WorkNotSaved');
        assert.ok(event, 'no save Event yet');
        return event;
      },
      30_000,
      200,
    );
    assert.equal(saved.reason, 'WorkSaved', saved.message);
    const branch =
      /work saved to branch (ide-cloud\/saved-\d{8}T\d{6}Z) of http:\/\/127\.0\.0\.1:\d+\/course\/saving-pool-1\.git$/.exec(
        saved.message ?? '',
      )?.[1];
    assert.ok(branch, saved.message);
    const repo = path.join(git.root, bridge.repository);
    const content = await run('git', ['-C', repo, 'show', `refs/heads/${branch}:Task.java`], { env: sandbox.env });
    assert.equal(content.stdout, 'class Task { String by = "saving-pool-1"; }\n');
    const author = await run('git', ['-C', repo, 'log', '-1', '--format=%an', `refs/heads/${branch}`], {
      env: sandbox.env,
    });
    assert.equal(author.stdout.trim(), 'Sam Student');
    // The push authenticated with the participation's token from the platform, asked for at the save.
    assert.ok(platform.requests.some((q) => q.participationId === 'p-saving-pool-1' && q.status === 200));
    assert.equal(git.requests.filter((q) => q.path.endsWith('/git-receive-pack')).at(-1)?.user, 'student');
  });

  it('a lazy session runs the bridge with its own token, by reference only; it is warned and its work saved the same way', async () => {
    const values = { PLATFORM_URL: platform.url, PLATFORM_TOKEN, GIT_USER: 'Lou Lazy', GIT_MAIL: 'lou@example.org' };
    await createSession(r, 'lazy-1', { user: 'lou@example.com', appDefinition: 'lazy-saving', envVars: values });
    const session = await waitForSession(r, 'lazy-1', running);
    assert.notEqual(session.status?.startStrategy, 'eager', 'a lazy session, in a pod of its own');
    const pod = await eventually(async () => {
      const list = await core.listNamespacedPod({ namespace, labelSelector: `${LABELS.session}=lazy-1` });
      const ready = list.items.find((p) =>
        (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      assert.ok(ready?.status?.podIP, 'no ready pod of the lazy session yet');
      return ready;
    });
    // The pod runs the bridge on the app's port; its token comes from the session's own Secret, by reference.
    const ide = Object.fromEntries((pod.spec!.containers[0]!.env ?? []).map((e) => [e.name, e]));
    assert.equal(ide.DATA_BRIDGE_ENABLED?.value, 'true');
    assert.equal(ide.DATA_BRIDGE_PORT?.value, String(ports['lazy-saving']));
    assert.equal(ide.DATA_BRIDGE_TOKEN?.value, undefined, 'the token has no literal value');
    assert.equal(ide.DATA_BRIDGE_TOKEN?.valueFrom?.secretKeyRef?.name, 'lazy-1-env');
    // Nothing is injected into a lazy session: the session image reads the values from the environment.
    assert.equal(ide.SESSION_ENV_STRATEGY, undefined);
    const env = await containerEnvironment(pod);
    const token = env.DATA_BRIDGE_TOKEN!;
    assert.ok(token.length >= 43, 'a token of 32 random bytes');
    // Not the token of any warm instance: the session's own.
    for (const bridge of bridges.values()) assert.notEqual(token, bridge.token);
    const readable = JSON.stringify(pod);
    for (const secret of [token, PLATFORM_TOKEN]) assert.ok(!readable.includes(secret), 'a secret is in the pod spec');

    // The bridge process as the pod's entrypoint starts it, with the pod's environment.
    const { repository, workspace } = await prepareWorkspace('lazy-1');
    const bridge = await startBridge('lazy-1', {
      ...sandbox.env,
      ...env,
      DATA_BRIDGE_HOST: pod.status!.podIP!,
      WORKSPACE_DIR: workspace,
      DATA_BRIDGE_AGENT: agentPath,
    });
    bridges.set('lazy-1', { ...bridge, instance: 'lazy-1', token, workspace, repository });

    await r.sessions.patchStatus('lazy-1', { lastActivity: new Date(Date.now() - 120_000).toISOString() });
    const notice = await eventually(
      async () => {
        const held = await noticeAt(bridges.get('lazy-1')!);
        assert.ok(held, 'no notice yet');
        return held;
      },
      60_000,
      200,
    );
    assert.equal(notice.reason, 'Idle');
    assert.equal(notice.saveWork, true);
    assert.ok(notice.secondsLeft > 0 && notice.secondsLeft <= SAVE_WINDOW, `seconds left: ${notice.secondsLeft}`);
    // The Event is written after the notice (by the recorder's background writer).
    await eventually(async () => {
      const warning = (await eventsOf('lazy-1')).find((e) => e.reason === 'StopWarning');
      assert.match(warning?.message ?? '', /^the IDE was warned: Idle stop in \d+ s$/);
    });

    await gone('lazy-1');
    const saved = await eventually(
      async () => {
        const event = (await eventsOf('lazy-1')).find((e) => e.reason === 'WorkSaved' || e.reason === 'WorkNotSaved');
        assert.ok(event, 'no save Event yet');
        return event;
      },
      30_000,
      200,
    );
    assert.equal(saved.reason, 'WorkSaved', saved.message);
    const branch =
      /work saved to branch (ide-cloud\/saved-\d{8}T\d{6}Z) of http:\/\/127\.0\.0\.1:\d+\/course\/lazy-1\.git$/.exec(
        saved.message ?? '',
      )?.[1];
    assert.ok(branch, saved.message);
    const repo = path.join(git.root, repository);
    const content = await run('git', ['-C', repo, 'show', `refs/heads/${branch}:Task.java`], { env: sandbox.env });
    assert.equal(content.stdout, 'class Task { String by = "lazy-1"; }\n');
    const author = await run('git', ['-C', repo, 'log', '-1', '--format=%an', `refs/heads/${branch}`], {
      env: sandbox.env,
    });
    assert.equal(author.stdout.trim(), 'Lou Lazy', 'the identity from the pod environment');
  });

  it('no token or injected value reaches the operator log, the bridges’ output or an Event', async () => {
    const events = (await core.listNamespacedEvent({ namespace })).items.map((e) => e.message ?? '').join('\n');
    const text = [logs.join('\n'), events, ...[...bridges.values()].flatMap((b) => b.output)].join('\n');
    for (const secret of [PLATFORM_TOKEN, PARTICIPATION_TOKEN, ...[...bridges.values()].map((b) => b.token)]) {
      assert.ok(!text.includes(secret), 'a secret leaked');
    }
  });
});

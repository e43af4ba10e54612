// The service reads from informer caches: it waits for a session URL (and for a session to be gone)
// on the session cache's events instead of a watch per launch, and a launch lists no Sessions from the
// API server. Against the real kube-apiserver; the test writes the status the operator would.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session } from '../../server/src/model/session.js';
import { CachedResource } from '../../server/src/service/cache.js';
import { ApiError, ServiceStopping } from '../../server/src/service/errors.js';
import { waitForSessionGone, waitForSessionUrl } from '../../server/src/service/session-watch.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { startKubeWriteProxy, type KubeWriteProxy } from '../support/kube-write-proxy.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';
import {
  SERVICE_AUTH_TOKEN,
  applyAppDefinitions,
  call,
  operatorFillsStatus,
  resourcesOf,
  startTestService,
} from '../support/service-harness.js';

const isCode = (code: number) => (error: unknown) => error instanceof ApiError && error.code === code;

describe('waiting for a session on the session cache', function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  let namespace: string;
  let resources: IdeCloudResources;
  let cache: CachedResource<Session>;
  /** Between the cache and the API server: it records the cache's watches of the sessions. */
  let proxy: KubeWriteProxy;
  const errors: unknown[] = [];
  const watches = () => proxy.writes.length;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'svc-watch');
    resources = resourcesOf(cluster.kc, namespace);
    proxy = await startKubeWriteProxy(
      cluster.kc,
      (method, path, query) =>
        method === 'GET' && path === resources.sessions.path && new URLSearchParams(query).get('watch') === 'true',
    );
    const proxied = new k8s.KubeConfig();
    proxied.loadFromFile(proxy.kubeconfig);
    // A short renewal interval: the waits below outlive several watch connections.
    cache = new CachedResource<Session>(proxied, resources.sessions, {
      rewatchIntervalMs: 500,
      onError: (error) => errors.push(error),
    });
    cache.start();
    await cache.informer.waitForSync();
  });
  after(async () => {
    await cache?.stop();
    await proxy?.close();
    await deleteTestNamespace(cluster.kc, namespace);
  });

  const create = async (name: string, finalizers?: string[]) => {
    const session = await resources.sessions.create({
      metadata: { name, ...(finalizers ? { finalizers } : {}) },
      spec: { user: 'w@example.com', appDefinition: 'python-latest' },
    });
    cache.observe(session); // as the launcher does after its create
    return session;
  };
  const inCache = (name: string, check: (s: Session | undefined) => boolean) =>
    eventually(() => assert.ok(check(cache.get(name)), `cache state of ${name}`), 10_000, 20);

  it('resolves with the URL written later, across watch renewals', async () => {
    const session = await create('watched');
    const waiting = waitForSessionUrl(cache, session, Date.now() + 20_000);
    await resources.sessions.patchStatus('watched', { phase: 'Starting' });
    await inCache('watched', (s) => s?.status?.phase === 'Starting');
    // The informer renews its watch at least twice while the wait goes on, as the API server sees it.
    const watchesBefore = watches();
    await eventually(
      () => assert.ok(watches() >= watchesBefore + 2, `${watches() - watchesBefore} renewals, not 2`),
      10_000,
    );
    await resources.sessions.patchStatus('watched', { phase: 'Running', url: 'https://ide.example.test/watched/' });
    assert.equal(await waiting, 'https://ide.example.test/watched/');
    assert.equal(cache.get('watched')?.status?.url, 'https://ide.example.test/watched/', 'the cache has it at once');
  });

  it('answers at once for a session that is already ready, or for one the cache already shows ready', async () => {
    await create('ready');
    const ready = await resources.sessions.patchStatus('ready', { phase: 'Running', url: 'https://x.test/ready/' });
    assert.equal(await waitForSessionUrl(cache, ready, Date.now() + 1000), 'https://x.test/ready/');

    const stale = await create('ready-in-cache');
    await resources.sessions.patchStatus('ready-in-cache', { phase: 'Running', url: 'https://x.test/cached/' });
    await inCache('ready-in-cache', (s) => s?.status?.phase === 'Running');
    assert.equal(await waitForSessionUrl(cache, stale, Date.now() + 1000), 'https://x.test/cached/');
  });

  it('rejects with the operator error when the session fails', async () => {
    const session = await create('failing');
    const rejected = assert.rejects(
      waitForSessionUrl(cache, session, Date.now() + 20_000),
      (error: unknown) =>
        isCode(552)(error) && (error as ApiError).reason === 'app definition python-latest is at maxInstances (1)',
    );
    await resources.sessions.patchStatus('failing', {
      phase: 'Failed',
      error: { code: 552, reason: 'app definition python-latest is at maxInstances (1)' },
    });
    await rejected;
  });

  it('rejects with 474 when the session is deleted while waited for', async () => {
    const doomed = await create('doomed');
    const rejected = assert.rejects(waitForSessionUrl(cache, doomed, Date.now() + 20_000), isCode(474));
    await resources.sessions.delete('doomed');
    await rejected;
  });

  it('rejects with 551 at the deadline, and the wait leaves no listener behind', async () => {
    const session = await create('slow');
    const started = Date.now();
    await assert.rejects(waitForSessionUrl(cache, session, Date.now() + 500), (error: unknown) => {
      assert.ok(isCode(551)(error));
      assert.equal((error as ApiError).reason, 'the session did not become ready in time');
      return true;
    });
    const took = Date.now() - started;
    assert.ok(took >= 450 && took < 3000, `${took} ms`);
    assert.equal((cache as unknown as { waiters: Map<string, unknown> }).waiters.size, 0);
  });

  it('still resolves when the watch connection drops while waiting (the informer lists again)', async () => {
    const session = await create('dropped');
    const waiting = waitForSessionUrl(cache, session, Date.now() + 20_000);
    cache.informer.dropConnection();
    await resources.sessions.patchStatus('dropped', { phase: 'Running', url: 'https://ide.example.test/dropped/' });
    assert.equal(await waiting, 'https://ide.example.test/dropped/');

    // A status written while the connection is down reaches the waiter through the relist.
    const second = await create('dropped-twice');
    const again = waitForSessionUrl(cache, second, Date.now() + 20_000);
    cache.informer.dropConnection();
    cache.informer.dropConnection();
    await resources.sessions.patchStatus('dropped-twice', { phase: 'Running', url: 'https://x.test/twice/' });
    cache.informer.dropConnection();
    assert.equal(await again, 'https://x.test/twice/');
  });

  it('rejects with 474 when the session is replaced by another of the same name while the watch is down', async () => {
    const original = await create('replaced');
    const rejected = assert.rejects(waitForSessionUrl(cache, original, Date.now() + 20_000), isCode(474));
    cache.informer.dropConnection();
    await resources.sessions.delete('replaced');
    const replacement = await resources.sessions.create({
      metadata: { name: 'replaced' },
      spec: { user: 'other@example.com', appDefinition: 'python-latest' },
    });
    await resources.sessions.patchStatus('replaced', { phase: 'Running', url: 'https://x.test/not-yours/' });
    await rejected;
    assert.notEqual(replacement.metadata.uid, original.metadata.uid);
  });

  it('asks the API server before it believes the cache that a session is gone (the cache can lag a create)', async () => {
    // Caches that never started: they hold nothing, as a cache would that has not seen the create yet.
    const lagging = () =>
      new CachedResource<Session>(cluster.kc, resources.sessions, {
        rewatchIntervalMs: 60_000,
        onError: () => undefined,
      });
    const created = await resources.sessions.create({
      metadata: { name: 'not-in-cache' },
      spec: { user: 'w@example.com', appDefinition: 'python-latest' },
    });
    await resources.sessions.patchStatus('not-in-cache', { phase: 'Running', url: 'https://x.test/lag/' });
    assert.equal(await waitForSessionUrl(lagging(), created, Date.now() + 5000), 'https://x.test/lag/');
    // Gone for real: the GET agrees, 474.
    await resources.sessions.delete('not-in-cache');
    await assert.rejects(waitForSessionUrl(lagging(), created, Date.now() + 5000), isCode(474));
  });

  it('waits until a stopping session is gone (its finalizer first), and 551 when it does not end in time', async () => {
    const session = await create('stopping', ['ide-cloud.io/test-hold']);
    const gone = waitForSessionGone(cache, session, Date.now() + 20_000);
    let resolved = false;
    void gone.then(() => (resolved = true));
    await resources.sessions.delete('stopping');
    await inCache('stopping', (s) => Boolean(s?.metadata.deletionTimestamp));
    assert.equal(resolved, false, 'still there while its finalizer holds it');
    await assert.rejects(
      waitForSessionGone(cache, session, Date.now() + 300),
      (error: unknown) =>
        isCode(551)(error) &&
        (error as ApiError).reason === 'the previous session of this workspace did not end in time',
    );
    await resources.sessions.mergePatch('stopping', { metadata: { finalizers: null } });
    await gone;
    // Already gone: at once.
    await waitForSessionGone(cache, session, Date.now() + 1000);
  });

  it('rejects pending waits with ServiceStopping when the cache stops', async () => {
    const own = new CachedResource<Session>(cluster.kc, resources.sessions, {
      rewatchIntervalMs: 60_000,
      onError: () => undefined,
    });
    own.start();
    await own.informer.waitForSync();
    const session = await resources.sessions.create({
      metadata: { name: 'at-shutdown' },
      spec: { user: 'w@example.com', appDefinition: 'python-latest' },
    });
    own.observe(session);
    const waiting = waitForSessionUrl(own, session, Date.now() + 20_000);
    await own.stop();
    await assert.rejects(waiting, (error: unknown) => error instanceof ServiceStopping);
    await assert.rejects(waitForSessionUrl(own, session, Date.now() + 20_000), ServiceStopping);
  });
});

/** A KubeConfig that records every API request but watches (method and path), as the service makes them. */
class RecordingKubeConfig extends k8s.KubeConfig {
  readonly requests: { method: string; path: string; query: string }[] = [];
  override async applySecurityAuthentication(
    context: Parameters<k8s.KubeConfig['applySecurityAuthentication']>[0],
  ): Promise<void> {
    const url = new URL(context.getUrl());
    this.requests.push({ method: String(context.getHttpMethod()), path: url.pathname, query: url.search });
    return super.applySecurityAuthentication(context);
  }
}

describe('the service reads from its caches', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let namespace: string;
  let resources: IdeCloudResources;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'svc-cache');
    resources = resourcesOf(cluster.kc, namespace);
    await applyAppDefinitions(resources, [{}]);
  });
  after(async () => deleteTestNamespace(cluster.kc, namespace));

  it('lists Sessions, Workspaces and AppDefinitions from the API server once, at start, however many launches and listings follow', async () => {
    const kc = new RecordingKubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const service = await startTestService(kc, namespace, { sessionsPerUser: 1 });
    const paths = {
      sessions: resources.sessions.path,
      workspaces: resources.workspaces.path,
      appdefinitions: resources.appDefinitions.path,
    };
    const lists = (plural: keyof typeof paths) =>
      kc.requests.filter((r) => r.method === 'GET' && r.path === paths[plural]).length;
    try {
      // The recorder sees the informers' initial lists: a launch that listed would be counted too.
      assert.deepEqual([lists('sessions'), lists('workspaces'), lists('appdefinitions')], [1, 1, 1]);

      const launches = 6;
      for (let i = 0; i < launches; i++) {
        const user = `cached${i}@example.com`;
        const answer = call(service.url, 'POST', '/service', {
          body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition: 'python-latest', timeout: 1 },
        });
        const name = await operatorFillsStatus(resources, (_n, spec) => spec.user === user);
        const response = await answer;
        assert.equal(response.status, 200, response.text);
        // Launch, then list at once: the launch answered after the cache showed the session running.
        const listed = await call(service.url, 'GET', `/service/session/${SERVICE_AUTH_TOKEN}/${user}`);
        assert.deepEqual(
          (listed.json as { name: string; phase: string }[]).map((s) => [s.name, s.phase]),
          [[name, 'Running']],
        );
        const workspaces = await call(service.url, 'GET', `/service/workspace/${SERVICE_AUTH_TOKEN}/${user}`);
        assert.deepEqual(
          (workspaces.json as { active: boolean }[]).map((w) => w.active),
          [true],
        );
        // A second launch of the same user is refused by the limits check, read from the cache.
        const refused = await call(service.url, 'POST', '/service', {
          body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition: 'python-latest', ephemeral: true },
        });
        assert.equal(refused.status, 553, refused.text);
      }
      // Stop, then list at once: gone as it was when listings read the API server. The test plays the
      // operator, whose finalizer (set by the service) would keep it Stopping until its route is gone:
      // it takes the finalizer off first, so the delete removes the session at once.
      const user = 'cached0@example.com';
      const [session] = (await call(service.url, 'GET', `/service/session/${SERVICE_AUTH_TOKEN}/${user}`)).json as {
        name: string;
      }[];
      await resources.sessions.mergePatch(session!.name, { metadata: { finalizers: null } });
      const stopped = await call(service.url, 'DELETE', '/service/session', {
        body: { appId: SERVICE_AUTH_TOKEN, user, sessionName: session!.name },
      });
      assert.equal(stopped.json, true);
      const afterStop = await call(service.url, 'GET', `/service/session/${SERVICE_AUTH_TOKEN}/${user}`);
      assert.deepEqual(afterStop.json, []);

      const definitions = await call(service.url, 'GET', `/service/appdefinition/${SERVICE_AUTH_TOKEN}`);
      assert.equal(definitions.status, 200);
      const metrics = await call(service.url, 'GET', '/q/metrics');
      assert.match(metrics.text, /ide_cloud_sessions\{app_definition="python-latest",phase="Running"\} 5/);

      assert.deepEqual(
        [lists('sessions'), lists('workspaces'), lists('appdefinitions')],
        [1, 1, 1],
        'no launch, listing or scrape listed from the API server',
      );
      // And no per-launch GET of a session either: the launcher reads the cache after its create.
      const sessionGets = kc.requests.filter(
        (r) => r.method === 'GET' && r.path.startsWith(`${paths.sessions}/`),
      ).length;
      assert.equal(sessionGets, 0, 'no GET of a session');
    } finally {
      await service.close();
    }
    // Sanity for the recorder itself: the namespace's sessions are really there to be listed.
    assert.equal((await resources.sessions.list(`${LABELS.user}=${userLabelValue('cached1@example.com')}`)).length, 1);
  });
});

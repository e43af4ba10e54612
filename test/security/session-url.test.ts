// Attack 3 of issue 15: a session's URL was not bound to its user. The authentication proxy beside the
// IDE had an upstream and a cookie secret but no identity provider and no allowed user (warm instances
// not even the cookie secret), so whoever had the URL had the IDE. Now, with an identity provider,
// the proxy admits the session's user only: a lazy session's from its Secret, a warm instance's from
// its admission at the claim (the proxy reloads the file, it does not restart). In anonymous mode
// the URL carries a key derived from the session's secret, and only that path is routed.
//
// Real parts: the API server, the operator, oauth2-proxy (built from Go modules, run through the
// image's entrypoint with the container spec the operator wrote, its admission beside it), a real
// OpenID Connect provider, the real data bridge, and a real HTTP server as the IDE.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { MemoryLogger } from '../../extension/src/logger.js';
import { MemorySecretStorage } from '../../extension/test/fakes.js';
import { BridgeServer } from '../../extension/src/server.js';
import { EnvironmentStore } from '../../extension/src/store.js';
import { LABELS } from '../../server/src/model/api-group.js';
import {
  AUTH_PROXY_ADMISSION_DIR,
  AUTH_PROXY_CONTAINER,
  AUTH_PROXY_USERS_DIR,
} from '../../server/src/operator/auth-proxy.js';
import { AUTH_PROXY_ADMISSION_TOKEN_KEY } from '../../server/src/model/data-bridge.js';
import { ensureBinaries, freePort } from '../../scripts/cluster/control-plane.js';
import {
  startAuthProxy,
  startIngressStandIn,
  type AuthProxyProcess,
  type IngressStandIn,
} from '../support/auth-proxy.js';
import { isLoopback, screenshot } from '../support/browser.js';
import { eventually } from '../support/kube.js';
import { AUDIENCE, startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import { listenLoginProvider, type LoginProvider } from '../support/oidc-login.js';
import {
  appDefinitionSpec,
  bridgeToken,
  createSession,
  lazySessionPod,
  running,
  waitForSession,
} from '../support/operator.js';
import { useStack } from '../support/stack.js';

const WARM_APP = 'warm-ide';
const LAZY_APP = 'lazy-ide';
const IDE_PAGE = 'the IDE of this session';
const OWNER = 'ada@example.org';
const OTHER = 'mallory@example.org';
/** The installation's Secret the proxies read (charts: ide-cloud-auth-proxy). */
const SECRETS = {
  'ide-cloud-auth-proxy/cookie-secret': 'c00kie-secret-of-this-install-32',
  'ide-cloud-auth-proxy/client-secret': 'client-secret-of-the-session-proxies',
};

interface Answer {
  status: number;
  text: string;
  location: string | null;
}

function get(url: string, token?: string): Promise<Answer> {
  return fetch(url, { redirect: 'manual', headers: token ? { authorization: `Bearer ${token}` } : {} }).then(
    async (res) => ({ status: res.status, text: await res.text(), location: res.headers.get('location') }),
  );
}

/** Nobody's request got the IDE: no page of it, whatever the proxy answered instead. */
function refused(answer: Answer, why: string): void {
  assert.notEqual(answer.status, 200, why);
  assert.ok(!answer.text.includes(IDE_PAGE), `${why}: the IDE answered`);
}

describe('security: only its user opens a session URL (3)', function () {
  this.timeout(240_000);
  let idp: TestIdentityProvider;
  let ide: http.Server;
  let idePort: number;
  /** Paths the IDE was asked for, as the proxy forwarded them. */
  const served: string[] = [];
  const proxies: AuthProxyProcess[] = [];
  const dirs: string[] = [];
  let bridge: BridgeServer | undefined;

  const tempDir = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'auth-proxy-'));
    dirs.push(dir);
    return dir;
  };

  /**
   * The proxy of the first container spec named auth-proxy in `pod`, with its users' directory at
   * `usersDir`; its admission (a warm instance's) on `admission`, its token in that directory.
   */
  async function proxyOf(
    pod: k8s.V1PodSpec,
    usersDir: string,
    admission?: { address: string; tokenDir: string },
  ): Promise<AuthProxyProcess> {
    const container = pod.containers.find((c) => c.name === AUTH_PROXY_CONTAINER);
    assert.ok(container, 'the pod has the authentication proxy');
    const proxy = await startAuthProxy({
      container,
      secrets: SECRETS,
      mounts: {
        [AUTH_PROXY_USERS_DIR]: usersDir,
        ...(admission ? { [AUTH_PROXY_ADMISSION_DIR]: admission.tokenDir } : {}),
      },
      address: `127.0.0.1:${await freePort()}`,
      ...(admission ? { admissionAddress: admission.address } : {}),
    });
    proxies.push(proxy);
    return proxy;
  }

  before(async () => {
    ide = http.createServer((req, res) => {
      served.push(req.url ?? '');
      res.end(IDE_PAGE);
    });
    await new Promise<void>((resolve) => ide.listen(0, '127.0.0.1', resolve));
    idePort = (ide.address() as AddressInfo).port;
    idp = await startIdentityProvider({ owner: { email: OWNER }, other: { email: OTHER } });
  });
  const stack = useStack('sec-url', {
    apps: () => [
      appDefinitionSpec(WARM_APP, { port: idePort, minInstances: 1, maxInstances: 2 }),
      appDefinitionSpec(LAZY_APP, { port: idePort, minInstances: 0, maxInstances: 2 }),
    ],
    operator: () => ({ eagerStart: true, sessionsPerUser: 5, sessionIssuer: idp.issuer, sessionAudience: AUDIENCE }),
  });
  stack.cleanUp(async () => {
    bridge?.dispose();
    await Promise.all(proxies.map((p) => p.kill()));
    await idp?.close();
    ide?.close();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("a lazy session's proxy admits its user; another signed-in user gets 403, nobody else the IDE", async () => {
    const session = await createSession(stack.resources, 'lazy-ada', {
      user: OWNER,
      appDefinition: LAZY_APP,
      sessionSecret: 's'.repeat(32),
    });
    const ready = await waitForSession(stack.resources, 'lazy-ada', running);
    assert.equal(ready.status?.startStrategy, 'lazy-fallback');
    const url = new URL(ready.status!.url!);
    const pod = (await lazySessionPod(stack.core, stack.namespace, session.metadata.name)).spec!;
    // What the kubelet mounts: the user the session's Secret names for the proxy.
    const volume = pod.volumes!.find((v) => v.secret?.secretName === `${session.metadata.name}-env`)!;
    const secret = await stack.core.readNamespacedSecret({
      name: volume.secret!.secretName!,
      namespace: stack.namespace,
    });
    const usersDir = await tempDir();
    const item = volume.secret!.items![0]!;
    await writeFile(path.join(usersDir, item.path), Buffer.from(secret.data![item.key]!, 'base64'));
    const proxy = await proxyOf(pod, usersDir);
    const at = `${proxy.origin}${url.pathname}src/main.py?line=3`;

    refused(await get(at), 'no credentials');
    const signIn = await get(at);
    assert.ok(
      signIn.status === 403 || signIn.location?.startsWith(idp.issuer),
      `unauthenticated: a sign-in (${signIn.status} ${signIn.location})`,
    );
    refused(await get(at, 'not-a-token'), 'a made-up token');
    const exp = Math.floor(Date.now() / 1000) + 300;
    const elsewhere = await idp.signWithProviderKey({ iss: idp.issuer, email: OWNER, aud: 'another-service', exp });
    refused(await get(at, elsewhere), "the owner's token for another audience");
    const other = await get(at, await idp.token('other'));
    assert.equal(other.status, 403, `another signed-in user: ${other.status}`);
    refused(other, 'another signed-in user');

    const owner = await get(at, await idp.token('owner'));
    assert.equal(owner.status, 200, `the owner: ${owner.status} ${owner.text.slice(0, 200)}`);
    assert.equal(owner.text, IDE_PAGE);
    assert.equal(served.at(-1), '/src/main.py?line=3', 'the IDE serves from its root');
  });

  it('a claimed warm instance is bound to its user at the claim, without restarting its proxy', async () => {
    const instance = `${WARM_APP}-pool-1`;
    const pod = await eventually(
      async () => {
        const pods = await stack.core.listNamespacedPod({
          namespace: stack.namespace,
          labelSelector: `${LABELS.poolInstance}=${instance}`,
        });
        const readyPod = pods.items.find(
          (p) => p.status?.podIP && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        assert.ok(readyPod, 'a ready pod of the warm instance');
        return readyPod;
      },
      60_000,
      200,
    );
    // The proxy's volumes, as the kubelet gives them to the proxy container alone: its users file's
    // directory and its admission's token (projected from the instance's Secret).
    const ideContainer = pod.spec!.containers.find((c) => c.name !== AUTH_PROXY_CONTAINER)!;
    assert.equal(
      ideContainer.volumeMounts?.some((m) => m.mountPath.startsWith(AUTH_PROXY_USERS_DIR)),
      false,
    );
    assert.equal(
      ideContainer.env?.some((e) => e.name === 'DATA_BRIDGE_USERS_FILE'),
      false,
    );
    const usersDir = await tempDir();
    const tokenDir = await tempDir();
    const tokens = await stack.core.readNamespacedSecret({ name: `${instance}-bridge`, namespace: stack.namespace });
    await writeFile(path.join(tokenDir, 'token'), Buffer.from(tokens.data![AUTH_PROXY_ADMISSION_TOKEN_KEY]!, 'base64'));
    const admissionPort = pod
      .spec!.containers.find((c) => c.name === AUTH_PROXY_CONTAINER)!
      .ports!.find((p) => p.name === 'admission')!.containerPort;
    const proxy = await proxyOf(pod.spec!, usersDir, { address: `${pod.status!.podIP}:${admissionPort}`, tokenDir });
    const logger = new MemoryLogger();
    bridge = new BridgeServer(new EnvironmentStore(new MemorySecretStorage(), logger), logger, {
      host: pod.status!.podIP!,
      port: 16281,
      token: await bridgeToken(stack.kc, stack.namespace, instance),
    });

    // Free, the instance admits nobody: its URL would open for no one.
    const before = `${proxy.origin}/any-session/any-key/`;
    refused(await get(before, await idp.token('owner')), 'a free instance, the later owner');
    refused(await get(before, await idp.token('other')), 'a free instance, anyone');

    // Claimed while its bridge does not answer yet: the pod is Ready and routed, but its proxy admits
    // nobody, so the URL is not handed out (the student would meet a 403 there).
    await createSession(stack.resources, 'warm-ada', {
      user: OWNER,
      appDefinition: WARM_APP,
      sessionSecret: 'w'.repeat(32),
    });
    const waiting = await waitForSession(stack.resources, 'warm-ada', (s) =>
      (s.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.reason === 'UserNotAdmitted'),
    );
    assert.equal(waiting.status?.url, undefined, 'no URL while the proxy admits nobody');
    await bridge.listen();
    const handedOut = await waitForSession(stack.resources, 'warm-ada', (s) => !!s.status?.url);
    assert.ok(
      (handedOut.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
      `the status that carries the URL says the values are in and the user admitted: ${JSON.stringify(handedOut.status?.conditions)}`,
    );
    const ready = await waitForSession(
      stack.resources,
      'warm-ada',
      (s) => running(s) && (s.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
    );
    assert.equal(ready.status?.startStrategy, 'eager');
    assert.equal((await readFile(path.join(usersDir, 'users'), 'utf8')).trim(), OWNER);
    const at = `${proxy.origin}${new URL(ready.status!.url!).pathname}`;
    const owner = await eventually(async () => {
      const answer = await get(at, await idp.token('owner'));
      assert.equal(answer.status, 200, `the owner after the claim: ${answer.status}`);
      return answer;
    }, 20_000);
    assert.equal(owner.text, IDE_PAGE);
    assert.ok(
      proxy.output.join('').includes(`reloading after event`) || proxy.output.join('').includes('watching resumed'),
      'the proxy reloaded its allowed users, it did not restart',
    );
    assert.equal((await get(at, await idp.token('other'))).status, 403, 'another signed-in user');
    refused(await get(at), 'no credentials');
  });
});

describe('security: a student signs in on the session host and lands in their own session only (3)', function () {
  this.timeout(300_000);
  const SESSION_HOST = 'ide.sessions.test';
  const CHART = path.resolve(import.meta.dirname, '..', '..', 'charts', 'ide-cloud');
  let login: LoginProvider;
  let ide: http.Server;
  let helmBin: string;
  let ingress: IngressStandIn;
  const backends = new Map<string, string>();
  const proxies: AuthProxyProcess[] = [];
  let usersDir: string;

  before(async () => {
    ide = http.createServer((_req, res) => res.end(IDE_PAGE));
    await new Promise<void>((resolve) => ide.listen(0, '127.0.0.1', resolve));
    login = await listenLoginProvider();
    helmBin = path.join(await ensureBinaries('helm'), 'helm');
  });
  const stack = useStack('sec-sign-in', {
    apps: () => [appDefinitionSpec(LAZY_APP, { port: (ide.address() as AddressInfo).port, minInstances: 0 })],
    operator: () => ({
      eagerStart: false,
      sessionHost: SESSION_HOST,
      sessionScheme: 'http',
      sessionIssuer: login.issuer,
      sessionAudience: AUDIENCE,
    }),
    browser: true,
  });
  stack.cleanUp(async () => {
    await ingress?.close();
    await Promise.all(proxies.map((p) => p.kill()));
    await login?.close();
    ide?.close();
    if (usersDir) await rm(usersDir, { recursive: true, force: true });
  });

  before(async () => {
    // The chart's session sign-in and its Secret, as an installation with this provider renders them.
    const clientSecret = 'secret-of-the-session-host-client';
    const rendered = YAML.parseAllDocuments(
      (
        await promisify(execFile)(
          helmBin,
          [
            'template',
            'ide-cloud',
            CHART,
            '--namespace',
            stack.namespace,
            '--set',
            `identityProvider.issuer=${login.issuer}`,
            '--set',
            `identityProvider.audience=${AUDIENCE}`,
            '--set',
            `identityProvider.sessionClient.secret=${clientSecret}`,
            '--set',
            `operator.sessionHost=${SESSION_HOST}`,
            '--set',
            'operator.sessionScheme=http',
          ],
          { maxBuffer: 32 << 20 },
        )
      ).stdout,
    ).map((doc) => doc.toJS() as { kind?: string; metadata?: { name?: string } } | null);
    const find = <T>(kind: string, name: string) =>
      rendered.find((d) => d?.kind === kind && d.metadata?.name === name) as T;
    const secret = find<k8s.V1Secret>('Secret', 'ide-cloud-auth-proxy');
    await stack.core.createNamespacedSecret({ namespace: stack.namespace, body: secret });
    await stack.net.createNamespacedIngress({
      namespace: stack.namespace,
      body: find<k8s.V1Ingress>('Ingress', 'ide-cloud-session-sign-in'),
    });
    await login.start({
      clientId: 'ide-cloud-sessions',
      redirectUris: [`http://${SESSION_HOST}/oauth2/callback`],
      secret: clientSecret,
    });
    const secrets = Object.fromEntries(
      Object.entries(secret.data!).map(([k, v]) => [`ide-cloud-auth-proxy/${k}`, Buffer.from(v, 'base64').toString()]),
    );
    const signIn = find<k8s.V1Deployment>('Deployment', 'ide-cloud-session-sign-in');
    const signInProxy = await startAuthProxy({
      container: signIn.spec!.template.spec!.containers[0]!,
      secrets,
      mounts: {},
      address: `127.0.0.1:${await freePort()}`,
    });
    proxies.push(signInProxy);
    backends.set('ide-cloud-session-sign-in', signInProxy.origin);

    // A lazy session of ada; its proxy as the kubelet runs it, behind the route the operator wrote.
    await createSession(stack.resources, 'ada-ide', {
      user: OWNER,
      appDefinition: LAZY_APP,
      sessionSecret: 'a'.repeat(32),
    });
    await waitForSession(stack.resources, 'ada-ide', running);
    const pod = (await lazySessionPod(stack.core, stack.namespace, 'ada-ide')).spec!;
    usersDir = await mkdtemp(path.join(os.tmpdir(), 'auth-proxy-'));
    const users = await stack.core.readNamespacedSecret({ name: 'ada-ide-env', namespace: stack.namespace });
    await writeFile(path.join(usersDir, 'users'), Buffer.from(users.data!['.auth-proxy-users']!, 'base64'));
    const sessionProxy = await startAuthProxy({
      container: pod.containers.find((c) => c.name === AUTH_PROXY_CONTAINER)!,
      secrets,
      mounts: { [AUTH_PROXY_USERS_DIR]: usersDir },
      address: `127.0.0.1:${await freePort()}`,
    });
    proxies.push(sessionProxy);
    backends.set('ada-ide', sessionProxy.origin);
    ingress = await startIngressStandIn(
      async () => (await stack.net.listNamespacedIngress({ namespace: stack.namespace })).items,
      backends,
    );
  });

  /** Opens the session's URL in a fresh browser, signs in as `who`; resolves with what the page shows. */
  async function openAs(who: string): Promise<{ status: number | undefined; text: string; url: string }> {
    const url = (await stack.resources.sessions.get('ada-ide')).status!.url!;
    const context = await stack.browser.newContext({ proxy: { server: ingress.proxyServer, bypass: '127.0.0.1' } });
    const left: string[] = [];
    await context.route('**/*', (route) => {
      const target = route.request().url();
      if (isLoopback(target) || new URL(target).hostname === SESSION_HOST) return route.continue();
      left.push(target);
      return route.abort('blockedbyclient');
    });
    try {
      const page = await context.newPage();
      await page.goto(url);
      await page.waitForSelector('input[name=login]', { timeout: 30_000 });
      assert.ok(page.url().startsWith(login.issuer), 'sent to the identity provider first');
      await page.fill('input[name=login]', who);
      await page.fill('input[name=password]', 'any password');
      await page.click('button[type=submit]');
      await page.waitForSelector('input[name=prompt][value=consent]', { state: 'attached', timeout: 30_000 });
      const landed = page.waitForResponse((res) => res.url() === url, { timeout: 60_000 });
      await page.click('button[type=submit]');
      const response = await landed.catch((error: Error) => {
        const logs = proxies.flatMap((p) => p.output.join('').split('\n').slice(-10));
        throw new Error(`${error.message}; the page is at ${page.url()}; the proxies said:\n${logs.join('\n')}`);
      });
      await page.waitForLoadState();
      await screenshot(page, `session-sign-in-${who.split('@')[0]}`);
      assert.deepEqual(
        left.filter((u) => !u.startsWith('https://fonts.googleapis.com/')),
        [],
      );
      return { status: response.status(), text: await page.content(), url: page.url() };
    } finally {
      await context.close();
    }
  }

  it("the session's user signs in once and the IDE opens", async () => {
    const seen = await openAs(OWNER);
    assert.equal(seen.status, 200, seen.text.slice(0, 300));
    assert.ok(seen.text.includes(IDE_PAGE));
  });

  it('another student who signs in gets 403 at the same URL, and never the IDE', async () => {
    const seen = await openAs(OTHER);
    assert.equal(seen.status, 403);
    assert.ok(!seen.text.includes(IDE_PAGE));
  });
});

describe('security: in anonymous mode the URL key is the credential, and only its path is routed (3)', function () {
  this.timeout(180_000);
  const SESSION_HOST = 'ide.anonymous.test';
  let ide: http.Server;
  let ingress: IngressStandIn;
  let proxy: AuthProxyProcess;
  const backends = new Map<string, string>();

  before(async () => {
    ide = http.createServer((req, res) => res.end(`${IDE_PAGE} ${req.url}`));
    await new Promise<void>((resolve) => ide.listen(0, '127.0.0.1', resolve));
  });
  const stack = useStack('sec-url-key', {
    apps: () => [appDefinitionSpec(LAZY_APP, { port: (ide.address() as AddressInfo).port, minInstances: 0 })],
    operator: { eagerStart: false, sessionHost: SESSION_HOST },
  });
  before(async () => {
    ingress = await startIngressStandIn(
      async () => (await stack.net.listNamespacedIngress({ namespace: stack.namespace })).items,
      backends,
    );
  });
  stack.cleanUp(async () => {
    await proxy?.kill();
    await ingress?.close();
    ide?.close();
  });

  /** A request through the ingress stand-in (the browser's way: the session host through the proxy). */
  const through = (url: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const proxyUrl = new URL(ingress.proxyServer);
      const req = http.request(
        { host: proxyUrl.hostname, port: proxyUrl.port, path: url, headers: { host: new URL(url).host } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('opens at the URL with its key; without the key, or with another, nothing is there', async () => {
    await createSession(stack.resources, 'anon-ada', {
      user: OWNER,
      appDefinition: LAZY_APP,
      sessionSecret: 'k'.repeat(32),
    });
    const session = await waitForSession(stack.resources, 'anon-ada', running);
    const url = session.status!.url!;
    const key = new URL(url).pathname.split('/')[2]!;
    assert.match(key, /^[0-9a-f]{32}$/, 'a key of 128 bits');
    const pod = (await lazySessionPod(stack.core, stack.namespace, 'anon-ada')).spec!;
    proxy = await startAuthProxy({
      container: pod.containers.find((c) => c.name === AUTH_PROXY_CONTAINER)!,
      secrets: SECRETS,
      mounts: {},
      address: `127.0.0.1:${await freePort()}`,
    });
    backends.set('anon-ada', proxy.origin);

    const opened = await through(`${url}src/main.py`);
    assert.equal(opened.status, 200, opened.text);
    assert.equal(opened.text, `${IDE_PAGE} /src/main.py`);
    const origin = `http://${SESSION_HOST}`;
    for (const guess of [
      `${origin}/anon-ada/`,
      `${origin}/anon-ada/${'0'.repeat(32)}/`,
      `${origin}/anon-ada/x/${key}/`,
    ]) {
      const answer = await through(guess);
      assert.equal(answer.status, 404, `${guess}: ${answer.status}`);
      assert.ok(!answer.text.includes(IDE_PAGE));
    }
    // A new session of the same name (the next launch after a stop) gets another key.
    await stack.resources.sessions.delete('anon-ada');
    await eventually(async () => assert.equal((await stack.resources.sessions.list()).length, 0), 60_000);
    await createSession(stack.resources, 'anon-ada', {
      user: OWNER,
      appDefinition: LAZY_APP,
      sessionSecret: 'n'.repeat(32),
    });
    const next = await waitForSession(stack.resources, 'anon-ada', running);
    assert.notEqual(new URL(next.status!.url!).pathname.split('/')[2], key);
    assert.equal((await through(`${url}src/main.py`)).status, 404, 'the old URL opens nothing');
  });
});

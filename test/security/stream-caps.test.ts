// Issue 27, item 5: progress streams were capped per user name and in total. In anonymous mode the
// caller chooses the name, so one machine with 505 made-up users took the service's total and a real
// user got 429. Replayed against the real service and kube-apiserver, and through the real landing
// page: streams are also capped per client address (a second loopback address is a second client),
// and the landing page's `/api/progress` has caps of its own, apart from the service's.
import assert from 'node:assert/strict';
import http from 'node:http';
import { parseLandingConfig } from '../../server/src/landing/config.js';
import { startLandingPage, type RunningLandingPage } from '../../server/src/landing/server.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace } from '../support/kube.js';
import { LANDING_APPS, logSink } from '../support/landing.js';
import {
  SERVICE_AUTH_TOKEN,
  applyAppDefinitions,
  resourcesOf,
  startTestService,
  type TestService,
} from '../support/service-harness.js';

const appId = SERVICE_AUTH_TOKEN;

interface OpenStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body of a refusal (a stream's body never ends, so it is not read). */
  json?: unknown;
  close(): void;
}

/** Opens a request from `localAddress` and resolves at its answer's head (a refusal: with its body). */
function open(
  url: string,
  options: { localAddress?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const request = http.request(url, {
      method: options.method ?? 'GET',
      localAddress: options.localAddress ?? '127.0.0.1',
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...options.headers },
      timeout: 30_000,
    });
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error(`no answer from ${url}`)));
    request.on('response', (response) => {
      const close = () => request.destroy();
      if (response.statusCode === 200) {
        resolve({ status: 200, headers: response.headers, close });
        return;
      }
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, json: JSON.parse(text), close }),
      );
    });
    request.end(body);
  });
}

describe('security: progress stream caps per client (27.5)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let namespace: string;
  let service: TestService;
  const streams: OpenStream[] = [];
  const keep = (stream: OpenStream) => {
    streams.push(stream);
    return stream;
  };

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'sec-streams');
    await applyAppDefinitions(resourcesOf(cluster.kc, namespace), [{}]);
  });
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });
  after(async () => {
    await service?.close();
    await deleteTestNamespace(cluster.kc, namespace);
  });

  describe('the service', () => {
    before(async () => {
      service = await startTestService(cluster.kc, namespace, { progressStreamsPerClient: 3 });
    });
    const events = (user: string) => `${service.url}/service/session/events/${appId}/${user}/ws-${user}`;

    it('refuses the streams of one client over its cap, made-up users or not, while another client gets one', async () => {
      for (const user of ['made-up-1', 'made-up-2', 'made-up-3']) {
        assert.equal(keep(await open(events(user))).status, 200, user);
      }
      const over = keep(await open(events('made-up-4')));
      assert.equal(over.status, 429);
      assert.deepEqual(over.json, {
        code: 429,
        reason: 'too many progress streams from this client (at most 3); close one first',
      });
      assert.equal(over.headers['retry-after'], '10');
      const other = keep(await open(events('real-user'), { localAddress: '127.0.0.2' }));
      assert.equal(other.status, 200, 'another client still gets a stream');
    });

    it('does not take a client address from X-Forwarded-For unless told to trust the proxy that sent it', async () => {
      // Its own address: the streams the test before closed may still be open on the service's side.
      const spoofer = (n: number) =>
        open(events(`spoofer-${n}`), { localAddress: '127.0.0.5', headers: { 'x-forwarded-for': `198.51.100.${n}` } });
      for (const n of [1, 2, 3]) assert.equal(keep(await spoofer(n)).status, 200);
      const over = keep(await spoofer(4));
      assert.equal(over.status, 429, 'a header the caller writes is no other client');
    });
  });

  describe('the landing page', () => {
    let landing: RunningLandingPage;
    let behind: TestService;
    const proxy = '127.0.0.3'; // the ingress controller in front of the page
    const progress = (user: string, browser: string) =>
      open(`${landing.url}/api/progress`, {
        method: 'POST',
        localAddress: proxy,
        headers: { 'x-forwarded-for': browser },
        body: { parameters: { appDef: 'python-latest', gitUri: 'https://git.example.test/course.git', user } },
      });

    before(async () => {
      // A service of its own, with room for one stream beside the page's three.
      behind = await startTestService(cluster.kc, namespace, { progressStreamsTotal: 4 });
      landing = await startLandingPage(
        parseLandingConfig({
          serviceUrl: behind.url,
          serviceAuthToken: SERVICE_AUTH_TOKEN,
          apps: LANDING_APPS,
          port: 0,
          host: '127.0.0.1',
          logLevel: 'debug',
          trustProxy: proxy,
          progressStreamsPerClient: 2,
          progressStreamsTotal: 3,
        }),
        { logDestination: logSink().stream },
      );
    });
    after(async () => {
      await landing?.close();
      await behind?.close();
    });

    it('caps the streams of one browser (as its trusted proxy names it) and has a total of its own, apart from the service', async () => {
      for (const user of ['anon-1', 'anon-2']) {
        assert.equal(keep(await progress(user, '203.0.113.7')).status, 200, user);
      }
      const over = keep(await progress('anon-3', '203.0.113.7'));
      assert.equal(over.status, 429);
      assert.deepEqual(over.json, {
        code: 429,
        reason: 'too many progress streams from this client (at most 2); close one first',
      });
      assert.equal(over.headers['retry-after'], '10');
      assert.equal(keep(await progress('real-user', '203.0.113.8')).status, 200, 'another browser still gets one');

      const full = keep(await progress('anon-4', '203.0.113.9'));
      assert.equal(full.status, 429);
      assert.deepEqual(full.json, { code: 429, reason: 'too many progress streams on this page; retry later' });
      const direct = keep(
        await open(`${behind.url}/service/session/events/${appId}/platform-user/ws-p`, { localAddress: '127.0.0.4' }),
      );
      assert.equal(direct.status, 200, "the page's streams did not take all of the service's");
    });
  });
});

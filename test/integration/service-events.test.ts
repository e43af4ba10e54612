// The service's progress stream (Server-Sent Events) against the real API server: what it sends for a
// workspace's session (status changes, its Kubernetes Events, deletion), and its auth rules, which are
// those of the other session endpoints. The test plays the operator by writing Session status.
import assert from 'node:assert/strict';
import { sessionNameFor } from '../../server/src/model/names.js';
import { startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import { createSession } from '../support/operator.js';
import {
  BASE_APP,
  call,
  SERVICE_AUTH_TOKEN,
  startTestService,
  takeServerSentEvents,
  type StreamMessage as Message,
  type TestService,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

/** Reads a Server-Sent Events response until `done` holds for the messages so far, or the deadline. */
async function readStream(
  url: string,
  headers: Record<string, string>,
  until: (messages: Message[]) => boolean,
  whileOpen: (messages: Message[]) => Promise<void> = async () => undefined,
  timeoutMs = 20_000,
): Promise<{ status: number; contentType: string | null; messages: Message[] }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const response = await fetch(url, { headers, signal: controller.signal });
  const messages: Message[] = [];
  try {
    if (!response.ok || !response.body)
      return { status: response.status, contentType: response.headers.get('content-type'), messages };
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const acting = whileOpen(messages);
    let buffer = '';
    while (!until(messages)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = takeServerSentEvents(buffer + value, messages);
    }
    await acting;
    return { status: response.status, contentType: response.headers.get('content-type'), messages };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

const path = (appId: string, user: string, workspace: string) =>
  `/service/session/events/${encodeURIComponent(appId)}/${encodeURIComponent(user)}/${workspace}`;

describe('service: session progress stream (Server-Sent Events)', function () {
  this.timeout(120_000);
  const stack = useStack('svc-events', { apps: [BASE_APP] });

  describe('anonymous mode', () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(stack.kc, stack.namespace);
    });
    after(async () => {
      await service?.close();
    });

    it('streams the session of the workspace from before it exists: status changes, its events, deletion', async () => {
      const user = 'alice@example.com';
      const workspace = 'ws-python-latest-repo-alice-0000abcd';
      const sessionName = sessionNameFor(workspace);
      const secret = 'platform-token-that-must-not-appear';
      const result = await readStream(
        `${service.url}${path(SERVICE_AUTH_TOKEN, user, workspace)}`,
        {},
        (messages) => messages.some((m) => m.event === 'deleted'),
        async (seen) => {
          // An earlier event about another object of the same name must not be reported.
          await stack.core.createNamespacedEvent({
            namespace: stack.namespace,
            body: {
              metadata: { name: `${sessionName}.old` },
              involvedObject: { kind: 'Session', name: sessionName, namespace: stack.namespace, uid: 'an-older-uid' },
              reason: 'Old',
              message: 'from an earlier session',
              type: 'Normal',
            },
          });
          await stack.resources.workspaces.create({
            metadata: { name: workspace },
            spec: { user, appDefinition: 'python-latest' },
          });
          const session = await createSession(stack.resources, sessionName, {
            user,
            appDefinition: 'python-latest',
            workspace,
            envVars: { PLATFORM_TOKEN: secret },
            sessionSecret: 'session-secret-that-must-not-appear',
          });
          await stack.resources.sessions.patchStatus(sessionName, { phase: 'Starting', startStrategy: 'lazy' });
          await stack.core.createNamespacedEvent({
            namespace: stack.namespace,
            body: {
              metadata: { name: `${sessionName}.new` },
              involvedObject: {
                kind: 'Session',
                name: sessionName,
                namespace: stack.namespace,
                uid: session.metadata.uid,
              },
              reason: 'LazyStart',
              message: 'starting lazily',
              type: 'Normal',
            },
          });
          await stack.resources.sessions.patchStatus(sessionName, {
            phase: 'Running',
            url: `http://ide.example.test/${sessionName}/`,
          });
          // Wait until the stream has seen Running and the Event before deleting, so the order is fixed:
          // Sessions and Events come on two watches, and the Event's watch can lag behind the Session's.
          const deadline = Date.now() + 10_000;
          const seenBoth = () =>
            seen.some((m) => m.data.phase === 'Running') && seen.some((m) => m.data.reason === 'LazyStart');
          while (!seenBoth() && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          await stack.resources.sessions.delete(sessionName);
        },
      );
      assert.equal(result.status, 200);
      assert.match(result.contentType ?? '', /^text\/event-stream/);
      const phases = result.messages.filter((m) => m.event === 'session').map((m) => m.data.phase ?? 'none');
      const distinct = phases.filter((p, i) => p !== phases[i - 1]);
      assert.deepEqual(distinct.slice(distinct.indexOf('Starting')), ['Starting', 'Running']);
      const events = result.messages.filter((m) => m.event === 'event');
      assert.deepEqual(
        events.map((e) => e.data.reason),
        ['LazyStart'],
      );
      assert.equal(result.messages.at(-1)!.event, 'deleted');
      const text = JSON.stringify(result.messages);
      assert.ok(!text.includes(secret) && !text.includes('session-secret-that-must-not-appear'));
    });

    it("refuses a wrong appId (470), a blank user (400), another user's workspace or session (403)", async () => {
      await stack.resources.workspaces.create({
        metadata: { name: 'ws-bob-1' },
        spec: { user: 'bob@example.com', appDefinition: 'python-latest' },
      });
      assert.equal(
        (await call(service.url, 'GET', path('wrong-app-id-123', 'bob@example.com', 'ws-bob-1'))).status,
        470,
      );
      assert.equal((await call(service.url, 'GET', path(SERVICE_AUTH_TOKEN, ' ', 'ws-bob-1'))).status, 400);
      const other = await call(service.url, 'GET', path(SERVICE_AUTH_TOKEN, 'carol@example.com', 'ws-bob-1'));
      assert.equal(other.status, 403);
      assert.deepEqual(other.json, { code: 403, reason: 'the workspace belongs to another user' });
      await createSession(stack.resources, sessionNameFor('ws-gone'), {
        user: 'bob@example.com',
        appDefinition: 'python-latest',
      });
      assert.equal(
        (await call(service.url, 'GET', path(SERVICE_AUTH_TOKEN, 'carol@example.com', 'ws-gone'))).status,
        403,
      );
      assert.equal(
        (await call(service.url, 'GET', path(SERVICE_AUTH_TOKEN, 'bob@example.com', 'Not_A_Name'))).status,
        471,
      );
    });
  });

  describe('caps', () => {
    let service: TestService;
    before(async () => {
      service = await startTestService(stack.kc, stack.namespace, {
        progressStreamsPerUser: 2,
        progressStreamsTotal: 3,
        progressStreamMaxSeconds: 1.5,
      });
    });
    after(async () => {
      await service?.close();
    });

    /** Opens a stream and keeps it open until `close()`. */
    async function open(user: string, workspace = 'ws-capped') {
      const controller = new AbortController();
      const response = await fetch(`${service.url}${path(SERVICE_AUTH_TOKEN, user, workspace)}`, {
        signal: controller.signal,
      });
      if (!response.ok) {
        return {
          status: response.status,
          body: await response.json(),
          retryAfter: response.headers.get('retry-after'),
        };
      }
      return { status: response.status, response, close: () => controller.abort() };
    }

    it('answers 429 over the streams per user and over the streams in total, and admits again once one closes', async () => {
      const first = await open('ursula@example.com');
      const second = await open('ursula@example.com');
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      const third = await open('ursula@example.com');
      assert.equal(third.status, 429);
      assert.deepEqual(third.body, {
        code: 429,
        reason: 'too many progress streams of this user (at most 2); close one first',
      });
      assert.ok(Number(third.retryAfter) > 0);
      const other = await open('victor@example.com');
      assert.equal(other.status, 200);
      const overTotal = await open('wendy@example.com');
      assert.equal(overTotal.status, 429);
      assert.deepEqual(overTotal.body, { code: 429, reason: 'too many progress streams on this service; retry later' });

      first.close?.();
      const deadline = Date.now() + 5000;
      let again = await open('ursula@example.com');
      while (again.status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        again = await open('ursula@example.com');
      }
      assert.equal(again.status, 200);
      for (const stream of [second, other, again]) stream.close?.();
    });

    it('ends a stream after its maximum duration (the EventSource then reconnects)', async () => {
      const started = Date.now();
      const stream = await open('xavier@example.com');
      assert.equal(stream.status, 200);
      const reader = stream.response!.body!.getReader();
      while (!(await reader.read()).done) {
        /* read until the service ends the stream */
      }
      const ms = Date.now() - started;
      assert.ok(ms >= 1400 && ms < 10_000, `ended after ${ms} ms`);
      // The ended stream no longer counts: the user may open two again.
      const deadline = Date.now() + 5000;
      let a = await open('xavier@example.com');
      while (a.status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        a = await open('xavier@example.com');
      }
      const b = await open('xavier@example.com');
      assert.deepEqual([a.status, b.status], [200, 200]);
      a.close?.();
      b.close?.();
    });
  });

  describe('identity-provider mode', () => {
    let idp: TestIdentityProvider;
    let service: TestService;
    before(async () => {
      idp = await startIdentityProvider({ dora: { email: 'dora@example.com' }, erin: { email: 'erin@example.com' } });
      service = await startTestService(stack.kc, stack.namespace, {
        identityProvider: { issuer: idp.issuer, audience: idp.audience },
      });
      await stack.resources.workspaces.create({
        metadata: { name: 'ws-dora-1' },
        spec: { user: 'dora@example.com', appDefinition: 'python-latest' },
      });
    });
    after(async () => {
      await service?.close();
      await idp?.close();
    });

    it('needs a bearer token of the workspace owner', async () => {
      const url = path(SERVICE_AUTH_TOKEN, 'dora@example.com', 'ws-dora-1');
      assert.equal((await call(service.url, 'GET', url)).status, 401);
      const erin = { authorization: `Bearer ${await idp.token('erin')}` };
      assert.equal((await call(service.url, 'GET', url, { headers: erin })).status, 403);
      assert.equal(
        (await call(service.url, 'GET', path(SERVICE_AUTH_TOKEN, 'erin@example.com', 'ws-dora-1'), { headers: erin }))
          .status,
        403,
      );
      const dora = { authorization: `Bearer ${await idp.token('dora')}` };
      const own = await readStream(`${service.url}${url}`, dora, () => true);
      assert.equal(own.status, 200);
    });
  });
});

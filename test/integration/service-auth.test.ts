// The auth matrix of the REST service: every endpoint × {no token, bad token, other user's token,
// admin, wrong appId, anonymous mode}, generated from one table, against a real OpenID Connect
// provider (oidc-provider issuing real JWTs) and the real kube-apiserver.
import assert from 'node:assert/strict';
import { generateKeyPair, SignJWT } from 'jose';
import { LABELS } from '../../server/src/model/api-group.js';
import { configStoreName, userLabelValue } from '../../server/src/model/names.js';
import * as k8s from '@kubernetes/client-node';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace } from '../support/kube.js';
import { AUDIENCE, startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import {
  ADMIN_API_TOKEN,
  SERVICE_AUTH_TOKEN,
  applyAppDefinitions,
  call,
  operatorFillsStatus,
  resourcesOf,
  startTestService,
  type TestService,
} from '../support/service-harness.js';

const ALICE = 'alice@example.com';
const SESSION = 'session-alice-matrix';
const SECRET = 'matrix-session-secret';

type Kind = 'public' | 'user' | 'owner' | 'adminPing' | 'adminToken';
type Column = 'noToken' | 'badToken' | 'otherUser' | 'admin' | 'wrongAppId' | 'anonymous';
const COLUMNS: Column[] = ['noToken', 'badToken', 'otherUser', 'admin', 'wrongAppId', 'anonymous'];

interface Endpoint {
  method: string;
  path: (appId: string) => string;
  body?: (appId: string) => Record<string, unknown>;
  kind: Kind;
  /** The status once auth has passed (the request is otherwise well-formed). */
  pass: number;
  /** Whether the request carries an appId at all. */
  hasAppId?: boolean;
}

// One row per endpoint of the spec's table. `pass` is chosen so a passing request changes nothing
// that the next rows need (unknown app definition for launches, an unknown workspace to delete, …).
const ENDPOINTS: Endpoint[] = [
  { method: 'GET', path: (a) => `/service/${a}`, kind: 'public', pass: 200 },
  {
    method: 'POST',
    path: () => '/service',
    body: (a) => ({ appId: a, user: ALICE, appDefinition: 'no-such-app' }),
    kind: 'user',
    pass: 473,
  },
  { method: 'GET', path: (a) => `/service/appdefinition/${a}`, kind: 'public', pass: 200 },
  { method: 'GET', path: (a) => `/service/admin/${a}`, kind: 'adminPing', pass: 200 },
  { method: 'GET', path: () => '/service/admin/appdefinition', kind: 'adminToken', pass: 200, hasAppId: false },
  {
    method: 'GET',
    path: () => '/service/admin/appdefinition/python-latest',
    kind: 'adminToken',
    pass: 200,
    hasAppId: false,
  },
  {
    method: 'PATCH',
    path: () => '/service/admin/appdefinition/python-latest',
    body: (a) => ({ appId: a, minInstances: 0 }),
    kind: 'adminToken',
    pass: 200,
  },
  { method: 'GET', path: (a) => `/service/workspace/${a}/${encodeURIComponent(ALICE)}`, kind: 'user', pass: 200 },
  {
    method: 'POST',
    path: () => '/service/workspace',
    body: (a) => ({ appId: a, user: ALICE, appDefinition: 'no-such-app' }),
    kind: 'user',
    pass: 473,
  },
  {
    method: 'DELETE',
    path: () => '/service/workspace',
    body: (a) => ({ appId: a, user: ALICE, workspaceName: 'ws-not-there' }),
    kind: 'user',
    pass: 471,
  },
  { method: 'GET', path: (a) => `/service/session/${a}/${encodeURIComponent(ALICE)}`, kind: 'user', pass: 200 },
  {
    method: 'POST',
    path: () => '/service/session',
    body: (a) => ({ appId: a, user: ALICE, appDefinition: 'no-such-app' }),
    kind: 'user',
    pass: 473,
  },
  {
    method: 'DELETE',
    path: () => '/service/session',
    body: (a) => ({ appId: a, user: ALICE, sessionName: 'session-not-there' }),
    kind: 'user',
    pass: 200,
  },
  {
    method: 'PATCH',
    path: () => '/service/session',
    body: (a) => ({ appId: a, sessionName: SESSION }),
    kind: 'owner',
    pass: 200,
  },
  { method: 'GET', path: (a) => `/service/session/performance/${a}/${SESSION}`, kind: 'owner', pass: 521 },
  {
    method: 'POST',
    path: () => `/service/session/${SESSION}/config`,
    body: (a) => ({ appId: a, key: 'theme', value: 'dark' }),
    kind: 'owner',
    pass: 204,
  },
];

/** The expected status of every cell, from the endpoint's kind. */
function expected(endpoint: Endpoint, column: Column): number {
  const appIdChecked = endpoint.hasAppId !== false;
  const table: Record<Kind, Record<Column, number>> = {
    public: { noToken: 0, badToken: 0, otherUser: 0, admin: 0, wrongAppId: 470, anonymous: 0 },
    user: { noToken: 401, badToken: 401, otherUser: 403, admin: 403, wrongAppId: 470, anonymous: 0 },
    owner: { noToken: 401, badToken: 401, otherUser: 403, admin: 403, wrongAppId: 470, anonymous: 0 },
    adminPing: { noToken: 401, badToken: 401, otherUser: 403, admin: 0, wrongAppId: 470, anonymous: 0 },
    adminToken: {
      noToken: 401,
      badToken: 403,
      otherUser: 401,
      admin: 0,
      wrongAppId: appIdChecked ? 470 : 0,
      anonymous: 0,
    },
  };
  return table[endpoint.kind][column] || endpoint.pass;
}

describe('service auth matrix (oidc-provider + kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let namespace: string;
  let idp: TestIdentityProvider;
  let identity: TestService;
  let anonymous: TestService;
  const tokens: Record<string, string> = {};

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'svc-auth');
    const resources = resourcesOf(cluster.kc, namespace);
    await applyAppDefinitions(resources, [{}]);
    await resources.sessions.create({
      metadata: { name: SESSION, labels: { [LABELS.user]: userLabelValue(ALICE) } },
      spec: { user: ALICE, appDefinition: 'python-latest', sessionSecret: SECRET },
    });
    await cluster.kc.makeApiClient(k8s.CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: configStoreName(SESSION) }, data: {} },
    });
    idp = await startIdentityProvider({
      alice: { email: ALICE },
      bob: { email: 'bob@example.com' },
      root: { email: 'root@example.com', groups: ['admin'] },
      brief: { email: ALICE, ttlSeconds: 3 },
    });
    for (const client of ['alice', 'bob', 'root']) tokens[client] = await idp.token(client);
    identity = await startTestService(cluster.kc, namespace, {
      identityProvider: { issuer: idp.issuer, audience: AUDIENCE },
    });
    anonymous = await startTestService(cluster.kc, namespace);
  });
  after(async () => {
    await identity?.close();
    await anonymous?.close();
    await idp?.close();
    await deleteTestNamespace(cluster.kc, namespace);
  });

  function requestFor(endpoint: Endpoint, column: Column) {
    const appId = column === 'wrongAppId' ? 'not-the-service-token' : SERVICE_AUTH_TOKEN;
    const headers: Record<string, string> = {};
    const bearer: Partial<Record<Column, string>> = {
      badToken: 'not.a.jwt',
      otherUser: tokens.bob!,
      admin: tokens.root!,
      wrongAppId: tokens.alice!,
    };
    if (bearer[column]) headers.authorization = `Bearer ${bearer[column]}`;
    if (endpoint.kind === 'adminToken') {
      if (column === 'badToken') headers['x-admin-api-token'] = 'wrong-admin-token';
      if (column === 'admin' || column === 'wrongAppId' || column === 'anonymous') {
        headers['x-admin-api-token'] = ADMIN_API_TOKEN;
      }
    }
    if (column === 'anonymous' && endpoint.kind === 'adminPing') headers['x-admin-api-token'] = ADMIN_API_TOKEN;
    return { path: endpoint.path(appId), body: endpoint.body?.(appId), headers };
  }

  for (const endpoint of ENDPOINTS) {
    for (const column of COLUMNS) {
      const want = expected(endpoint, column);
      it(`${endpoint.method} ${endpoint.path('{appId}')} × ${column} → ${want}`, async () => {
        const { path, body, headers } = requestFor(endpoint, column);
        const base = column === 'anonymous' ? anonymous.url : identity.url;
        const answer = await call(base, endpoint.method, path, { body, headers });
        assert.equal(answer.status, want, answer.text);
        if (want >= 400) {
          assert.equal((answer.json as { code: number }).code, want);
          assert.equal(typeof (answer.json as { reason: unknown }).reason, 'string');
        }
      });
    }
  }

  describe('bearer tokens', () => {
    const list = `/service/session/${SERVICE_AUTH_TOKEN}/${encodeURIComponent(ALICE)}`;

    it('accepts a valid token and defaults the user to its e-mail claim', async () => {
      const answer = await call(identity.url, 'POST', '/service/workspace', {
        body: { appId: SERVICE_AUTH_TOKEN, user: '', label: 'from the token' },
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal((answer.json as { user: string }).user, ALICE);
    });

    it('launches for the token user when the request names none', async () => {
      const launching = await startTestService(cluster.kc, namespace, {
        identityProvider: { issuer: idp.issuer, audience: AUDIENCE },
        sessionsPerUser: 5,
      });
      try {
        const resources = resourcesOf(cluster.kc, namespace);
        const answer = call(launching.url, 'POST', '/service', {
          body: { appId: SERVICE_AUTH_TOKEN, appDefinition: 'python-latest', ephemeral: true },
          headers: { authorization: `Bearer ${tokens.alice}` },
        });
        const name = await operatorFillsStatus(resources, (n, spec) => n !== SESSION && spec.user === ALICE);
        const response = await answer;
        assert.equal(response.status, 200, response.text);
        assert.equal((await resources.sessions.get(name)).spec.user, ALICE);
        await resources.sessions.delete(name);
      } finally {
        await launching.close();
      }
    });

    it('refuses an expired token with 401', async () => {
      const short = await idp.token('brief');
      assert.equal(
        (await call(identity.url, 'GET', list, { headers: { authorization: `Bearer ${short}` } })).status,
        200,
      );
      await new Promise((resolve) => setTimeout(resolve, 4100));
      const answer = await call(identity.url, 'GET', list, { headers: { authorization: `Bearer ${short}` } });
      assert.equal(answer.status, 401);
      assert.deepEqual(answer.json, { code: 401, reason: 'bearer token expired' });
    });

    it('refuses a token signed by a key the issuer does not publish, or for another audience', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await new SignJWT({ email: ALICE })
        .setProtectedHeader({ alg: 'RS256', kid: 'key-1' })
        .setIssuer(idp.issuer)
        .setAudience(AUDIENCE)
        .setExpirationTime('5m')
        .sign(privateKey);
      const forgedAnswer = await call(identity.url, 'GET', list, { headers: { authorization: `Bearer ${forged}` } });
      assert.equal(forgedAnswer.status, 401);

      const strict = await startTestService(cluster.kc, namespace, {
        identityProvider: { issuer: idp.issuer, audience: 'urn:another-service' },
      });
      try {
        const answer = await call(strict.url, 'GET', list, { headers: { authorization: `Bearer ${tokens.alice}` } });
        assert.equal(answer.status, 401);
      } finally {
        await strict.close();
      }
    });

    it('reads the admin group from a configurable claim', async () => {
      const custom = await startTestService(cluster.kc, namespace, {
        identityProvider: { issuer: idp.issuer, audience: AUDIENCE, adminClaim: 'groups', adminGroup: 'operators' },
      });
      try {
        const answer = await call(custom.url, 'GET', `/service/admin/${SERVICE_AUTH_TOKEN}`, {
          headers: { authorization: `Bearer ${tokens.root}` },
        });
        assert.equal(answer.status, 403, 'root is in "admin", not in "operators"');
      } finally {
        await custom.close();
      }
    });

    it('follows key rotation: a token signed by a new key of the same issuer is accepted', async () => {
      const port = Number(new URL(idp.issuer).port);
      const service = await startTestService(cluster.kc, namespace, {
        identityProvider: { issuer: idp.issuer, audience: AUDIENCE, jwksCooldownSeconds: 0 },
      });
      try {
        const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
        assert.equal((await call(service.url, 'GET', list, auth(tokens.alice!))).status, 200, 'old key set cached');
        await idp.close();
        // The same issuer restarts with a new signing key first; the service knows only the old set.
        idp = await startIdentityProvider({ alice: { email: ALICE } }, { port, kids: ['key-2', 'key-1'] });
        const rotated = await idp.token('alice');
        const answer = await call(service.url, 'GET', list, auth(rotated));
        assert.equal(answer.status, 200, answer.text);
      } finally {
        await service.close();
      }
    });
  });
});

// The REST service's errors, admin scaling rules, config store, performance and machine-facing extras,
// against the real kube-apiserver, in anonymous mode.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../server/src/model/api-group.js';
import { configStoreName, userLabelValue } from '../../server/src/model/names.js';
import {
  ADMIN_API_TOKEN,
  APP_DEFINITION_DEFAULTS,
  BASE_APP,
  SERVICE_AUTH_TOKEN,
  call,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const admin = { 'x-admin-api-token': ADMIN_API_TOKEN };

describe('service API on the real kube-apiserver', function () {
  const stack = useStack('svc-api', {
    apps: [
      BASE_APP,
      { ...BASE_APP, name: 'with-sidecar', sidecars: [{ name: 'db', image: 'postgres:16', mountWorkspace: true }] },
      { ...BASE_APP, name: 'scaled', minInstances: 2, maxInstances: 5 },
    ],
    service: { bodyLimit: '16kb' },
  });
  this.timeout(60_000);

  describe("every row of the spec's Errors table", () => {
    it('400: ephemeral is true and the app definition has workspace-mounting sidecars', async () => {
      const answer = await call(stack.service.url, 'POST', '/service', {
        body: { appId, user: 'a@example.com', appDefinition: 'with-sidecar', ephemeral: true },
      });
      assert.equal(answer.status, 400);
      assert.deepEqual(answer.json, {
        code: 400,
        reason: 'the app definition has workspace-mounting sidecars: use a workspace-backed launch',
      });
    });

    for (const user of ['', '   ', undefined]) {
      it(`400: anonymous mode and user blank (${JSON.stringify(user)})`, async () => {
        const answer = await call(stack.service.url, 'POST', '/service', {
          body: { appId, appDefinition: 'python-latest', ...(user === undefined ? {} : { user }) },
        });
        assert.equal(answer.status, 400);
        assert.deepEqual(answer.json, { code: 400, reason: 'user is required in anonymous mode' });
      });
    }

    it('400: anonymous mode and a blank user in a path', async () => {
      const answer = await call(stack.service.url, 'GET', `/service/session/${appId}/%20`);
      assert.deepEqual(answer.json, { code: 400, reason: 'user is required in anonymous mode' });
    });

    it('400: admin update violates the validation rules (see the admin PATCH tests)', async () => {
      const answer = await call(stack.service.url, 'PATCH', '/service/admin/appdefinition/scaled', {
        body: {},
        headers: admin,
      });
      assert.equal(answer.status, 400);
    });

    it('403: identity provider enabled and user differs from the token e-mail (auth matrix, otherUser column)', async () => {
      // Covered cell by cell in service-auth.test.ts; here the same rule on the anonymous side does not apply.
      const answer = await call(
        stack.service.url,
        'GET',
        `/service/session/${appId}/${encodeURIComponent('x@example.com')}`,
      );
      assert.equal(answer.status, 200);
    });

    it('470: appId differs from the service auth token, in a path and in a body', async () => {
      const inPath = await call(stack.service.url, 'GET', '/service/not-the-token');
      assert.deepEqual(inPath.json, { code: 470, reason: 'invalid app id' });
      const inBody = await call(stack.service.url, 'POST', '/service', {
        body: { appId: 'not-the-token', user: 'a@example.com', appDefinition: 'python-latest' },
      });
      assert.deepEqual(inBody.json, { code: 470, reason: 'invalid app id' });
    });
  });

  describe('the further error codes of DESIGN.md', () => {
    it('400 with details for a body that is not the model', async () => {
      const answer = await call(stack.service.url, 'POST', '/service', {
        body: { appId, user: 'a@example.com', appDefinition: 7, ephemeral: 'yes', surprise: true },
      });
      assert.equal(answer.status, 400);
      const body = answer.json as { code: number; reason: string; details: { path: string; message: string }[] };
      assert.equal(body.code, 400);
      assert.equal(body.reason, 'invalid request body');
      // The unknown field is ignored (tolerant reader); the known ones keep their validation.
      assert.deepEqual(body.details.map((d) => d.path).sort(), ['appDefinition', 'ephemeral']);
    });

    it('400 for a body that is not JSON', async () => {
      const answer = await call(stack.service.url, 'POST', '/service', { rawBody: '{"appId":' });
      assert.deepEqual(answer.json, { code: 400, reason: 'request body is not valid JSON' });
    });

    it('413 for a body over the size limit', async () => {
      const answer = await call(stack.service.url, 'POST', '/service', {
        body: { appId, user: 'a', appDefinition: 'python-latest', env: { fromMap: { BIG: 'x'.repeat(20_000) } } },
      });
      assert.equal(answer.status, 413);
      assert.deepEqual(answer.json, { code: 413, reason: 'request body too large' });
    });

    it('471 for an unknown workspace, 473 for an unknown app definition, 474 for an unknown session', async () => {
      const user = 'codes@example.com';
      const ws = await call(stack.service.url, 'DELETE', '/service/workspace', {
        body: { appId, user, workspaceName: 'ws-unknown' },
      });
      assert.deepEqual(ws.json, { code: 471, reason: 'unknown workspace' });
      const ad = await call(stack.service.url, 'POST', '/service/workspace', {
        body: { appId, user, appDefinition: 'nope' },
      });
      assert.deepEqual(ad.json, { code: 473, reason: 'unknown app definition' });
      const session = await call(stack.service.url, 'PATCH', '/service/session', {
        body: { appId, sessionName: 'nope' },
      });
      assert.deepEqual(session.json, { code: 474, reason: 'unknown session' });
      const invalid = await call(stack.service.url, 'GET', `/service/session/performance/${appId}/Not%20A%20Name`);
      assert.deepEqual(invalid.json, { code: 474, reason: 'invalid session name' });
    });

    it('404 in the error body for an unknown endpoint', async () => {
      const answer = await call(stack.service.url, 'GET', '/service/no/such/endpoint/here');
      assert.deepEqual(answer.json, { code: 404, reason: 'no such endpoint' });
    });
  });

  describe('admin app definitions', () => {
    const patch = (name: string, body: unknown) =>
      call(stack.service.url, 'PATCH', `/service/admin/appdefinition/${name}`, { body, headers: admin });

    it('lists app definitions with scaling values and reads one', async () => {
      const list = await call(stack.service.url, 'GET', '/service/admin/appdefinition', { headers: admin });
      assert.deepEqual(list.json, [
        { appDefinitionName: 'python-latest', minInstances: 0, maxInstances: 1000 },
        { appDefinitionName: 'scaled', minInstances: 2, maxInstances: 5 },
        { appDefinitionName: 'with-sidecar', minInstances: 0, maxInstances: 1000 },
      ]);
      const one = await call(stack.service.url, 'GET', '/service/admin/appdefinition/scaled', { headers: admin });
      assert.deepEqual(one.json, { appDefinitionName: 'scaled', minInstances: 2, maxInstances: 5 });
      const unknown = await call(stack.service.url, 'GET', '/service/admin/appdefinition/nope', { headers: admin });
      assert.equal(unknown.status, 473);
    });

    const rejected: [string, unknown][] = [
      ['no field present', {}],
      ['only appId present', { appId }],
      ['negative minInstances', { minInstances: -1 }],
      ['negative maxInstances', { maxInstances: -3 }],
      ['minInstances greater than maxInstances', { minInstances: 4, maxInstances: 3 }],
      ['minInstances above the stored maxInstances', { minInstances: 6 }],
      ['maxInstances below the stored minInstances', { maxInstances: 1 }],
      ['a fraction', { minInstances: 1.5 }],
      ['a string', { minInstances: '2' }],
      ['an unknown field without a known one', { replicas: 3 }],
    ];
    for (const [rule, body] of rejected) {
      it(`PATCH rejects ${rule} with 400 and changes nothing`, async () => {
        const answer = await patch('scaled', body);
        assert.equal(answer.status, 400, answer.text);
        assert.equal((answer.json as { code: number }).code, 400);
        const stored = await stack.resources.appDefinitions.get('scaled');
        assert.deepEqual([stored.spec.minInstances, stored.spec.maxInstances], [2, 5]);
      });
    }

    it('PATCH accepts one field, both fields, equal values, and null max (unbounded)', async () => {
      assert.deepEqual((await patch('python-latest', { minInstances: 1 })).json, {
        appDefinitionName: 'python-latest',
        minInstances: 1,
        maxInstances: 1000,
      });
      assert.deepEqual((await patch('python-latest', { minInstances: 3, maxInstances: 3 })).json, {
        appDefinitionName: 'python-latest',
        minInstances: 3,
        maxInstances: 3,
      });
      assert.deepEqual((await patch('python-latest', { appId, maxInstances: null })).json, {
        appDefinitionName: 'python-latest',
        minInstances: 3,
        maxInstances: null,
      });
      const stored = await stack.resources.appDefinitions.get('python-latest');
      assert.equal(stored.spec.maxInstances, null, 'null is stored, not replaced by the default');
      assert.deepEqual((await patch('python-latest', { minInstances: 50 })).json, {
        appDefinitionName: 'python-latest',
        minInstances: 50,
        maxInstances: null,
      });
      assert.deepEqual((await patch('python-latest', { minInstances: 0, maxInstances: 1000 })).json, {
        appDefinitionName: 'python-latest',
        minInstances: 0,
        maxInstances: 1000,
      });
    });

    it('PATCH of an unknown app definition is 473', async () => {
      assert.equal((await patch('nope', { minInstances: 1 })).status, 473);
    });
  });

  describe('app definitions, config store, performance', () => {
    it('lists the app definitions without secrets', async () => {
      const answer = await call(stack.service.url, 'GET', `/service/appdefinition/${appId}`);
      const items = answer.json as Record<string, unknown>[];
      assert.deepEqual(
        items.map((i) => i.name),
        ['python-latest', 'scaled', 'with-sidecar'],
      );
      assert.deepEqual(items[0], {
        name: 'python-latest',
        image: 'ide-cloud/session-python:latest',
        ...APP_DEFINITION_DEFAULTS,
        port: 3000,
        ingressname: 'ide-cloud-sessions',
        options: { dataBridgeEnabled: 'true' },
      });
    });

    it('merges a key into the session config store (204) and answers 580 without one', async () => {
      const user = 'config@example.com';
      for (const name of ['with-store', 'without-store']) {
        await stack.resources.sessions.create({
          metadata: { name, labels: { [LABELS.user]: userLabelValue(user) } },
          spec: { user, appDefinition: 'python-latest' },
        });
      }
      const core = stack.kc.makeApiClient(k8s.CoreV1Api);
      await core.createNamespacedConfigMap({
        namespace: stack.namespace,
        body: { metadata: { name: configStoreName('with-store') }, data: { existing: 'kept' } },
      });
      const set = await call(stack.service.url, 'POST', '/service/session/with-store/config', {
        body: { appId, key: 'editor.fontSize', value: '14' },
      });
      assert.equal(set.status, 204);
      const store = await core.readNamespacedConfigMap({
        name: configStoreName('with-store'),
        namespace: stack.namespace,
      });
      assert.deepEqual(store.data, { existing: 'kept', 'editor.fontSize': '14' });

      const missing = await call(stack.service.url, 'POST', '/service/session/without-store/config', {
        body: { appId, key: 'k', value: 'v' },
      });
      assert.deepEqual(missing.json, { code: 580, reason: 'the session has no config store' });
      const badKey = await call(stack.service.url, 'POST', '/service/session/with-store/config', {
        body: { appId, key: 'no/slash', value: 'v' },
      });
      assert.equal(badKey.status, 400);
    });

    it('answers 521 for performance when the metrics API is not available', async () => {
      const user = 'perf@example.com';
      await stack.resources.sessions.create({
        metadata: { name: 'perf-session', labels: { [LABELS.user]: userLabelValue(user) } },
        spec: { user, appDefinition: 'python-latest' },
      });
      const answer = await call(stack.service.url, 'GET', `/service/session/performance/${appId}/perf-session`);
      assert.deepEqual(answer.json, { code: 521, reason: 'the metrics API is not available' });
    });
  });

  describe('machine-facing extras', () => {
    it('serves an OpenAPI 3.1 description of all 16 endpoints and the progress stream, generated from the models', async () => {
      const answer = await call(stack.service.url, 'GET', '/openapi.json');
      const document = answer.json as {
        openapi: string;
        components: { schemas: Record<string, Record<string, unknown>> };
        paths: Record<
          string,
          Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> } }>
        >;
      };
      assert.equal(document.openapi, '3.1.0');
      const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
      );
      // The spec's 16 endpoints and the landing page's progress stream.
      assert.equal(operations.length, 16 + 1);
      assert.ok(operations.includes('GET /service/session/events/{appId}/{user}/{workspaceName}'), operations.join());
      const ref = document.paths['/service']!.post!.requestBody!.content['application/json']!.schema.$ref;
      assert.equal(ref, '#/components/schemas/LaunchRequest');
      const launch = document.components.schemas.LaunchRequest!;
      assert.deepEqual((launch.required as string[]).sort(), ['appDefinition', 'appId']);
      assert.equal(launch.additionalProperties, true, 'unknown fields are ignored, and the description says so');
    });

    it('serves a human page for it', async () => {
      const answer = await call(stack.service.url, 'GET', '/openapi');
      assert.match(answer.headers.get('content-type') ?? '', /text\/html/);
      assert.match(answer.text, /\/service\/session\/\{session\}\/config/);
    });

    it('serves Prometheus metrics at /q/metrics with route patterns, never raw paths', async () => {
      const answer = await call(stack.service.url, 'GET', '/q/metrics');
      assert.match(answer.text, /ide_cloud_http_requests_total\{method="GET",route="\/service\/:appId",status="470"\}/);
      assert.match(answer.text, /ide_cloud_http_request_duration_seconds_bucket/);
      assert.ok(!answer.text.includes(SERVICE_AUTH_TOKEN));
    });
  });
});

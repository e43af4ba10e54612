// Property-based bad input (fast-check) for every request model and path parameter of the service:
// never a 5xx, always the documented error body, and never a resource written.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { z } from 'zod';
import {
  AppDefinitionUpdateRequestSchema,
  ConfigValueRequestSchema,
  LaunchRequestSchema,
  SessionActivityRequestSchema,
  SessionStartRequestSchema,
  SessionStopRequestSchema,
  WorkspaceCreationRequestSchema,
  WorkspaceDeleteRequestSchema,
} from '../../server/src/model/requests.js';
import { BASE_APP, ADMIN_API_TOKEN, SERVICE_AUTH_TOKEN, call, type Answer } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const RUNS = 60;

interface Model {
  method: string;
  path: string;
  schema: z.ZodType;
  valid: Record<string, unknown>;
  headers?: Record<string, string>;
}

// A valid body per model; the fuzzer breaks it in one way each time.
const MODELS: Model[] = [
  {
    method: 'POST',
    path: '/service',
    schema: LaunchRequestSchema,
    valid: {
      appId,
      user: 'fuzz@example.com',
      appDefinition: 'python-latest',
      workspaceName: 'ws-fuzz',
      label: 'l',
      ephemeral: false,
      timeout: 1,
      env: { fromMap: { IDE: 'true' }, fromConfigMaps: ['cm'], fromSecrets: ['s'] },
    },
  },
  {
    method: 'POST',
    path: '/service/workspace',
    schema: WorkspaceCreationRequestSchema,
    valid: { appId, user: 'fuzz@example.com', appDefinition: 'python-latest', label: 'l' },
  },
  {
    method: 'DELETE',
    path: '/service/workspace',
    schema: WorkspaceDeleteRequestSchema,
    valid: { appId, user: 'fuzz@example.com', workspaceName: 'ws-fuzz' },
  },
  {
    method: 'POST',
    path: '/service/session',
    schema: SessionStartRequestSchema,
    valid: { appId, user: 'fuzz@example.com', appDefinition: 'python-latest', workspaceName: 'ws-fuzz', timeout: 1 },
  },
  {
    method: 'DELETE',
    path: '/service/session',
    schema: SessionStopRequestSchema,
    valid: { appId, user: 'fuzz@example.com', sessionName: 'fuzz-session' },
  },
  {
    method: 'PATCH',
    path: '/service/session',
    schema: SessionActivityRequestSchema,
    valid: { appId, sessionName: 'fuzz-session' },
  },
  {
    method: 'PATCH',
    path: '/service/admin/appdefinition/python-latest',
    schema: AppDefinitionUpdateRequestSchema,
    valid: { appId, minInstances: 0, maxInstances: 10 },
    headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
  },
  {
    method: 'POST',
    path: '/service/session/fuzz-session/config',
    schema: ConfigValueRequestSchema,
    valid: { appId, key: 'k', value: 'v' },
  },
];

/** One way to break a valid body: drop a field, give it a wrong value, add a stranger, or replace it all. */
function brokenBody(model: Model): fc.Arbitrary<unknown> {
  const keys = Object.keys(model.valid);
  const mutated = fc.oneof(
    fc.constantFrom(...keys).map((key) => {
      const { [key]: _dropped, ...rest } = model.valid;
      return rest;
    }),
    fc.tuple(fc.constantFrom(...keys), fc.anything()).map(([key, value]) => ({ ...model.valid, [key]: value })),
    fc
      .tuple(
        fc.string({ minLength: 1 }).filter((k) => !keys.includes(k) && k !== '__proto__'),
        fc.jsonValue(),
      )
      .map(([key, value]) => ({ ...model.valid, [key]: value })),
    fc.anything(),
  );
  // Only what the model refuses is bad input (e.g. dropping an optional field is still valid).
  return mutated.filter((body) => !model.schema.safeParse(body).success);
}

function assertDocumentedError(answer: Answer): void {
  assert.ok(answer.status < 500, `5xx: ${answer.status} ${answer.text}`);
  if (answer.status >= 400) {
    const body = answer.json as { code?: unknown; reason?: unknown; details?: unknown };
    assert.equal(body.code, answer.status, answer.text);
    assert.equal(typeof body.reason, 'string');
    if (body.details !== undefined) assert.ok(Array.isArray(body.details));
  }
}

describe('service fuzzing (fast-check)', function () {
  const stack = useStack('svc-fuzz', { apps: [BASE_APP], service: { logLevel: 'warn' } });
  this.timeout(180_000);
  let appDefinitionBefore: unknown;

  before(async () => {
    appDefinitionBefore = (await stack.resources.appDefinitions.get('python-latest')).spec;
  });

  for (const model of MODELS) {
    it(`${model.method} ${model.path}: broken bodies answer 400 with the error body`, async () => {
      await fc.assert(
        fc.asyncProperty(brokenBody(model), async (body) => {
          const answer = await call(stack.service.url, model.method, model.path, {
            rawBody: JSON.stringify(body) ?? '',
            headers: model.headers,
          });
          assertDocumentedError(answer);
          assert.equal(answer.status, 400, answer.text);
        }),
        { numRuns: RUNS },
      );
    });
  }

  it('raw bytes that are not JSON answer 400 or 413, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 200 }), fc.constantFrom(...MODELS), async (raw, model) => {
        const answer = await call(stack.service.url, model.method, model.path, {
          rawBody: raw,
          headers: model.headers,
        });
        assertDocumentedError(answer);
        assert.ok(answer.status >= 400);
      }),
      { numRuns: RUNS },
    );
  });

  const segment = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.constantFrom('..', '.', '%', '%00', 'a/b', 'Ünïcødé', ' ', 'x'.repeat(400), '__proto__', 'constructor'),
  );
  const paths: [string, (a: string, b: string) => string][] = [
    ['GET', (a) => `/service/${a}`],
    ['GET', (a) => `/service/appdefinition/${a}`],
    ['GET', (a) => `/service/admin/${a}`],
    ['GET', (a) => `/service/admin/appdefinition/${a}`],
    ['GET', (a, b) => `/service/workspace/${a}/${b}`],
    ['GET', (a, b) => `/service/session/${a}/${b}`],
    ['GET', (a, b) => `/service/session/performance/${a}/${b}`],
    ['GET', (_a, b) => `/service/workspace/${appId}/${b}`],
    ['GET', (_a, b) => `/service/session/${appId}/${b}`],
    ['GET', (_a, b) => `/service/session/performance/${appId}/${b}`],
    ['GET', (_a, b) => `/service/admin/appdefinition/${b}`],
    ['POST', (a) => `/service/session/${a}/config`],
    ['PATCH', (a) => `/service/admin/appdefinition/${a}`],
  ];

  it('path parameters: any value, raw or encoded, never a 5xx and always the error body', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        segment,
        segment,
        fc.boolean(),
        async ([method, path], a, b, encode) => {
          const enc = (s: string) =>
            encode ? encodeURIComponent(s) : s.replace(/[?#\s]/g, (c) => encodeURIComponent(c));
          const url = path(enc(a) || 'x', enc(b) || 'x');
          const body = method === 'GET' ? undefined : { appId, key: 'k', value: 'v', minInstances: 1 };
          const answer = await call(stack.service.url, method, url, {
            body,
            headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
          });
          assertDocumentedError(answer);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('wrote nothing: no workspace, no session, the app definition unchanged', async () => {
    assert.deepEqual(await stack.resources.workspaces.list(), []);
    assert.deepEqual(await stack.resources.sessions.list(), []);
    assert.deepEqual((await stack.resources.appDefinitions.get('python-latest')).spec, appDefinitionBefore);
  });
});

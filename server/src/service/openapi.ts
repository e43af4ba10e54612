import { z } from 'zod';
import * as models from '../model/requests.js';

type Schema = Record<string, unknown>;

interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  summary: string;
  tag: string;
  request?: z.ZodType;
  /** 200 answer: a schema, 'url' (plain-text session URL), 'boolean', 'events' (Server-Sent Events), or 204 for no content. */
  response: z.ZodType | 'url' | 'boolean' | 'events' | 204;
  security: ('oauth' | 'adminToken' | 'activityToken')[];
  errors: number[];
}

const user = ['oauth'] as const;
const OPERATIONS: Operation[] = [
  {
    method: 'get',
    path: '/service/{appId}',
    summary: 'Ping',
    tag: 'health',
    response: 'boolean',
    security: [],
    errors: [470],
  },
  {
    method: 'post',
    path: '/service',
    summary: 'Launch: workspace and session in one step; blocks up to timeout',
    tag: 'sessions',
    request: models.LaunchRequestSchema,
    response: 'url',
    security: [...user],
    errors: [400, 401, 403, 429, 470, 471, 473, 475, 551, 552, 553, 554],
  },
  {
    method: 'get',
    path: '/service/appdefinition/{appId}',
    summary: 'List app definitions',
    tag: 'app definitions',
    response: z.array(models.AppDefinitionItemSchema),
    security: [],
    errors: [470],
  },
  {
    method: 'get',
    path: '/service/admin/{appId}',
    summary: 'Admin ping (admin group claim)',
    tag: 'admin',
    response: 'boolean',
    security: ['oauth'],
    errors: [401, 403, 470],
  },
  {
    method: 'get',
    path: '/service/admin/appdefinition',
    summary: 'App definitions with scaling values',
    tag: 'admin',
    response: z.array(models.AdminAppDefinitionItemSchema),
    security: ['adminToken'],
    errors: [401, 403],
  },
  {
    method: 'get',
    path: '/service/admin/appdefinition/{appDefinitionName}',
    summary: 'Scaling of one app definition',
    tag: 'admin',
    response: models.AppDefinitionScalingSchema,
    security: ['adminToken'],
    errors: [401, 403, 473],
  },
  {
    method: 'patch',
    path: '/service/admin/appdefinition/{appDefinitionName}',
    summary: 'Update scaling',
    tag: 'admin',
    request: models.AppDefinitionUpdateRequestSchema,
    response: models.AppDefinitionScalingSchema,
    security: ['adminToken'],
    errors: [400, 401, 403, 470, 473],
  },
  {
    method: 'get',
    path: '/service/workspace/{appId}/{user}',
    summary: "List the user's workspaces",
    tag: 'workspaces',
    response: z.array(models.WorkspaceItemSchema),
    security: [...user],
    errors: [400, 401, 403, 470],
  },
  {
    method: 'post',
    path: '/service/workspace',
    summary: 'Create a workspace',
    tag: 'workspaces',
    request: models.WorkspaceCreationRequestSchema,
    response: models.WorkspaceItemSchema,
    security: [...user],
    errors: [400, 401, 403, 470, 473, 554],
  },
  {
    method: 'delete',
    path: '/service/workspace',
    summary: 'Delete a workspace (ends its session)',
    tag: 'workspaces',
    request: models.WorkspaceDeleteRequestSchema,
    response: 'boolean',
    security: [...user],
    errors: [400, 401, 403, 470, 471],
  },
  {
    method: 'get',
    path: '/service/session/{appId}/{user}',
    summary: "List the user's sessions",
    tag: 'sessions',
    response: z.array(models.SessionItemSchema),
    security: [...user],
    errors: [400, 401, 403, 470],
  },
  {
    method: 'post',
    path: '/service/session',
    summary: 'Start a session on an existing workspace (ephemeral without one)',
    tag: 'sessions',
    request: models.SessionStartRequestSchema,
    response: 'url',
    security: [...user],
    errors: [400, 401, 403, 429, 470, 471, 473, 475, 551, 552, 553],
  },
  {
    method: 'delete',
    path: '/service/session',
    summary: 'Stop a session (true also when already gone)',
    tag: 'sessions',
    request: models.SessionStopRequestSchema,
    response: 'boolean',
    security: [...user],
    errors: [400, 401, 403, 470, 474],
  },
  {
    method: 'patch',
    path: '/service/session',
    summary: 'Report activity (sets status.lastActivity)',
    tag: 'sessions',
    request: models.SessionActivityRequestSchema,
    response: 'boolean',
    security: ['oauth', 'activityToken'],
    errors: [400, 401, 403, 470, 474],
  },
  {
    method: 'get',
    path: '/service/session/performance/{appId}/{sessionName}',
    summary: 'CPU and memory of the IDE container',
    tag: 'sessions',
    response: models.PerformanceSchema,
    security: [...user],
    errors: [401, 403, 470, 474, 521],
  },
  {
    method: 'get',
    path: '/service/session/events/{appId}/{user}/{workspaceName}',
    summary:
      "Progress of the session of the caller's own workspace as Server-Sent Events: `session` (phase, conditions, URL, error; `queue` {position, estimatedWaitSeconds} while it waits for a lazy start), `event` (a Kubernetes Event of the session), `deleted`; the workspace and session need not exist yet",
    tag: 'sessions',
    response: 'events',
    security: [...user],
    errors: [400, 401, 403, 429, 470, 471],
  },
  {
    method: 'post',
    path: '/service/session/{session}/config',
    summary: "Set a value in the session's config store",
    tag: 'sessions',
    request: models.ConfigValueRequestSchema,
    response: 204,
    security: [...user],
    errors: [400, 401, 403, 470, 474, 580],
  },
];

/**
 * JSON Schema (2020-12, what OpenAPI 3.1 uses) of a zod model. Models with a meta id become
 * components and are referenced; the description therefore follows the models exactly.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output', components: Record<string, Schema>): Schema {
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Schema;
  const text = JSON.stringify(generated).replaceAll('"#/$defs/', '"#/components/schemas/');
  const { $schema: _schema, $defs, ...rest } = JSON.parse(text) as Schema & { $defs?: Record<string, Schema> };
  for (const [id, def] of Object.entries($defs ?? {})) components[id] = def;
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  if (id && !('$ref' in rest)) {
    components[id] = rest;
    return { $ref: `#/components/schemas/${id}` };
  }
  return rest;
}

const TOLERANT =
  "Fields the service does not know are ignored, never refused; `kind` (this model's name) and `serviceUrl` may wrap any body.";

/** A request model's schema, marked as the tolerant reader it is (see model/requests.ts). */
function requestSchema(schema: z.ZodType, components: Record<string, Schema>): Schema {
  const reference = jsonSchema(schema, 'input', components);
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  const target = id ? components[id]! : reference;
  target.additionalProperties = true;
  target.description = target.description ? `${String(target.description)}. ${TOLERANT}` : TOLERANT;
  return reference;
}

function content(schema: Schema) {
  return { 'application/json': { schema } };
}

const PATH_PARAM = /\{(\w+)\}/g;

/** The OpenAPI 3.1 description, generated from the zod request and response models. */
export function buildOpenApi(options: { issuer?: string } = {}): Schema {
  const components: Record<string, Schema> = {};
  jsonSchema(models.ErrorBodySchema, 'output', components);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    paths[op.path] ??= {};
    paths[op.path]![op.method] = operationObject(op, components);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'IDE Cloud service',
      version: '1.0.0',
      description:
        'Starts and manages browser IDE sessions. Errors answer {code, reason, details?} with the HTTP status equal to code. ' +
        'Request bodies are read tolerantly: fields the service does not know are ignored, and the envelope of the ' +
        "clients in the field (`kind`, the model's name in lowerCamelCase, and `serviceUrl`) is accepted; a `kind` " +
        "naming another model than the endpoint's is refused with 400.",
    },
    paths,
    components: { schemas: components, securitySchemes: securitySchemes(options.issuer) },
  };
}

/** One operation's OpenAPI object; the models it names are added to `components`. */
function operationObject(op: Operation, components: Record<string, Schema>): Schema {
  const parameters = [...op.path.matchAll(PATH_PARAM)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  // The success model before the request model: the order `components` lists them in.
  const ok = successResponse(op.response, components);
  const errors = Object.fromEntries(
    [...op.errors, 413, 500]
      .filter((code, i, all) => all.indexOf(code) === i)
      .map((code) => [
        String(code),
        { description: `error ${code}`, content: content({ $ref: '#/components/schemas/Error' }) },
      ]),
  );
  return {
    summary: op.summary,
    tags: [op.tag],
    operationId: `${op.method}${op.path.replace(/\{(\w+)\}/g, 'By-$1').replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    ...(parameters.length ? { parameters } : {}),
    ...(op.request ? { requestBody: { required: true, content: content(requestSchema(op.request, components)) } } : {}),
    responses: { ...ok, ...errors },
    security: op.security.map((s) => ({ [s]: [] })),
  };
}

/** The answer of a call that succeeds: no content (204), an event stream, the session URL or a model. */
function successResponse(response: Operation['response'], components: Record<string, Schema>): Schema {
  if (response === 204) return { '204': { description: 'done' } };
  const body =
    response === 'events'
      ? { 'text/event-stream': { schema: { type: 'string', description: 'Server-Sent Events; data is JSON' } } }
      : response === 'url'
        ? { 'text/plain': { schema: { type: 'string', format: 'uri', description: 'the session URL' } } }
        : content(response === 'boolean' ? { type: 'boolean' } : jsonSchema(response, 'output', components));
  return { '200': { description: 'success', content: body } };
}

/** The callers' credentials: the OIDC provider's tokens (a plain bearer JWT without an issuer), the admin and activity tokens. */
function securitySchemes(issuer: string | undefined): Schema {
  return {
    oauth: issuer
      ? {
          type: 'openIdConnect',
          openIdConnectUrl: `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`,
        }
      : { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
    adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Api-Token' },
    activityToken: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Activity-Token',
      description: 'anonymous mode: activity reports by the session itself',
    },
  };
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A small human page for the description, with no scripts or external assets. */
export function renderOpenApiPage(document: Schema): string {
  const paths = document.paths as Record<
    string,
    Record<
      string,
      {
        summary: string;
        requestBody?: { content: Record<string, { schema: unknown }> };
        responses: Record<string, unknown>;
      }
    >
  >;
  const rows: string[] = [];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const body = op.requestBody ? JSON.stringify(op.requestBody.content['application/json']?.schema, null, 2) : '';
      rows.push(
        `<tr><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td><td>${escape(op.summary)}</td>` +
          `<td>${Object.keys(op.responses).join(', ')}</td><td>${body ? `<details><summary>schema</summary><pre>${escape(body)}</pre></details>` : ''}</td></tr>`,
      );
    }
  }
  const schemas = Object.entries((document.components as { schemas: Record<string, unknown> }).schemas).map(
    ([id, schema]) => `<h3 id="${escape(id)}">${escape(id)}</h3><pre>${escape(JSON.stringify(schema, null, 2))}</pre>`,
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>IDE Cloud service API</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;vertical-align:top;text-align:left}pre{margin:0}</style></head>
<body><h1>IDE Cloud service API</h1><p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).
Errors answer <code>{code, reason, details?}</code> with the HTTP status equal to <code>code</code>.</p>
<table><thead><tr><th>method</th><th>path</th><th>what</th><th>statuses</th><th>request body</th></tr></thead><tbody>
${rows.join('\n')}
</tbody></table><h2>Models</h2>
${schemas.join('\n')}
</body></html>`;
}

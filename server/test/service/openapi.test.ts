import assert from 'node:assert/strict';
import { buildOpenApi, renderOpenApiPage } from '../../src/service/openapi.js';

describe('OpenAPI description', () => {
  const document = buildOpenApi() as {
    openapi: string;
    paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, unknown> }>>;
    components: {
      schemas: Record<
        string,
        {
          required?: string[];
          additionalProperties?: unknown;
          description?: unknown;
          properties?: Record<string, unknown>;
        }
      >;
    };
  };

  it("covers the spec's 16 endpoints, each with the error body", () => {
    const operations = Object.entries(document.paths).flatMap(([path, m]) => Object.keys(m).map((x) => `${x} ${path}`));
    assert.equal(document.openapi, '3.1.0');
    assert.equal(operations.length, 16 + 1); // and the progress stream of the landing page
    for (const methods of Object.values(document.paths)) {
      for (const op of Object.values(methods)) assert.ok(op.responses['400'] ?? op.responses['413']);
    }
  });

  it('generates every request model from zod, tolerant of unknown fields and with the envelope', () => {
    for (const model of [
      'LaunchRequest',
      'WorkspaceCreationRequest',
      'WorkspaceDeleteRequest',
      'SessionStartRequest',
      'SessionStopRequest',
      'SessionActivityRequest',
      'AppDefinitionUpdateRequest',
      'ConfigValueRequest',
    ]) {
      const schema = document.components.schemas[model];
      assert.ok(schema, model);
      assert.equal(schema.additionalProperties, true, model);
      assert.match(String(schema.description), /ignored/, model);
      assert.ok(schema.properties?.kind && schema.properties.serviceUrl, model);
    }
    assert.deepEqual(document.components.schemas.SessionStopRequest?.required, ['appId', 'user', 'sessionName']);
  });

  it('renders a human page without scripts', () => {
    const page = renderOpenApiPage(document);
    assert.match(page, /<table>/);
    assert.ok(!page.includes('<script'));
  });
});

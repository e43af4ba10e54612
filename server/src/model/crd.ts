import { z } from 'zod';
import { AppDefinitionSpecSchema, AppDefinitionStatusSchema } from './app-definition.js';
import { GROUP, VERSION } from './api-group.js';
import { SessionSpecSchema, SessionStatusSchema } from './session.js';
import { WorkspaceSpecSchema, WorkspaceStatusSchema } from './workspace.js';

/**
 * The three CustomResourceDefinitions, generated from the zod schemas that the service and the
 * operator validate with, so the API server's schema and the code's can never drift apart.
 */
export interface ResourceKind {
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  rootValidations?: { rule: string; message: string }[];
}

interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'boolean' | 'number';
  jsonPath: string;
  priority?: number;
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const RESOURCE_KINDS = {
  appDefinition: {
    kind: 'AppDefinition',
    plural: 'appdefinitions',
    singular: 'appdefinition',
    shortNames: ['appdef', 'ad'],
    spec: AppDefinitionSpecSchema,
    status: AppDefinitionStatusSchema,
    printerColumns: [
      { name: 'Image', type: 'string', jsonPath: '.spec.image' },
      { name: 'Min', type: 'integer', jsonPath: '.spec.minInstances' },
      { name: 'Max', type: 'integer', jsonPath: '.spec.maxInstances' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.pool.ready' },
      age,
    ],
    rootValidations: [{ rule: 'self.spec.name == self.metadata.name', message: 'spec.name must equal metadata.name' }],
  },
  workspace: {
    kind: 'Workspace',
    plural: 'workspaces',
    singular: 'workspace',
    shortNames: ['ws'],
    spec: WorkspaceSpecSchema,
    status: WorkspaceStatusSchema,
    printerColumns: [
      { name: 'User', type: 'string', jsonPath: '.spec.user' },
      { name: 'AppDefinition', type: 'string', jsonPath: '.spec.appDefinition' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Label', type: 'string', jsonPath: '.spec.label', priority: 1 },
      age,
    ],
  },
  session: {
    kind: 'Session',
    plural: 'sessions',
    singular: 'session',
    spec: SessionSpecSchema,
    status: SessionStatusSchema,
    printerColumns: [
      { name: 'User', type: 'string', jsonPath: '.spec.user' },
      { name: 'AppDefinition', type: 'string', jsonPath: '.spec.appDefinition' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
      { name: 'Strategy', type: 'string', jsonPath: '.status.startStrategy' },
      { name: 'URL', type: 'string', jsonPath: '.status.url', priority: 1 },
      { name: 'Workspace', type: 'string', jsonPath: '.spec.workspace', priority: 1 },
      age,
    ],
  },
} satisfies Record<string, ResourceKind>;

type JsonSchema = { [key: string]: unknown };

const DROPPED_KEYS = new Set(['$schema', 'propertyNames', 'id']);

/**
 * Turns zod's OpenAPI 3.0 JSON Schema into a structural CRD schema: no `additionalProperties: false`
 * (the API server prunes unknown fields instead), no JSON-Schema-only keywords, and no safe-integer
 * bounds that zod adds to every integer.
 */
export function toStructuralSchema(schema: unknown): JsonSchema {
  if (Array.isArray(schema)) return schema.map(toStructuralSchema) as unknown as JsonSchema;
  if (schema === null || typeof schema !== 'object') return schema as JsonSchema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED_KEYS.has(key)) continue;
    if (key === 'additionalProperties' && value === false) continue;
    if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
    if (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'properties' || key === 'default') {
      out[key] =
        key === 'properties'
          ? Object.fromEntries(Object.entries(value as JsonSchema).map(([k, v]) => [k, toStructuralSchema(v)]))
          : value;
      continue;
    }
    out[key] = typeof value === 'object' && value !== null ? toStructuralSchema(value) : value;
  }
  return out;
}

export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return toStructuralSchema(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' }));
}

export function buildCrd(resource: ResourceKind): JsonSchema {
  const openAPIV3Schema: JsonSchema = {
    type: 'object',
    description: `${resource.kind} of IDE Cloud`,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: jsonSchemaOf(resource.spec),
      status: jsonSchemaOf(resource.status),
    },
    ...(resource.rootValidations ? { 'x-kubernetes-validations': resource.rootValidations } : {}),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${resource.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: resource.kind,
        listKind: `${resource.kind}List`,
        plural: resource.plural,
        singular: resource.singular,
        ...(resource.shortNames ? { shortNames: resource.shortNames } : {}),
        categories: ['ide-cloud'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema },
          subresources: { status: {} },
          additionalPrinterColumns: resource.printerColumns,
        },
      ],
    },
  };
}

export function buildCrds(): JsonSchema[] {
  return Object.values(RESOURCE_KINDS).map(buildCrd);
}

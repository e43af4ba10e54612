import { z } from 'zod';

/**
 * Request and response models of the REST service (service spec, "Request models"), and the DESIGN.md
 * shapes for what the spec leaves open. The OpenAPI description is generated from these schemas.
 *
 * Requests are read the way the clients in the field write them (tolerant reader): the envelope fields
 * `kind` and `serviceUrl` are accepted, fields the service does not know are dropped, never refused,
 * and every known field keeps its validation.
 */

const K8sName = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Kubernetes object name (lowercase DNS subdomain)');

/** The `kind` each request model carries in the clients' envelope (compared ignoring case). */
export const RequestKind = {
  launch: 'launchRequest',
  workspaceCreation: 'workspaceCreationRequest',
  workspaceDeletion: 'workspaceDeletionRequest',
  sessionStart: 'sessionStartRequest',
  sessionStop: 'sessionStopRequest',
  sessionActivity: 'sessionActivityRequest',
  sessionSetConfigValue: 'sessionSetConfigValueRequest',
  appDefinitionUpdate: 'appDefinitionUpdateRequest',
} as const;
type RequestKindName = (typeof RequestKind)[keyof typeof RequestKind];
const KNOWN_KINDS = new Map(Object.values(RequestKind).map((kind) => [kind.toLowerCase(), kind]));

/** The envelope fields of the model `kind`: a kind naming another model is refused with a clear reason. */
function envelope(kind: RequestKindName) {
  return {
    kind: z
      .string()
      .max(256)
      .optional()
      .superRefine((given, ctx) => {
        if (given === undefined || given.toLowerCase() === kind.toLowerCase()) return;
        // Only a known model's name is quoted back: the reason must not echo arbitrary input.
        const other = KNOWN_KINDS.get(given.toLowerCase());
        ctx.addIssue({
          code: 'custom',
          message: other
            ? `kind '${other}' names another model; this endpoint takes '${kind}'`
            : `kind names no known model; this endpoint takes '${kind}'`,
        });
      })
      .describe(`the model's name, '${kind}'; optional`),
    serviceUrl: z.string().max(2048).optional().describe('the base URL the client was configured with; not used'),
  };
}

/**
 * A name the API server accepts both as an environment variable of a container (letters, digits,
 * `_ . -`, no leading digit) and as a key of the session's Secret that carries the values (never `.`
 * or `..`, nor starting with `..`): it refuses others with 422, which would otherwise surface only as
 * a launch that never starts.
 */
const EnvName = z
  .string()
  .max(253)
  .regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/, 'must be an environment variable name (letters, digits, _ . -)')
  .refine((name) => name !== '.' && !name.startsWith('..'), {
    error: 'must be an environment variable name that is also a Secret key (not ".", "..", nor starting with "..")',
  });

export const AppIdSchema = z.string().describe('the shared service auth token');
export const UserSchema = z.string().max(320).describe("user id, usually the user's e-mail");
/**
 * The user a launch or a new workspace is for: never a dot segment, which could not name the user in
 * a URL's path (a URL resolves it away). A pattern without lookahead, for RE2-based validators too.
 */
export const NewUserSchema = UserSchema.regex(/^(?:$|[^.]|\.[^.]|\.\.[\s\S])/, 'a user cannot be "." or ".."').describe(
  `user id, usually the user's e-mail; not "." or ".."`,
);

/** The launch timeout when a request gives none (the service's LAUNCH_TIMEOUT_MINUTES by default). */
export const DEFAULT_LAUNCH_TIMEOUT_MINUTES = 3;

/** A launch timeout in minutes. Fractions are allowed (tests use a few seconds); at most one hour. */
export const TimeoutMinutesSchema = z
  .number()
  .positive()
  .max(60)
  .describe(`minutes to wait for the session URL; default ${DEFAULT_LAUNCH_TIMEOUT_MINUTES}`);

export const EnvironmentVarsSchema = z
  .object({
    fromMap: z
      .record(EnvName, z.string().max(65_536))
      .optional()
      .describe('values given directly; the channel for callers outside the cluster'),
    fromConfigMaps: z.array(K8sName).max(32).optional().describe('names of existing config maps'),
    fromSecrets: z.array(K8sName).max(32).optional().describe('names of existing secrets'),
  })
  .describe('unknown fields are ignored');
export type EnvironmentVars = z.infer<typeof EnvironmentVarsSchema>;

export const LaunchRequestSchema = z
  .object({
    ...envelope(RequestKind.launch),
    appId: AppIdSchema,
    user: NewUserSchema.optional().describe('required in anonymous mode; defaults to the token e-mail otherwise'),
    appDefinition: z.string().min(1).max(253),
    workspaceName: z.string().max(253).optional().describe('stable name of a workspace to reuse or create'),
    label: z.string().max(256).optional(),
    ephemeral: z.boolean().optional(),
    timeout: TimeoutMinutesSchema.optional(),
    env: EnvironmentVarsSchema.optional(),
  })
  .meta({ id: 'LaunchRequest' });
export type LaunchRequest = z.infer<typeof LaunchRequestSchema>;

export const WorkspaceCreationRequestSchema = z
  .object({
    ...envelope(RequestKind.workspaceCreation),
    appId: AppIdSchema,
    user: NewUserSchema,
    appDefinition: z.string().min(1).max(253).optional(),
    label: z.string().max(256).optional(),
  })
  .meta({ id: 'WorkspaceCreationRequest' });
export type WorkspaceCreationRequest = z.infer<typeof WorkspaceCreationRequestSchema>;

export const WorkspaceDeleteRequestSchema = z
  .object({
    ...envelope(RequestKind.workspaceDeletion),
    appId: AppIdSchema,
    user: UserSchema,
    workspaceName: z.string().max(253),
  })
  .meta({ id: 'WorkspaceDeleteRequest' });
export type WorkspaceDeleteRequest = z.infer<typeof WorkspaceDeleteRequestSchema>;

export const SessionStartRequestSchema = z
  .object({
    ...envelope(RequestKind.sessionStart),
    appId: AppIdSchema,
    user: NewUserSchema,
    appDefinition: z.string().min(1).max(253),
    workspaceName: z.string().max(253).optional().describe('existing workspace; without one the session is ephemeral'),
    timeout: TimeoutMinutesSchema.optional(),
    env: EnvironmentVarsSchema.optional(),
  })
  .meta({ id: 'SessionStartRequest' });
export type SessionStartRequest = z.infer<typeof SessionStartRequestSchema>;

export const SessionStopRequestSchema = z
  .object({
    ...envelope(RequestKind.sessionStop),
    appId: AppIdSchema,
    user: UserSchema,
    sessionName: z.string().max(253),
  })
  .meta({ id: 'SessionStopRequest' });
export type SessionStopRequest = z.infer<typeof SessionStopRequestSchema>;

export const SessionActivityRequestSchema = z
  .object({ ...envelope(RequestKind.sessionActivity), appId: AppIdSchema, sessionName: z.string().max(253) })
  .meta({ id: 'SessionActivityRequest' });
export type SessionActivityRequest = z.infer<typeof SessionActivityRequestSchema>;

const Instances = z.number().int().min(0).max(100_000);

/** Admin scaling update: at least one field; both >= 0; min <= max when both are given; max null = unbounded. */
export const AppDefinitionUpdateRequestSchema = z
  .object({
    ...envelope(RequestKind.appDefinitionUpdate),
    appId: AppIdSchema.optional().describe('when given, must be the service auth token'),
    minInstances: Instances.optional(),
    maxInstances: Instances.nullable().optional().describe('null removes the upper bound'),
  })
  .refine((r) => r.minInstances !== undefined || r.maxInstances !== undefined, {
    message: 'at least one of minInstances and maxInstances is required',
  })
  .refine((r) => r.minInstances === undefined || r.maxInstances == null || r.minInstances <= r.maxInstances, {
    message: 'minInstances must be <= maxInstances',
    path: ['minInstances'],
  })
  .meta({
    id: 'AppDefinitionUpdateRequest',
    description: 'at least one of minInstances and maxInstances; minInstances <= maxInstances when both are given',
  });
export type AppDefinitionUpdateRequest = z.infer<typeof AppDefinitionUpdateRequestSchema>;

/** A value for a session's config store: a key of a ConfigMap and its value (null removes the key). */
export const ConfigValueRequestSchema = z
  .object({
    ...envelope(RequestKind.sessionSetConfigValue),
    appId: AppIdSchema,
    key: z
      .string()
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/, 'must be a config map key'),
    value: z.string().max(65_536).nullable().describe('null removes the key'),
  })
  .meta({ id: 'ConfigValueRequest' });
export type ConfigValueRequest = z.infer<typeof ConfigValueRequestSchema>;

// ---- responses ----

export const ErrorBodySchema = z
  .object({
    code: z.number().int().describe('equals the HTTP status'),
    reason: z.string(),
    details: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('validation issues'),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const WorkspaceItemSchema = z
  .object({
    name: z.string(),
    label: z.string().optional(),
    appDefinition: z.string().optional(),
    user: z.string(),
    active: z.boolean().describe('a session runs on this workspace'),
    creationTimestamp: z.string().optional(),
  })
  .meta({ id: 'Workspace' });
export type WorkspaceItem = z.infer<typeof WorkspaceItemSchema>;

export const SessionItemSchema = z
  .object({
    name: z.string(),
    workspace: z.string().optional(),
    appDefinition: z.string(),
    user: z.string(),
    url: z.string().optional(),
    phase: z.string().optional(),
    startStrategy: z.string().optional(),
    creationTimestamp: z.string().optional(),
    lastActivity: z.string().optional(),
  })
  .meta({ id: 'Session' });
export type SessionItem = z.infer<typeof SessionItemSchema>;

export const AppDefinitionItemSchema = z
  .object({
    name: z.string(),
    image: z.string(),
    requestsMemory: z.string(),
    requestsCpu: z.string(),
    limitsMemory: z.string(),
    limitsCpu: z.string(),
    minInstances: z.number().int(),
    maxInstances: z.number().int().nullable(),
    port: z.number().int(),
    ingressname: z.string(),
    options: z.record(z.string(), z.string()).optional(),
  })
  .meta({ id: 'AppDefinition' });
export type AppDefinitionItem = z.infer<typeof AppDefinitionItemSchema>;

export const AppDefinitionScalingSchema = z
  .object({
    appDefinitionName: z.string(),
    minInstances: z.number().int(),
    maxInstances: z.number().int().nullable().describe('null: unbounded'),
  })
  .meta({ id: 'AppDefinitionScaling' });
export type AppDefinitionScaling = z.infer<typeof AppDefinitionScalingSchema>;

export const AdminAppDefinitionItemSchema = AppDefinitionScalingSchema.extend({
  pool: z
    .object({
      desired: z.number().int(),
      ready: z.number().int().describe('instances ready, free or reserved, as the operator last reported them'),
      reserved: z.number().int().describe('instances held by active sessions'),
    })
    .optional()
    .describe('warm pool'),
}).meta({ id: 'AdminAppDefinition' });
export type AdminAppDefinitionItem = z.infer<typeof AdminAppDefinitionItemSchema>;

export const PerformanceSchema = z
  .object({
    cpuAmount: z.string(),
    cpuFormat: z.string(),
    memoryAmount: z.string(),
    memoryFormat: z.string(),
  })
  .meta({ id: 'Performance' });
export type Performance = z.infer<typeof PerformanceSchema>;

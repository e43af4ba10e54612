import { z } from 'zod';
import { trustProxySchema } from '../http/client-address.js';
import { DEFAULT_CONNECTION_LIMITS } from '../http/listen.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../kube/client.js';
import { DEFAULT_LAUNCH_TIMEOUT_MINUTES } from '../model/requests.js';

/**
 * Configuration of the service, from environment variables named after the installation values.
 * Checked at start-up: a bad value fails fast with a message that names the variable, never its value.
 *
 * | variable                  | meaning                                                         | default       |
 * |---------------------------|-----------------------------------------------------------------|---------------|
 * | SERVICE_AUTH_TOKEN        | the shared service auth token every appId must equal (secret)   | required      |
 * | ADMIN_API_TOKEN           | the X-Admin-Api-Token of admin app definition calls (secret)    | required      |
 * | IDENTITY_PROVIDER_ISSUER  | OpenID Connect issuer URL; unset or "disabled": anonymous mode  | disabled      |
 * | IDENTITY_PROVIDER_AUDIENCE| required `aud` of bearer tokens (required with the provider)    |               |
 * | IDENTITY_PROVIDER_USER_CLAIM  | claim holding the user id                                   | email         |
 * | IDENTITY_PROVIDER_ADMIN_CLAIM | claim holding the groups                                    | groups        |
 * | IDENTITY_PROVIDER_ADMIN_GROUP | group that may call the admin ping                          | admin         |
 * | IDENTITY_PROVIDER_JWKS_COOLDOWN_SECONDS | least time between two key set refetches          | 30            |
 * | IDENTITY_PROVIDER_EMAIL_VERIFIED | with the user claim `email`: required (`email_verified` must be true), ifPresent (only false is refused), ignored | required |
 * | ACTIVITY_REQUIRE_TOKEN    | anonymous mode: activity reports must carry X-Activity-Token    | false         |
 * | IDE_CLOUD_NAMESPACE       | namespace of the AppDefinition, Workspace and Session resources | ide-cloud     |
 * | IDE_CLOUD_SESSIONS_PER_USER | operator.sessionsPerUser, read by the operator too        | 1             |
 * | IDE_CLOUD_WORKSPACES_PER_USER | workspaces (each a claim) one user may have (554 over)      | 10            |
 * | LAUNCH_TIMEOUT_MINUTES    | default launch timeout in minutes (fractions allowed)           | 3             |
 * | IDE_CLOUD_REWATCH_INTERVAL_MS | the caches renew their watches this often (no relist)       | 300000        |
 * | IDE_CLOUD_API_REQUEST_TIMEOUT_MS | deadline of each Kubernetes API call (not watches); 503 past it | 10000  |
 * | PROGRESS_STREAMS_PER_USER | progress streams one user may hold open at once (429 over)     | 4             |
 * | PROGRESS_STREAMS_PER_CLIENT | progress streams one client address (IPv6: /64) may hold open (429 over) | 250 |
 * | TRUST_PROXY               | proxies whose X-Forwarded-For names the client: hops, or addresses/CIDRs | none      |
 * | PROGRESS_STREAMS_TOTAL    | progress streams open at once on one replica (429 over)         | 500           |
 * | PROGRESS_STREAM_MAX_SECONDS | a progress stream ends after this (the browser reconnects)    | 1800          |
 * | PORT / HOST               | where the HTTP server listens                                   | 8080 / 0.0.0.0|
 * | BODY_LIMIT                | largest request body                                            | 100kb         |
 * | REQUEST_READ_TIMEOUT_MS   | a request's headers and body must arrive within this (408)     | 30000         |
 * | HEADERS_TIMEOUT_MS        | its headers within this                                         | 10000         |
 * | MAX_CONNECTIONS           | connections served at once; more are refused                    | 1000          |
 * | LOG_LEVEL                 | pino level                                                      | info          |
 * | KUBECONFIG                | kubeconfig file; unset: in-cluster service account              |               |
 */
/** How the service reads `email_verified` when the user claim is `email` (auth.ts). */
export const EMAIL_VERIFIED_POLICIES = ['required', 'ifPresent', 'ignored'] as const;

const secret = (name: string) =>
  z
    .string({ error: `${name} is required` })
    .trim()
    .min(8, { error: `${name} must be at least 8 characters` });

const ConfigSchema = z.object({
  serviceAuthToken: secret('SERVICE_AUTH_TOKEN'),
  adminApiToken: secret('ADMIN_API_TOKEN'),
  identityProvider: z
    .object({
      issuer: z.url({ error: 'IDENTITY_PROVIDER_ISSUER must be a URL' }),
      // Without an audience check a token issued for any other client of the provider would pass.
      audience: z.string({ error: 'IDENTITY_PROVIDER_AUDIENCE is required with the identity provider' }).min(1, {
        error: 'IDENTITY_PROVIDER_AUDIENCE is required with the identity provider',
      }),
      userClaim: z.string().min(1).default('email'),
      adminClaim: z.string().min(1).default('groups'),
      adminGroup: z.string().min(1).default('admin'),
      jwksCooldownSeconds: z.coerce
        .number({ error: 'IDENTITY_PROVIDER_JWKS_COOLDOWN_SECONDS must be a number' })
        .min(0)
        .default(30),
      // An unverified e-mail is anyone's claim to it; only an explicit setting accepts one.
      emailVerified: z
        .enum(EMAIL_VERIFIED_POLICIES, {
          error: 'IDENTITY_PROVIDER_EMAIL_VERIFIED must be required, ifPresent or ignored',
        })
        .default('required'),
    })
    .optional(),
  activityRequiresToken: z
    .preprocess(
      (value) => (value === 'true' ? true : value === 'false' ? false : value),
      z.boolean({ error: 'ACTIVITY_REQUIRE_TOKEN must be true or false' }).optional(),
    )
    .default(false),
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'IDE_CLOUD_NAMESPACE must be a namespace name' })
    .default('ide-cloud'),
  sessionsPerUser: z.coerce
    .number({ error: 'IDE_CLOUD_SESSIONS_PER_USER must be a number' })
    .int({ error: 'IDE_CLOUD_SESSIONS_PER_USER must be an integer' })
    .min(1, { error: 'IDE_CLOUD_SESSIONS_PER_USER must be >= 1' })
    .default(1),
  workspacesPerUser: z.coerce
    .number({ error: 'IDE_CLOUD_WORKSPACES_PER_USER must be a number' })
    .int({ error: 'IDE_CLOUD_WORKSPACES_PER_USER must be an integer' })
    .min(1, { error: 'IDE_CLOUD_WORKSPACES_PER_USER must be >= 1' })
    .default(10),
  launchTimeoutMinutes: z.coerce
    .number({ error: 'LAUNCH_TIMEOUT_MINUTES must be a number' })
    .positive({ error: 'LAUNCH_TIMEOUT_MINUTES must be > 0' })
    .default(DEFAULT_LAUNCH_TIMEOUT_MINUTES),
  rewatchIntervalMs: z.coerce
    .number({ error: 'IDE_CLOUD_REWATCH_INTERVAL_MS must be a number' })
    .int({ error: 'IDE_CLOUD_REWATCH_INTERVAL_MS must be an integer' })
    .min(100, { error: 'IDE_CLOUD_REWATCH_INTERVAL_MS must be >= 100' })
    .default(300_000),
  apiRequestTimeoutMs: z.coerce
    .number({ error: 'IDE_CLOUD_API_REQUEST_TIMEOUT_MS must be a number' })
    .int({ error: 'IDE_CLOUD_API_REQUEST_TIMEOUT_MS must be an integer' })
    .min(100, { error: 'IDE_CLOUD_API_REQUEST_TIMEOUT_MS must be >= 100' })
    .default(DEFAULT_REQUEST_TIMEOUT_MS),
  progressStreamsPerUser: z.coerce
    .number({ error: 'PROGRESS_STREAMS_PER_USER must be a number' })
    .int({ error: 'PROGRESS_STREAMS_PER_USER must be an integer' })
    .min(1, { error: 'PROGRESS_STREAMS_PER_USER must be >= 1' })
    .default(4),
  // Anonymous callers choose the user: without this one machine takes the total under made-up names.
  progressStreamsPerClient: z.coerce
    .number({ error: 'PROGRESS_STREAMS_PER_CLIENT must be a number' })
    .int({ error: 'PROGRESS_STREAMS_PER_CLIENT must be an integer' })
    .min(1, { error: 'PROGRESS_STREAMS_PER_CLIENT must be >= 1' })
    .default(250),
  trustProxy: trustProxySchema('TRUST_PROXY'),
  progressStreamsTotal: z.coerce
    .number({ error: 'PROGRESS_STREAMS_TOTAL must be a number' })
    .int({ error: 'PROGRESS_STREAMS_TOTAL must be an integer' })
    .min(1, { error: 'PROGRESS_STREAMS_TOTAL must be >= 1' })
    .default(500),
  progressStreamMaxSeconds: z.coerce
    .number({ error: 'PROGRESS_STREAM_MAX_SECONDS must be a number' })
    .positive({ error: 'PROGRESS_STREAM_MAX_SECONDS must be > 0' })
    .default(1800),
  port: z.coerce
    .number({ error: 'PORT must be a number' })
    .int()
    .min(0)
    .max(65535, { error: 'PORT must be a port' })
    .default(8080),
  host: z.string().min(1).default('0.0.0.0'),
  bodyLimit: z.string().min(1).default('100kb'),
  requestReadTimeoutMs: z.coerce
    .number({ error: 'REQUEST_READ_TIMEOUT_MS must be a number' })
    .int()
    .min(100, { error: 'REQUEST_READ_TIMEOUT_MS must be >= 100' })
    .default(DEFAULT_CONNECTION_LIMITS.requestReadTimeoutMs),
  headersTimeoutMs: z.coerce
    .number({ error: 'HEADERS_TIMEOUT_MS must be a number' })
    .int()
    .min(100, { error: 'HEADERS_TIMEOUT_MS must be >= 100' })
    .default(DEFAULT_CONNECTION_LIMITS.headersTimeoutMs),
  maxConnections: z.coerce
    .number({ error: 'MAX_CONNECTIONS must be a number' })
    .int()
    .min(1, { error: 'MAX_CONNECTIONS must be >= 1' })
    .default(DEFAULT_CONNECTION_LIMITS.maxConnections),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  kubeconfig: z.string().min(1).optional(),
});
export type ServiceConfig = z.output<typeof ConfigSchema>;
export type ServiceConfigInput = z.input<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and checks the configuration; throws a ConfigError listing every problem (no values). */
export function loadServiceConfig(env: Record<string, string | undefined> = process.env): ServiceConfig {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const issuer = get('IDENTITY_PROVIDER_ISSUER');
  const input = {
    serviceAuthToken: env.SERVICE_AUTH_TOKEN,
    adminApiToken: env.ADMIN_API_TOKEN,
    identityProvider:
      issuer && issuer !== 'disabled'
        ? {
            issuer,
            audience: get('IDENTITY_PROVIDER_AUDIENCE'),
            userClaim: get('IDENTITY_PROVIDER_USER_CLAIM'),
            adminClaim: get('IDENTITY_PROVIDER_ADMIN_CLAIM'),
            adminGroup: get('IDENTITY_PROVIDER_ADMIN_GROUP'),
            jwksCooldownSeconds: get('IDENTITY_PROVIDER_JWKS_COOLDOWN_SECONDS'),
            emailVerified: get('IDENTITY_PROVIDER_EMAIL_VERIFIED'),
          }
        : undefined,
    activityRequiresToken: get('ACTIVITY_REQUIRE_TOKEN'),
    namespace: get('IDE_CLOUD_NAMESPACE'),
    sessionsPerUser: get('IDE_CLOUD_SESSIONS_PER_USER'),
    workspacesPerUser: get('IDE_CLOUD_WORKSPACES_PER_USER'),
    launchTimeoutMinutes: get('LAUNCH_TIMEOUT_MINUTES'),
    rewatchIntervalMs: get('IDE_CLOUD_REWATCH_INTERVAL_MS'),
    apiRequestTimeoutMs: get('IDE_CLOUD_API_REQUEST_TIMEOUT_MS'),
    progressStreamsPerUser: get('PROGRESS_STREAMS_PER_USER'),
    progressStreamsPerClient: get('PROGRESS_STREAMS_PER_CLIENT'),
    trustProxy: get('TRUST_PROXY'),
    progressStreamsTotal: get('PROGRESS_STREAMS_TOTAL'),
    progressStreamMaxSeconds: get('PROGRESS_STREAM_MAX_SECONDS'),
    port: get('PORT'),
    host: get('HOST'),
    bodyLimit: get('BODY_LIMIT'),
    requestReadTimeoutMs: get('REQUEST_READ_TIMEOUT_MS'),
    headersTimeoutMs: get('HEADERS_TIMEOUT_MS'),
    maxConnections: get('MAX_CONNECTIONS'),
    logLevel: get('LOG_LEVEL'),
    kubeconfig: get('KUBECONFIG'),
  };
  return parseConfig(input);
}

/** Checks a configuration given as an object (what tests and `npm start` use). */
export function parseServiceConfig(input: ServiceConfigInput): ServiceConfig {
  return parseConfig(input);
}

function parseConfig(input: unknown): ServiceConfig {
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`);
    throw new ConfigError(`invalid service configuration:\n  ${problems.join('\n  ')}`);
  }
  return result.data;
}

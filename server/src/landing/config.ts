import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { trustProxySchema } from '../http/client-address.js';

/**
 * Configuration of the landing page, from environment variables (the chart's landing-page.yaml sets
 * them). Checked at start-up: a bad value fails fast with a message naming the variable, never its value.
 *
 * | variable                     | meaning                                                        | default                |
 * |------------------------------|----------------------------------------------------------------|------------------------|
 * | SERVICE_URL                  | base URL of the REST service                                   | required               |
 * | SERVICE_AUTH_TOKEN           | the service auth token, sent as appId; never reaches a browser | required (secret)      |
 * | LANDING_PAGE_COOKIE_SECRET   | key of the kept sign-in's sealed cookie (replicas share it)    | one of the process     |
 * | LANDING_PAGE_APPS_FILE       | apps.json: [{name, label, buildSystems: [{id, label}]}]        | required               |
 * | IDENTITY_PROVIDER_ISSUER     | OpenID Connect issuer; unset or "disabled": anonymous mode     | disabled               |
 * | IDENTITY_PROVIDER_CLIENT_ID  | public client (authorization code + PKCE) of the landing page  | ide-cloud-landing-page |
 * | IDENTITY_PROVIDER_SCOPE      | scopes asked for at sign-in                                    | openid email profile   |
 * | IDENTITY_PROVIDER_RESOURCE   | resource indicator (RFC 8707) asked for, if the provider needs one | none               |
 * | PROGRESS_STREAMS_PER_CLIENT  | progress streams one browser address (IPv6: /64) may hold open | 50                     |
 * | PROGRESS_STREAMS_TOTAL       | progress streams this page holds open at once (its own cap)    | 200                    |
 * | TRUST_PROXY                  | proxies whose X-Forwarded-For names the browser (hops or CIDRs) | none                  |
 * | PORT / HOST                  | where the HTTP server listens                                  | 8080 / 0.0.0.0         |
 * | LOG_LEVEL                    | pino level                                                     | info                   |
 */
export const LandingAppSchema = z
  .object({
    name: z.string().min(1),
    label: z.string().min(1),
    buildSystems: z
      .array(z.object({ id: z.string().min(1), label: z.string().min(1) }))
      .nullish()
      .transform((v) => v ?? []),
  })
  .strip();

const ConfigSchema = z.object({
  serviceUrl: z.url({ error: 'SERVICE_URL must be a URL' }).transform((v) => v.replace(/\/+$/, '')),
  serviceAuthToken: z
    .string({ error: 'SERVICE_AUTH_TOKEN is required' })
    .trim()
    .min(8, { error: 'SERVICE_AUTH_TOKEN must be at least 8 characters' }),
  // The kept sign-in's key, apart from the service auth token, which learning platforms also hold (appId).
  cookieSecret: z
    .string()
    .trim()
    .min(32, { error: 'LANDING_PAGE_COOKIE_SECRET must be at least 32 characters' })
    .optional(),
  apps: z.array(LandingAppSchema, { error: 'LANDING_PAGE_APPS_FILE must hold a list of apps' }),
  identityProvider: z
    .object({
      issuer: z.url({ error: 'IDENTITY_PROVIDER_ISSUER must be a URL' }),
      clientId: z.string().min(1).default('ide-cloud-landing-page'),
      scope: z.string().min(1).default('openid email profile'),
      resource: z.string().min(1).optional(),
    })
    .optional(),
  // The page's own caps, below the service's per-client cap: the service sees the page as one client,
  // and a page full of made-up users must leave the service room for its other callers.
  progressStreamsPerClient: z.coerce
    .number({ error: 'PROGRESS_STREAMS_PER_CLIENT must be a number' })
    .int({ error: 'PROGRESS_STREAMS_PER_CLIENT must be an integer' })
    .min(1, { error: 'PROGRESS_STREAMS_PER_CLIENT must be >= 1' })
    .default(50),
  progressStreamsTotal: z.coerce
    .number({ error: 'PROGRESS_STREAMS_TOTAL must be a number' })
    .int({ error: 'PROGRESS_STREAMS_TOTAL must be an integer' })
    .min(1, { error: 'PROGRESS_STREAMS_TOTAL must be >= 1' })
    .default(200),
  trustProxy: trustProxySchema('TRUST_PROXY'),
  port: z.coerce.number({ error: 'PORT must be a number' }).int().min(0).max(65535).default(8080),
  host: z.string().min(1).default('0.0.0.0'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type LandingConfig = z.output<typeof ConfigSchema>;
export type LandingConfigInput = z.input<typeof ConfigSchema>;

export class LandingConfigError extends Error {
  override name = 'LandingConfigError';
}

export function parseLandingConfig(input: LandingConfigInput): LandingConfig {
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`);
    throw new LandingConfigError(`invalid landing page configuration:\n  ${problems.join('\n  ')}`);
  }
  return result.data;
}

/** Reads the environment and the apps file; throws a LandingConfigError listing every problem. */
export function loadLandingConfig(env: Record<string, string | undefined> = process.env): LandingConfig {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const appsFile = get('LANDING_PAGE_APPS_FILE');
  if (!appsFile)
    throw new LandingConfigError('invalid landing page configuration:\n  LANDING_PAGE_APPS_FILE is required');
  let apps: unknown;
  try {
    apps = JSON.parse(readFileSync(appsFile, 'utf8'));
  } catch {
    throw new LandingConfigError(
      'invalid landing page configuration:\n  LANDING_PAGE_APPS_FILE is not a readable JSON file',
    );
  }
  const issuer = get('IDENTITY_PROVIDER_ISSUER');
  return parseLandingConfig({
    serviceUrl: get('SERVICE_URL') as string,
    serviceAuthToken: env.SERVICE_AUTH_TOKEN as string,
    cookieSecret: get('LANDING_PAGE_COOKIE_SECRET'),
    apps: apps as LandingConfigInput['apps'],
    identityProvider:
      issuer && issuer !== 'disabled'
        ? {
            issuer,
            clientId: get('IDENTITY_PROVIDER_CLIENT_ID'),
            scope: get('IDENTITY_PROVIDER_SCOPE'),
            resource: get('IDENTITY_PROVIDER_RESOURCE'),
          }
        : undefined,
    progressStreamsPerClient: get('PROGRESS_STREAMS_PER_CLIENT'),
    progressStreamsTotal: get('PROGRESS_STREAMS_TOTAL'),
    trustProxy: get('TRUST_PROXY'),
    port: get('PORT'),
    host: get('HOST'),
    logLevel: get('LOG_LEVEL') as LandingConfigInput['logLevel'],
  });
}

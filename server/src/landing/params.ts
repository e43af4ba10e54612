// The landing page's launch parameters and the auto-start rule (service spec, "Path A"). Pure and free
// of Node APIs: the browser bundle uses this very module, and the unit tests pin it down.
import type { SessionKey } from '../model/data-bridge.js';

/** A landing-page app: an app definition offered with a label, and for `-templates` a build-system choice. */
export interface LandingApp {
  name: string;
  label: string;
  buildSystems: { id: string; label: string }[];
}

/** The parameters the landing page reads; nothing else in the address or a form is looked at. */
export interface LaunchParameters {
  appDef?: string;
  gitUri?: string;
  gitUser?: string;
  gitMail?: string;
  platformUrl?: string;
  platformToken?: string;
  /** Only in anonymous mode (identity provider disabled). */
  user?: string;
}

/** Names in the address (or form) → field; `appdef` is accepted as an alias of `appDef`. */
const NAMES: Record<string, keyof LaunchParameters> = {
  appDef: 'appDef',
  appdef: 'appDef',
  gitUri: 'gitUri',
  gitUser: 'gitUser',
  gitMail: 'gitMail',
  platformUrl: 'platformUrl',
  platformToken: 'platformToken',
  user: 'user',
};

/** Every parameter name the page reads (and removes from the address bar after reading). */
export const PARAMETER_NAMES: readonly string[] = Object.keys(NAMES);

/** Longest value kept; longer ones are dropped as malformed rather than cut. */
export const PARAMETER_MAX_LENGTH = 4096;

export type ParameterSource = Iterable<[string, string]>;

/**
 * Reads the spec's parameters from a query string or form: blank values count as absent, `gitToken`
 * and unknown names are ignored, `user` is read only when the identity provider is disabled. When a
 * name appears twice the first value wins; `appDef` wins over `appdef`.
 */
export function readLaunchParameters(
  source: ParameterSource,
  options: { identityProvider: boolean },
): LaunchParameters {
  const result: LaunchParameters = {};
  const seen = new Set<string>();
  const entries = [...source].sort(([a], [b]) => (a === 'appDef' ? -1 : b === 'appDef' ? 1 : 0));
  for (const [name, raw] of entries) {
    const field = Object.hasOwn(NAMES, name) ? NAMES[name] : undefined;
    if (!field || seen.has(field)) continue;
    if (field === 'user' && options.identityProvider) continue;
    const value = typeof raw === 'string' ? raw.trim() : '';
    if (value === '' || value.length > PARAMETER_MAX_LENGTH) continue;
    seen.add(field);
    result[field] = value;
  }
  return result;
}

/** A query string without the parameters the page reads; other parameters (and their order) stay. */
export function withoutLaunchParameters(search: string): string {
  const params = new URLSearchParams(search);
  for (const name of PARAMETER_NAMES) params.delete(name);
  params.delete('gitToken');
  const rest = params.toString();
  return rest ? `?${rest}` : '';
}

export type StartDecision =
  /** Every condition holds: launch without a click. */
  | { kind: 'auto'; app: LandingApp }
  /** The identity provider is on and the user is not signed in yet: sign in first. */
  | { kind: 'login' }
  /** appDef is not a registered, whitelisted app of this landing page: show an error, send nothing. */
  | { kind: 'unknown-app'; appDef: string }
  /** Show the launch screen; `app` preselected when appDef named one. */
  | { kind: 'manual'; app?: LandingApp; missing: ('appDef' | 'gitUri' | 'platformToken' | 'user')[] };

/**
 * The spec's auto-start rule. A session starts without a click only when (1) appDef, gitUri and
 * platformToken are all present, (2) appDef is one of the configured apps, and (3) with the identity
 * provider on, the user is signed in (otherwise sign-in comes first). Anonymous mode also needs a
 * user, which the service requires; without one the launch screen asks for it.
 */
export function decideStart(
  params: LaunchParameters,
  context: { apps: readonly LandingApp[]; identityProvider: boolean; authenticated: boolean },
): StartDecision {
  if (context.identityProvider && !context.authenticated) return { kind: 'login' };
  const app = params.appDef === undefined ? undefined : context.apps.find((a) => a.name === params.appDef);
  if (params.appDef !== undefined && !app) return { kind: 'unknown-app', appDef: params.appDef };
  const missing: ('appDef' | 'gitUri' | 'platformToken' | 'user')[] = [];
  if (!app) missing.push('appDef');
  if (!params.gitUri) missing.push('gitUri');
  if (!params.platformToken) missing.push('platformToken');
  if (!context.identityProvider && !params.user) missing.push('user');
  if (app && missing.length === 0) return { kind: 'auto', app };
  return { kind: 'manual', ...(app ? { app } : {}), missing };
}

/** The build-system id sent as TEMPLATE: the chosen one when valid, else the app's first, else none. */
export function templateFor(app: LandingApp, chosen?: string): string | undefined {
  if (app.buildSystems.length === 0) return undefined;
  return app.buildSystems.find((b) => b.id === chosen)?.id ?? app.buildSystems[0]!.id;
}

/** env.fromMap of the launch request: IDE=true and each launch value that is present. */
export function launchEnvironment(params: LaunchParameters, template?: string): Record<string, string> {
  const env: Record<string, string> = { IDE: 'true' };
  const put = (key: SessionKey, value: string | undefined) => {
    if (value) env[key] = value;
  };
  put('GIT_URI', params.gitUri);
  put('GIT_USER', params.gitUser);
  put('GIT_MAIL', params.gitMail);
  put('PLATFORM_TOKEN', params.platformToken);
  put('PLATFORM_URL', params.platformUrl);
  put('TEMPLATE', template);
  return env;
}

/** A deep link to the landing page at `base` with these parameters (for integrators and `npm start`). */
export function deepLink(base: string, params: LaunchParameters): string {
  const url = new URL(base);
  for (const [name, value] of Object.entries(params)) if (value) url.searchParams.set(name, value);
  return url.toString();
}

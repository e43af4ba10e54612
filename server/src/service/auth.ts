import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { activityToken } from '../model/activity-token.js';
import { ErrorCode } from '../model/error-codes.js';
import type { ServiceConfig } from './config.js';
import { ApiError } from './errors.js';

/** Compares two secrets in constant time (hashing first hides the length as well). */
export function secretEquals(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export const ADMIN_TOKEN_HEADER = 'x-admin-api-token';
export const ACTIVITY_TOKEN_HEADER = 'x-activity-token';

interface Discovery {
  issuer: string;
  jwks: ReturnType<typeof createRemoteJWKSet>;
}

interface ActivitySession {
  metadata: { name: string };
  spec: { user: string; sessionSecret?: string };
}

/**
 * The one auth layer of the service (service spec, "Authentication"), as two strategies chosen at the
 * composition root: anonymous mode and identity-provider mode. Both check appId (470, constant time)
 * and the admin API token (X-Admin-Api-Token: 401 missing, 403 wrong).
 */
export interface Authenticator {
  checkAppId(appId: unknown): void;
  /** The user a request acts for: the given one (anonymous) or the token's (identity provider). */
  resolveUser(req: Request, requested: string | undefined): Promise<string>;
  /**
   * Authenticates the caller before anything is looked up (401 first); the check it returns refuses a
   * resource of another owner (403; anonymous mode has no identity to compare, appId is the credential).
   */
  ownerCheck(req: Request): Promise<(owner: string) => void>;
  /** The same for activity reports (PATCH /service/session): the check takes the reported session. */
  activityCheck(req: Request): Promise<(session: ActivitySession) => void>;
  /** Admin ping: the admin group claim (identity provider) or the admin API token (anonymous). */
  requireAdminIdentity(req: Request): Promise<void>;
  requireAdminToken(req: Request): void;
}

export function createAuthenticator(
  config: Pick<ServiceConfig, 'serviceAuthToken' | 'adminApiToken' | 'identityProvider' | 'activityRequiresToken'>,
): Authenticator {
  return config.identityProvider
    ? new IdentityProviderAuth(config, config.identityProvider)
    : new AnonymousAuth(config, config.activityRequiresToken);
}

abstract class SharedSecrets {
  constructor(private readonly secrets: Pick<ServiceConfig, 'serviceAuthToken' | 'adminApiToken'>) {}

  checkAppId(appId: unknown): void {
    if (typeof appId !== 'string' || !secretEquals(appId, this.secrets.serviceAuthToken)) {
      throw new ApiError(ErrorCode.invalidAppId, 'invalid app id');
    }
  }

  requireAdminToken(req: Request): void {
    const given = req.get(ADMIN_TOKEN_HEADER);
    if (given === undefined || given === '') throw new ApiError(ErrorCode.unauthorized, 'admin API token missing');
    if (!secretEquals(given, this.secrets.adminApiToken)) {
      throw new ApiError(ErrorCode.forbidden, 'admin API token is not valid');
    }
  }
}

/**
 * Anonymous mode: no identity to prove, so appId is the credential (as for stop and listing) and the
 * user is mandatory (blank: 400). An installation may harden activity reports: with
 * `activityRequiresToken` the IDE must prove it is the session with X-Activity-Token, an HMAC of the
 * session secret that the operator hands it (model/activity-token.ts): 401 missing, 403 wrong.
 */
class AnonymousAuth extends SharedSecrets implements Authenticator {
  constructor(
    secrets: Pick<ServiceConfig, 'serviceAuthToken' | 'adminApiToken'>,
    private readonly activityRequiresToken: boolean,
  ) {
    super(secrets);
  }

  async resolveUser(_req: Request, requested: string | undefined): Promise<string> {
    if (requested === undefined || requested.trim() === '') {
      throw ApiError.badRequest('user is required in anonymous mode');
    }
    return requested;
  }

  async ownerCheck(): Promise<(owner: string) => void> {
    return () => undefined;
  }

  async activityCheck(req: Request): Promise<(session: ActivitySession) => void> {
    if (!this.activityRequiresToken) return () => undefined;
    const given = req.get(ACTIVITY_TOKEN_HEADER);
    if (given === undefined || given === '') throw new ApiError(ErrorCode.unauthorized, 'activity token missing');
    return (session) => {
      const secret = session.spec.sessionSecret;
      if (!secret || !secretEquals(given, activityToken(secret, session.metadata.name))) {
        throw new ApiError(ErrorCode.forbidden, 'activity token is not valid');
      }
    };
  }

  async requireAdminIdentity(req: Request): Promise<void> {
    this.requireAdminToken(req);
  }
}

/**
 * Identity-provider mode: a bearer JWT verified against the issuer's discovery document and JWKS (jose
 * caches the key set and refetches it when a token names an unknown key: rotation works). The user
 * defaults to the token's user claim; another user is 403; no, invalid or expired token 401.
 */
class IdentityProviderAuth extends SharedSecrets implements Authenticator {
  private discovery?: Promise<Discovery>;

  constructor(
    secrets: Pick<ServiceConfig, 'serviceAuthToken' | 'adminApiToken'>,
    private readonly idp: NonNullable<ServiceConfig['identityProvider']>,
  ) {
    super(secrets);
  }

  async resolveUser(req: Request, requested: string | undefined): Promise<string> {
    const tokenUser = await this.tokenUser(req);
    if (requested === undefined || requested.trim() === '') return tokenUser;
    if (requested !== tokenUser) throw new ApiError(ErrorCode.forbidden, 'user differs from the token user');
    return requested;
  }

  async ownerCheck(req: Request): Promise<(owner: string) => void> {
    const caller = await this.tokenUser(req);
    return (owner) => {
      if (owner !== caller) throw new ApiError(ErrorCode.forbidden, 'the session belongs to another user');
    };
  }

  async activityCheck(req: Request): Promise<(session: ActivitySession) => void> {
    const ownedByCaller = await this.ownerCheck(req);
    return (session) => ownedByCaller(session.spec.user);
  }

  async requireAdminIdentity(req: Request): Promise<void> {
    const claims = await this.verify(req);
    const groups = claimAt(claims, this.idp.adminClaim);
    const list = Array.isArray(groups) ? groups : typeof groups === 'string' ? groups.split(/[\s,]+/) : [];
    if (!list.includes(this.idp.adminGroup)) throw new ApiError(ErrorCode.forbidden, 'not a member of the admin group');
  }

  private async tokenUser(req: Request): Promise<string> {
    const claims = await this.verify(req);
    const user = claimAt(claims, this.idp.userClaim);
    if (typeof user !== 'string' || user === '') {
      throw new ApiError(ErrorCode.forbidden, 'the token carries no user claim');
    }
    if (this.idp.userClaim === 'email' && !emailVerifiedPasses(claims.email_verified, this.idp.emailVerified)) {
      throw new ApiError(ErrorCode.forbidden, "the token's e-mail is not verified by the identity provider");
    }
    return user;
  }

  private async verify(req: Request): Promise<JWTPayload> {
    const header = req.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new ApiError(ErrorCode.unauthorized, 'bearer token missing', undefined, bearerChallenge());
    const { issuer, jwks } = await this.loadDiscovery();
    try {
      // A token without an expiry would be a credential for ever: refused.
      const { payload } = await jwtVerify(match[1]!, jwks, {
        issuer,
        audience: this.idp.audience,
        requiredClaims: ['exp'],
      });
      return payload;
    } catch (error) {
      if (error instanceof joseErrors.JWKSTimeout) {
        throw new ApiError(503, 'identity provider unavailable', undefined, { 'Retry-After': '5' });
      }
      const reason = error instanceof joseErrors.JWTExpired ? 'bearer token expired' : 'bearer token invalid';
      throw new ApiError(ErrorCode.unauthorized, reason, undefined, bearerChallenge());
    }
  }

  private loadDiscovery(): Promise<Discovery> {
    this.discovery ??= (async () => {
      const issuer = this.idp.issuer.replace(/\/+$/, '');
      const response = await fetch(`${issuer}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) throw new Error(`discovery answered ${response.status}`);
      const document = (await response.json()) as { issuer?: string; jwks_uri?: string };
      if (!document.jwks_uri || !document.issuer) throw new Error('discovery document lacks issuer or jwks_uri');
      const cooldownDuration = this.idp.jwksCooldownSeconds * 1000;
      return { issuer: document.issuer, jwks: createRemoteJWKSet(new URL(document.jwks_uri), { cooldownDuration }) };
    })();
    return this.discovery.catch(() => {
      this.discovery = undefined; // try again on the next request
      throw new ApiError(503, 'identity provider unavailable', undefined, { 'Retry-After': '5' });
    });
  }
}

/**
 * Whether a token's `email_verified` lets its `email` name the user. A provider that lets anyone sign
 * up or change their address issues tokens for addresses nobody confirmed: taken as they are, one
 * person acts as another. `required` (the default) wants `true`, as Keycloak and Google send it;
 * `ifPresent` is for a provider that never sends the claim (refuses only `false`); `ignored` is the
 * explicit opt-out of an installation whose provider vouches for every address itself. Some providers
 * (Amazon Cognito) send the claim as a string, hence "true".
 */
export function emailVerifiedPasses(
  claim: unknown,
  policy: NonNullable<ServiceConfig['identityProvider']>['emailVerified'],
): boolean {
  if (policy === 'ignored') return true;
  if (claim === true || claim === 'true') return true;
  return policy === 'ifPresent' && claim === undefined;
}

function bearerChallenge(): Record<string, string> {
  return { 'WWW-Authenticate': 'Bearer' };
}

/** A claim by name; dotted names reach into nested objects (e.g. `realm_access.roles`). */
function claimAt(claims: JWTPayload, name: string): unknown {
  if (name in claims) return claims[name];
  let value: unknown = claims;
  for (const part of name.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

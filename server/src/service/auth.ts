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

/**
 * The one auth layer of the service (service spec, "Authentication"):
 * - appId must equal the service auth token (470), compared in constant time;
 * - identity-provider mode: a bearer JWT verified against the issuer's discovery document and JWKS
 *   (jose caches the key set and refetches it when a token names an unknown key: rotation works);
 *   the user defaults to the token's e-mail claim, another user is 403, no/invalid/expired token 401;
 * - anonymous mode: the user is mandatory, blank is 400;
 * - admin ping: the admin group claim (anonymous mode: the admin API token instead);
 * - admin app definition calls: X-Admin-Api-Token, 401 missing, 403 wrong.
 */
export class Authenticator {
  private discovery?: Promise<Discovery>;

  constructor(
    private readonly config: Pick<ServiceConfig, 'serviceAuthToken' | 'adminApiToken' | 'identityProvider'>,
  ) {}

  get identityMode(): boolean {
    return this.config.identityProvider !== undefined;
  }

  checkAppId(appId: unknown): void {
    if (typeof appId !== 'string' || !secretEquals(appId, this.config.serviceAuthToken)) {
      throw new ApiError(ErrorCode.invalidAppId, 'invalid app id');
    }
  }

  /** The user a request acts for: the given one (anonymous mode) or the token's (identity mode). */
  async resolveUser(req: Request, requested: string | undefined): Promise<string> {
    const blank = requested === undefined || requested.trim() === '';
    if (!this.identityMode) {
      if (blank) throw ApiError.badRequest('user is required in anonymous mode');
      return requested;
    }
    const tokenUser = await this.tokenUser(req);
    if (blank) return tokenUser;
    if (requested !== tokenUser) throw new ApiError(ErrorCode.forbidden, 'user differs from the token user');
    return requested;
  }

  /** Identity mode: the verified token's user (401 without a valid token). Anonymous mode: undefined. */
  async caller(req: Request): Promise<string | undefined> {
    return this.identityMode ? this.tokenUser(req) : undefined;
  }

  /** Identity mode: the caller must own the resource (403). Anonymous mode: nothing to compare. */
  requireOwner(caller: string | undefined, owner: string): void {
    if (caller !== undefined && caller !== owner) {
      throw new ApiError(ErrorCode.forbidden, 'the session belongs to another user');
    }
  }

  /**
   * Anonymous mode has no identity to prove ownership, and appId alone would let anyone who knows it
   * keep any session alive. The IDE client instead proves it is the session with its activity token
   * (X-Activity-Token, derived from the session secret, see model/activity-token.ts): 401 missing,
   * 403 wrong.
   */
  requireActivityToken(req: Request, session: { metadata: { name: string }; spec: { sessionSecret?: string } }): void {
    const given = req.get(ACTIVITY_TOKEN_HEADER);
    if (given === undefined || given === '') throw new ApiError(ErrorCode.unauthorized, 'activity token missing');
    const secret = session.spec.sessionSecret;
    if (!secret || !secretEquals(given, activityToken(secret, session.metadata.name))) {
      throw new ApiError(ErrorCode.forbidden, 'activity token is not valid');
    }
  }

  /** Admin ping: a token with the admin group (identity mode) or the admin API token (anonymous mode). */
  async requireAdminIdentity(req: Request): Promise<void> {
    const idp = this.config.identityProvider;
    if (!idp) {
      this.requireAdminToken(req);
      return;
    }
    const claims = await this.verify(req);
    const groups = claimAt(claims, idp.adminClaim);
    const list = Array.isArray(groups) ? groups : typeof groups === 'string' ? groups.split(/[\s,]+/) : [];
    if (!list.includes(idp.adminGroup)) throw new ApiError(ErrorCode.forbidden, 'not a member of the admin group');
  }

  requireAdminToken(req: Request): void {
    const given = req.get(ADMIN_TOKEN_HEADER);
    if (given === undefined || given === '') throw new ApiError(ErrorCode.unauthorized, 'admin API token missing');
    if (!secretEquals(given, this.config.adminApiToken)) {
      throw new ApiError(ErrorCode.forbidden, 'admin API token is not valid');
    }
  }

  private async tokenUser(req: Request): Promise<string> {
    const claims = await this.verify(req);
    const user = claimAt(claims, this.config.identityProvider!.userClaim);
    if (typeof user !== 'string' || user === '') {
      throw new ApiError(ErrorCode.forbidden, 'the token carries no user claim');
    }
    return user;
  }

  private async verify(req: Request): Promise<JWTPayload> {
    const idp = this.config.identityProvider!;
    const header = req.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new ApiError(ErrorCode.unauthorized, 'bearer token missing', undefined, bearerChallenge());
    const { issuer, jwks } = await this.loadDiscovery();
    try {
      const { payload } = await jwtVerify(match[1]!, jwks, {
        issuer,
        ...(idp.audience ? { audience: idp.audience } : {}),
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
      const issuer = this.config.identityProvider!.issuer.replace(/\/+$/, '');
      const response = await fetch(`${issuer}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok) throw new Error(`discovery answered ${response.status}`);
      const document = (await response.json()) as { issuer?: string; jwks_uri?: string };
      if (!document.jwks_uri || !document.issuer) throw new Error('discovery document lacks issuer or jwks_uri');
      const cooldownDuration = (this.config.identityProvider?.jwksCooldownSeconds ?? 30) * 1000;
      return { issuer: document.issuer, jwks: createRemoteJWKSet(new URL(document.jwks_uri), { cooldownDuration }) };
    })();
    return this.discovery.catch(() => {
      this.discovery = undefined; // try again on the next request
      throw new ApiError(503, 'identity provider unavailable', undefined, { 'Retry-After': '5' });
    });
  }
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

/**
 * The kept sign-in as the page's API uses it (the cookie: sign-in-cookie.ts). When its access token
 * runs out, the page's short `GET /api/sign-in`, which a tab asks before it launches, renews it with
 * the refresh token at the provider's token endpoint, as the page's public client (its client id, and
 * the resource the page asks for). The long calls (a launch waits for its session) never renew: their
 * cookie could come back after a newer one. The tab hands its refresh token over to the page's server
 * and keeps none (client/main.ts): one holder, so a rotated refresh token is never spent twice, which
 * providers punish by revoking the whole sign-in. A token is kept, and a renewed one used, only once
 * the service takes it as the user's (its auth layer: the issuer's keys, the audience, the user claim),
 * so a made-up token is never sealed and only a verified user can have a refresh token kept.
 */
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ProviderMetadata } from './provider-metadata.js';
import type { ServiceClient, UserConfirmation } from './service-client.js';
import type { SignIn, SignInCookie } from './sign-in-cookie.js';

const TIMEOUT_MS = 5_000;
/**
 * How long a renewal's outcome answers for its refresh token: requests that left with the same cookie
 * share it (the provider refuses a rotated refresh token spent again), and a cookie the provider
 * refused, replayed, does not reach the provider again.
 */
const REUSE_MS = 30_000;
/** Renewals at the provider at once, for the whole page: a flood of cookies does not become one there. */
const MAX_IN_FLIGHT = 16;

export interface RefreshClient {
  clientId: string;
  resource?: string;
}

/** A renewal's outcome: new tokens, the provider's refusal (the sign-in is over), or no answer. */
type Renewal = { token: string; refreshToken?: string } | 'refused' | 'unavailable';

export class KeptSignIns {
  private readonly renewals = new Map<string, Promise<Renewal>>();
  private inFlight = 0;

  constructor(
    readonly cookie: SignInCookie,
    private readonly metadata: ProviderMetadata,
    private readonly client: RefreshClient,
    private readonly service: Pick<ServiceClient, 'confirmsUser'>,
    private readonly logger: Logger,
  ) {}

  /**
   * Keeps a tab's sign-in once the service confirms the token as the user's. A tab that signed in
   * earlier sends its new access token alone: the sign-in kept for this browser and user keeps its
   * refresh token and its end, unless that refresh token was renewed meanwhile (its renewal's cookie
   * is the newer one, and the refresh token it held may be spent). `unkeepable`: a token that is not
   * a JWT with an expiry, or expires at once.
   */
  async keep(
    req: Request,
    res: Response,
    keeping: { token: string; user: string; refreshToken?: string },
  ): Promise<'kept' | 'unkeepable' | Exclude<UserConfirmation, 'confirmed'>> {
    const { token, user, refreshToken } = keeping;
    const held = this.cookie.read(req);
    const keepsHeld = !refreshToken && held?.refreshToken !== undefined && held.user === user;
    const signIn = keepsHeld ? this.cookie.renewed(held, token) : this.cookie.signInOf(token, user, refreshToken);
    if (!signIn) return 'unkeepable';
    const confirmation = await this.service.confirmsUser(user, `Bearer ${token}`);
    if (confirmation === 'unavailable') this.logger.warn('sign-in not kept: the service did not answer for its token');
    if (confirmation !== 'confirmed') return confirmation;
    if (!(keepsHeld && this.renewals.has(renewalKey(user, held.refreshToken!)))) this.cookie.write(res, signIn);
    return 'kept';
  }

  /** The request's kept sign-in if its access token can be sent on as it is. */
  current(req: Request): SignIn | undefined {
    const kept = this.cookie.read(req);
    return kept && !this.cookie.expiring(kept) ? kept : undefined;
  }

  /**
   * The request's kept sign-in, its access token renewed and re-sealed if it ran out. A refusal drops
   * it; a provider that does not answer leaves it for a later try.
   */
  async refreshed(req: Request, res: Response): Promise<SignIn | undefined> {
    const kept = this.cookie.read(req);
    if (!kept || !this.cookie.expiring(kept)) return kept;
    const renewal = kept.refreshToken ? await this.renewal(kept.refreshToken, kept.user) : 'refused';
    if (renewal === 'unavailable') return undefined;
    const renewed = renewal !== 'refused' ? this.cookie.renewed(kept, renewal.token, renewal.refreshToken) : undefined;
    if (!renewed || this.cookie.expiring(renewed)) {
      this.cookie.clear(res);
      return undefined;
    }
    this.cookie.write(res, renewed);
    return renewed;
  }

  /** Drops the request's kept sign-in, and revokes its refresh token at the provider (best effort). */
  drop(req: Request, res: Response): void {
    const refreshToken = this.cookie.read(req)?.refreshToken;
    this.cookie.clear(res);
    if (refreshToken) void this.revoke(refreshToken);
  }

  private renewal(refreshToken: string, user: string): Promise<Renewal> {
    const key = renewalKey(user, refreshToken);
    let renewal = this.renewals.get(key);
    if (renewal) return renewal;
    if (this.inFlight >= MAX_IN_FLIGHT) return Promise.resolve('unavailable');
    this.inFlight++;
    renewal = this.redeem(refreshToken)
      .then((outcome) => (typeof outcome === 'object' ? this.confirmed(outcome, user, refreshToken) : outcome))
      .catch((): Renewal => 'unavailable')
      .then((outcome) => {
        this.inFlight--;
        const forget = () => this.renewals.delete(key);
        if (outcome === 'unavailable') forget();
        else setTimeout(forget, REUSE_MS).unref();
        return outcome;
      });
    this.renewals.set(key, renewal);
    return renewal;
  }

  /** The refresh grant (RFC 6749 §6). Logs the outcome only: never a token, nor the provider's answer. */
  private async redeem(refreshToken: string): Promise<Renewal> {
    const endpoint = await this.metadata.endpoint('token_endpoint');
    if (!endpoint) {
      this.logger.warn('kept sign-in not renewed: no token endpoint from the provider');
      return 'unavailable';
    }
    const grant: Record<string, string> = { grant_type: 'refresh_token', refresh_token: refreshToken };
    if (this.client.resource) grant.resource = this.client.resource;
    const answer = await this.post(endpoint, grant);
    if (!answer) return 'unavailable';
    if (answer.status === 400 || answer.status === 401) {
      this.logger.info({ status: answer.status }, 'kept sign-in not renewed: the provider refused');
      return 'refused';
    }
    const body = answer.ok ? ((await answer.json().catch(() => undefined)) as Record<string, unknown> | undefined) : {};
    if (typeof body?.access_token !== 'string') {
      this.logger.warn({ status: answer.status }, 'kept sign-in not renewed: no access token from the provider');
      return 'unavailable';
    }
    return {
      token: body.access_token,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
    };
  }

  /**
   * A renewal's tokens if the service takes the new access token as the kept user's: the provider may
   * have changed the user's claim since the sign-in. The refresh token of one the service refuses is
   * revoked (the rotated one, else the one spent). A service that does not answer leaves the tokens
   * kept (the provider may have rotated the refresh token: the old one is spent); the launch asks the
   * service again.
   */
  private async confirmed(renewal: Exclude<Renewal, string>, user: string, spent: string): Promise<Renewal> {
    const confirmation = await this.service.confirmsUser(user, `Bearer ${renewal.token}`);
    if (confirmation === 'unavailable')
      this.logger.warn('kept sign-in renewed unconfirmed: the service did not answer');
    if (confirmation !== 'refused') return renewal;
    this.logger.info('kept sign-in not renewed: the service refused the renewed token for its user');
    void this.revoke(renewal.refreshToken ?? spent);
    return 'refused';
  }

  /** Token revocation (RFC 7009), where the provider offers it. */
  private async revoke(refreshToken: string): Promise<void> {
    const endpoint = await this.metadata.endpoint('revocation_endpoint');
    if (endpoint) await this.post(endpoint, { token: refreshToken, token_type_hint: 'refresh_token' });
  }

  /** A form POST of the page's client to the provider; undefined when it does not answer. */
  private async post(endpoint: URL, fields: Record<string, string>): Promise<globalThis.Response | undefined> {
    const form = new URLSearchParams({ ...fields, client_id: this.client.clientId });
    try {
      return await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        // The form holds a token: never re-sent to wherever a redirect points.
        redirect: 'error',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      this.logger.warn(
        { errorName: (error as Error)?.name, endpoint: endpoint.pathname },
        'the provider did not answer',
      );
      return undefined;
    }
  }
}

/** The renewals' key: a refresh token's outcome answers only for the user it was confirmed for. */
function renewalKey(user: string, refreshToken: string): string {
  return `${user}\n${refreshToken}`;
}

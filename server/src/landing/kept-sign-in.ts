/**
 * The kept sign-in as the page's API uses it: read from its cookie (sign-in-cookie.ts) and, when its
 * access token runs out, renewed with its refresh token at the provider's token endpoint, the way the
 * page's own script would (a public client: the client id, and the resource the page asks for). A new
 * tab then launches without the round trip through the provider for as long as the sign-in is kept.
 * A renewal the provider refuses drops the kept sign-in: the tab signs in at the provider.
 */
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ProviderMetadata } from './provider-metadata.js';
import type { SignIn, SignInCookie } from './sign-in-cookie.js';

const TIMEOUT_MS = 5_000;
/**
 * How long a renewal answers for its refresh token after it is done: a tab's launch and progress
 * stream leave together with the same cookie, and the provider refuses a rotated refresh token reused.
 */
const REUSE_MS = 30_000;

export interface RefreshClient {
  clientId: string;
  resource?: string;
}

interface Renewal {
  token: string;
  refreshToken?: string;
}

export class KeptSignIns {
  /** Renewals by refresh token, under way or just done: requests at once share one (see REUSE_MS). */
  private readonly pending = new Map<string, Promise<Renewal | undefined>>();

  constructor(
    readonly cookie: SignInCookie,
    private readonly metadata: ProviderMetadata,
    private readonly client: RefreshClient,
    private readonly logger: Logger,
  ) {}

  /** The request's kept sign-in with an access token fit to send on (renewed and re-sealed if need be). */
  async read(req: Request, res: Response): Promise<SignIn | undefined> {
    const kept = this.cookie.read(req);
    if (!kept || !this.cookie.expiring(kept)) return kept;
    const renewal = kept.refreshToken ? await this.renew(kept.refreshToken) : undefined;
    const renewed = renewal && this.cookie.renewed(kept, renewal.token, renewal.refreshToken);
    if (!renewed || this.cookie.expiring(renewed)) {
      this.cookie.clear(res);
      return undefined;
    }
    this.cookie.write(res, renewed);
    return renewed;
  }

  private renew(refreshToken: string): Promise<Renewal | undefined> {
    let renewal = this.pending.get(refreshToken);
    if (!renewal) {
      renewal = this.redeem(refreshToken).then((renewed) => {
        const forget = () => this.pending.delete(refreshToken);
        if (renewed) setTimeout(forget, REUSE_MS).unref();
        else forget();
        return renewed;
      });
      this.pending.set(refreshToken, renewal);
    }
    return renewal;
  }

  /** The refresh grant (RFC 6749 §6). Logs only the outcome: never a token, nor the provider's answer. */
  private async redeem(refreshToken: string): Promise<Renewal | undefined> {
    const endpoint = await this.metadata.tokenEndpoint();
    if (!endpoint) {
      this.logger.warn('kept sign-in not renewed: the provider names no token endpoint');
      return undefined;
    }
    const form = new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: this.client.clientId,
    });
    if (this.client.resource) form.set('resource', this.client.resource);
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      if (!response.ok) {
        this.logger.info({ status: response.status }, 'kept sign-in not renewed: the provider refused');
        return undefined;
      }
      const answer = (await response.json()) as { access_token?: unknown; refresh_token?: unknown };
      if (typeof answer.access_token !== 'string') return undefined;
      return {
        token: answer.access_token,
        ...(typeof answer.refresh_token === 'string' ? { refreshToken: answer.refresh_token } : {}),
      };
    } catch (error) {
      this.logger.warn({ errorName: (error as Error)?.name }, 'kept sign-in not renewed: the provider did not answer');
      return undefined;
    }
  }
}

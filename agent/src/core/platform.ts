// The learning platform's participation token endpoint (DESIGN.md, "Learning platform contract"):
// GET {PLATFORM_URL}/api/core/account/participation-vcs-access-token?participationId=<id> with
// `Authorization: Bearer <PLATFORM_TOKEN>`; when GET fails, PUT the same URL to create one. The answer
// is the token as plain text.
import { AgentError } from './errors.js';
import { stripCredentials } from './redact.js';

export const TOKEN_PATH = '/api/core/account/participation-vcs-access-token';

export interface PlatformClientOptions {
  platformUrl: string;
  platformToken: string;
  /** Per request; default 15 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

function expired(status: number): AgentError {
  return new AgentError(
    'PlatformTokenExpired',
    `the learning platform rejected PLATFORM_TOKEN (HTTP ${status}): it is expired or not valid`,
    'Open the IDE again from the learning platform to get a fresh token',
  );
}

/**
 * PLATFORM_TOKEN goes to PLATFORM_URL as a bearer token, so the URL must be https; plain http only to
 * this machine (a platform on loopback, as in development). Checked before anything is sent.
 */
export function requireSecureUrl(platformUrl: string): void {
  let url: URL;
  try {
    url = new URL(platformUrl);
  } catch {
    throw new AgentError(
      'PlatformUrlInvalid',
      'PLATFORM_URL is not a URL',
      'Open the IDE again from the learning platform',
    );
  }
  const loopback = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && loopback)) return;
  throw new AgentError(
    'PlatformUrlInsecure',
    `PLATFORM_URL must use https (plain http only for this machine): ${url.origin} would receive PLATFORM_TOKEN unencrypted`,
    'Ask the learning platform to link to the IDE with its https address',
  );
}

export class PlatformClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: PlatformClientOptions) {
    requireSecureUrl(options.platformUrl);
    this.base = options.platformUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? fetch;
  }

  /** The platform without credentials, for messages. */
  get displayUrl(): string {
    return stripCredentials(this.base);
  }

  /** Gets the participation's VCS access token, creating one when there is none yet. */
  async participationToken(participationId: string): Promise<string> {
    const url = `${this.base}${TOKEN_PATH}?participationId=${encodeURIComponent(participationId)}`;
    const got = await this.request('GET', url);
    if (got.ok) return got.token;
    if (got.status === 401 || got.status === 403) throw expired(got.status);
    const put = await this.request('PUT', url);
    if (put.ok) return put.token;
    if (put.status === 401 || put.status === 403) throw expired(put.status);
    throw new AgentError(
      'PlatformError',
      `the learning platform ${this.displayUrl} gave no access token for participation ${participationId} (GET HTTP ${got.status}, PUT HTTP ${put.status})`,
      'Check that the participation exists and belongs to this account, then try again',
    );
  }

  private async request(
    method: 'GET' | 'PUT',
    url: string,
  ): Promise<{ ok: true; token: string } | { ok: false; status: number }> {
    let response: Response;
    try {
      response = await this.fetch(url, {
        method,
        headers: { Authorization: `Bearer ${this.options.platformToken}`, Accept: 'text/plain' },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 15_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
      throw new AgentError(
        'PlatformUnreachable',
        `the learning platform ${this.displayUrl} is unreachable (${cause})`,
        'Check PLATFORM_URL and the network from the session, then try again',
      );
    }
    const body = await response.text().catch(() => '');
    const token = body.trim();
    if (response.ok && token !== '') return { ok: true, token };
    return { ok: false, status: response.ok ? 204 : response.status };
  }
}

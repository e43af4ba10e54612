/**
 * The identity provider's discovery document, fetched by the landing page's server and handed to the
 * page with its configuration, so the browser does not fetch it again on each of its two loads of a
 * sign-in (before the provider and back). Kept for a while and refreshed in the background; a page
 * rendered before the first fetch succeeded goes without it (its script fetches the document itself).
 */
const FRESH_MS = 10 * 60_000;
const TIMEOUT_MS = 5_000;

export class ProviderMetadata {
  private value: Record<string, unknown> | undefined;
  private fetchedAt = 0;
  private pending: Promise<void> | undefined;

  constructor(private readonly issuer: string) {}

  /** The document if one was fetched; starts a refresh when it is missing or old (never waits for it). */
  current(now = Date.now()): Record<string, unknown> | undefined {
    if (now - this.fetchedAt > FRESH_MS) void this.refresh();
    return this.value;
  }

  /**
   * An endpoint the document names (`token_endpoint`, `revocation_endpoint`), fetched first if there is
   * none yet. Only https, or http where the issuer itself is http (a local provider); tokens are sent there.
   */
  async endpoint(name: 'token_endpoint' | 'revocation_endpoint'): Promise<URL | undefined> {
    if (!this.current()) await this.refresh();
    const endpoint = this.value?.[name];
    if (typeof endpoint !== 'string' || !URL.canParse(endpoint)) return undefined;
    const url = new URL(endpoint);
    const allowed = new URL(this.issuer).protocol === 'http:' ? ['https:', 'http:'] : ['https:'];
    return allowed.includes(url.protocol) ? url : undefined;
  }

  /** Fetches the document now (once at a time); a failure keeps what was there. */
  refresh(): Promise<void> {
    this.pending ??= this.fetchDocument().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchDocument(): Promise<void> {
    try {
      const url = `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
      const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!response.ok) return;
      const document = (await response.json()) as Record<string, unknown>;
      // Only the issuer's own document (a trailing slash aside): the page checks tokens against it.
      const bare = (issuer: unknown) => (typeof issuer === 'string' ? issuer.replace(/\/$/, '') : issuer);
      if (bare(document.issuer) !== bare(this.issuer)) return;
      this.value = document;
      this.fetchedAt = Date.now();
    } catch {
      // The page's script fetches it itself meanwhile.
    }
  }
}

// A real OpenID Connect provider (oidc-provider from npm) for browser sign-in: a public client using the
// authorization-code flow with PKCE and refresh tokens, and oidc-provider's own development login and
// consent forms (any login name signs in as that account; its e-mail claim is the login name). Access
// tokens are JWTs for the service's audience carrying the e-mail claim, as the service's
// identity-provider mode expects.
//
//   const idp = await listenLoginProvider();                   // issuer known, nothing served yet
//   const landing = await startLandingPage({ ..., identityProvider: { issuer: idp.issuer, ... } });
//   await idp.start({ clientId: 'landing', redirectUris: [`${landing.url}/`] });
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type Configuration } from 'oidc-provider';
import { AUDIENCE } from './oidc.js';

export interface LoginProvider {
  issuer: string;
  audience: string;
  /** The scopes a client should ask for: openid, email and the service's resource scope. */
  scope: string;
  /**
   * Serves the provider for `client` (or several). With a `secret`, a confidential client (as the
   * session host's sign-in is), else a public one.
   */
  start(client: LoginClient | LoginClient[]): Promise<void>;
  close(): Promise<void>;
}

export interface LoginClient {
  clientId: string;
  redirectUris: string[];
  secret?: string;
}

/** `host`: the address to listen on and name in the issuer (default loopback). */
export async function listenLoginProvider(options: { host?: string } = {}): Promise<LoginProvider> {
  const host = options.host ?? '127.0.0.1';
  const server = http.createServer((_req, res) => {
    res.writeHead(503).end('not started');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://${host}:${port}`;

  return {
    issuer,
    audience: AUDIENCE,
    scope: 'openid email api',
    async start(client) {
      const clients = Array.isArray(client) ? client : [client];
      const confidential = new Set(clients.filter((c) => c.secret).map((c) => c.clientId));
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const key = { ...(await exportJWK(privateKey)), kid: 'login-key', alg: 'RS256', use: 'sig' };
      // Keys beyond the repository's minimal declaration of oidc-provider (oidc-provider.d.ts) ride along untyped.
      const configuration: Configuration & Record<string, unknown> = {
        clients: clients.map(({ clientId, redirectUris, secret }) => ({
          client_id: clientId,
          ...(secret
            ? { client_secret: secret, token_endpoint_auth_method: 'client_secret_basic' }
            : { token_endpoint_auth_method: 'none' }),
          // A public client (the landing page's) may renew its sign-in with a refresh token.
          grant_types: secret ? ['authorization_code'] : ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: redirectUris,
          scope: 'openid email profile api',
        })),
        jwks: { keys: [key] },
        scopes: ['openid', 'email', 'profile', 'api'],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'] },
        conformIdTokenClaims: false,
        // Refresh tokens to every client allowed the grant, as Keycloak issues them (oidc-provider's own
        // default also wants the offline_access scope); rotated on each use, for a public client.
        issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
          client.grantTypeAllowed('refresh_token'),
        pkce: { required: () => true },
        findAccount: (_ctx: unknown, id: string) => ({
          accountId: id,
          claims: () => ({ sub: id, email: id, email_verified: true, preferred_username: id }),
        }),
        features: {
          devInteractions: { enabled: true },
          resourceIndicators: {
            enabled: true,
            // A confidential client (the session host's) gets access tokens for the provider's own
            // userinfo, where its proxy completes the claims, as with any provider.
            defaultResource: (_ctx, c) => (confidential.has(c.clientId) ? undefined : AUDIENCE),
            useGrantedResource: () => true,
            getResourceServerInfo: () => ({
              scope: 'api',
              audience: AUDIENCE,
              accessTokenFormat: 'jwt',
              accessTokenTTL: 300,
              jwt: { sign: { alg: 'RS256' } },
            }),
          },
        },
        extraTokenClaims: (_ctx, token) => {
          const accountId = (token as { accountId?: string }).accountId;
          return accountId ? { email: accountId, email_verified: true } : undefined;
        },
      };
      const provider = new Provider(issuer, configuration);
      server.removeAllListeners('request');
      server.on('request', provider.callback());
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

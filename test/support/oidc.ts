// A real OpenID Connect provider (oidc-provider from npm) for the service's identity-provider mode.
// Each test user is a client that gets JWT access tokens through the client-credentials grant; the
// token carries that user's e-mail and groups claims, signed with the provider's own key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

export interface TestIdentity {
  email: string;
  groups?: string[];
  /** Lifetime of this identity's tokens in seconds (default 300). */
  ttlSeconds?: number;
  /**
   * The token's `email_verified` (default true, as Keycloak's e-mail scope puts it into access
   * tokens); false: an account whose e-mail nobody confirmed, which the provider still issues.
   */
  emailVerified?: boolean;
}

export interface TestIdentityProvider {
  issuer: string;
  audience: string;
  /** A fresh JWT access token for the identity with this client id. */
  token(clientId: string): Promise<string>;
  /**
   * A JWT with exactly these claims, signed with the provider's own key, as a misconfigured (or
   * compromised) provider would issue it: for the attacks on what the service accepts.
   */
  signWithProviderKey(claims: JWTPayload): Promise<string>;
  close(): Promise<void>;
}

export const AUDIENCE = 'urn:ide-cloud:service';

async function signingKey(kid: string) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

/**
 * Starts the provider on a loopback port (or `host`: pods on the real node reach the host at its
 * bridge address only). `port` lets a test restart it on the same issuer (key rotation); `kids` names
 * the signing keys, the first one signs.
 */
export async function startIdentityProvider(
  identities: Record<string, TestIdentity>,
  options: { port?: number; kids?: string[]; host?: string } = {},
): Promise<TestIdentityProvider> {
  const host = options.host ?? '127.0.0.1';
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://${host}:${port}`;
  const keys = await Promise.all((options.kids ?? ['key-1']).map(signingKey));
  const secret = (clientId: string) => `secret-of-${clientId}-0123456789`;
  const provider = new Provider(issuer, {
    clients: Object.keys(identities).map((clientId) => ({
      client_id: clientId,
      client_secret: secret(clientId),
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'api',
    })),
    jwks: { keys },
    scopes: ['openid', 'api'],
    ttl: { ClientCredentials: (_ctx, _token, client) => identities[client.clientId]?.ttlSeconds ?? 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, _resource, client) => ({
          scope: 'api',
          audience: AUDIENCE,
          accessTokenFormat: 'jwt',
          accessTokenTTL: identities[client.clientId]?.ttlSeconds ?? 300,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const identity = identities[(token as { clientId?: string }).clientId ?? ''];
      return identity
        ? { email: identity.email, email_verified: identity.emailVerified ?? true, groups: identity.groups ?? [] }
        : undefined;
    },
  });
  server.on('request', provider.callback());

  return {
    issuer,
    audience: AUDIENCE,
    async signWithProviderKey(claims) {
      const key = keys[0]!;
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: key.kid })
        .sign(await importJWK(key as JWK, 'RS256'));
    },
    async token(clientId) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${secret(clientId)}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api', resource: AUDIENCE }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string };
      if (!body.access_token) throw new Error(`no token for ${clientId}: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

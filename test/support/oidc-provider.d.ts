// The little of oidc-provider's API the tests use (the package ships no TypeScript declarations).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ClientLike {
    clientId: string;
  }
  type Hook<A extends unknown[], R> = (...args: A) => R | Promise<R>;

  export interface Configuration {
    clients?: Record<string, unknown>[];
    jwks?: { keys: Record<string, unknown>[] };
    scopes?: string[];
    ttl?: Record<string, number | Hook<[unknown, unknown, ClientLike], number>>;
    features?: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: Hook<[unknown, ClientLike, string?], string | undefined>;
        useGrantedResource?: Hook<[unknown, unknown], boolean>;
        getResourceServerInfo?: Hook<[unknown, string, ClientLike], Record<string, unknown>>;
      };
    };
    extraTokenClaims?: Hook<[unknown, unknown], Record<string, unknown> | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}

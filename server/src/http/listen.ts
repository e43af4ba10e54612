import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A listening HTTP server as its starters hand it out: where it is, and how to stop it. */
export interface Listening {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** How long a client may take to send a request, and how many connections are served at once. */
export interface ConnectionLimits {
  /** Whole request (headers and body) received within this; the answer's wait is not bounded here. */
  requestReadTimeoutMs: number;
  /** Headers received within this (at most the request read timeout). */
  headersTimeoutMs: number;
  maxConnections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  requestReadTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  maxConnections: 1000,
};

/**
 * Starts `app` on host:port and resolves once it listens; close() also ends kept-alive sockets.
 * A client that sends its request too slowly gets 408 (Node's request timeout covers receiving the
 * request only), while a request may still wait minutes for its answer (a launch waits up to its
 * timeout). Connections beyond the cap are refused at once.
 */
export async function listen(
  app: RequestListener,
  port: number,
  host: string,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): Promise<Listening & { server: Server }> {
  const server = createServer(
    {
      requestTimeout: limits.requestReadTimeoutMs,
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestReadTimeoutMs),
      // Expired requests are found by a periodic check: a tenth of the timeout keeps it close.
      connectionsCheckingInterval: Math.max(100, Math.min(limits.requestReadTimeoutMs, limits.headersTimeoutMs) / 10),
    },
    app,
  );
  server.maxConnections = limits.maxConnections;
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    server,
    url: `http://${shown.includes(':') ? `[${shown}]` : shown}:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

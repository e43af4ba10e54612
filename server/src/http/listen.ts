import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A listening HTTP server as its starters hand it out: where it is, and how to stop it. */
export interface Listening {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Starts `app` on host:port and resolves once it listens. Requests may block for minutes (a launch
 * waits up to its timeout), so there is no request timeout; close() also ends kept-alive sockets.
 */
export async function listen(
  app: { listen(port: number, host: string): Server },
  port: number,
  host: string,
): Promise<Listening & { server: Server }> {
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
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

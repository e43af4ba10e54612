// The bridge's HTTP server: GET /health, POST /data. Node's http only; bodies are capped, answers are
// JSON, and neither answers nor log lines ever carry an injected value.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.js';
import { InvalidInputError, parseDataPayload } from './payload.js';
import { PersistError, type EnvironmentStore } from './store.js';

export const MAX_BODY_BYTES = 64 * 1024;

export interface BridgeServerOptions {
  host: string;
  port: number;
  maxBodyBytes?: number;
  /** How long to keep retrying a port still held, e.g. by the extension host of a window just reloaded. */
  bindRetryMs?: number;
  bindRetryIntervalMs?: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class BridgeServer {
  private readonly server: http.Server;
  private readonly maxBodyBytes: number;
  private disposed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: EnvironmentStore,
    private readonly logger: Logger,
    private readonly options: BridgeServerOptions,
  ) {
    this.maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  /** Starts listening; resolves with the bound address, rejects (after retrying a busy port) when it cannot. */
  listen(): Promise<AddressInfo> {
    const deadline = Date.now() + (this.options.bindRetryMs ?? 30_000);
    const interval = this.options.bindRetryIntervalMs ?? 1000;
    return new Promise((resolve, reject) => {
      const attempt = (): void => {
        if (this.disposed) return reject(new Error('the data bridge was disposed before it could listen'));
        const onError = (error: NodeJS.ErrnoException): void => {
          this.server.off('listening', onListening);
          if (error.code === 'EADDRINUSE' && Date.now() < deadline) {
            this.logger.warn(`port ${this.options.port} is in use; retrying`);
            this.retryTimer = setTimeout(attempt, interval);
            return;
          }
          reject(
            new Error(`cannot listen on ${this.options.host}:${this.options.port}: ${error.code ?? error.message}`),
          );
        };
        const onListening = (): void => {
          this.server.off('error', onError);
          const address = this.server.address() as AddressInfo;
          this.logger.info(`listening on ${address.address}:${address.port}`);
          resolve(address);
        };
        this.server.once('error', onError);
        this.server.once('listening', onListening);
        this.server.listen(this.options.port, this.options.host);
      };
      attempt();
    });
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.retryTimer);
    if (this.server.listening) {
      this.server.close();
      this.logger.info('server closed');
    }
    this.server.closeAllConnections();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://bridge').pathname;
    try {
      if (path === '/health') {
        if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed('GET');
        return send(res, 200, { status: 'UP' });
      }
      if (path === '/data') {
        if (req.method !== 'POST') throw methodNotAllowed('POST');
        const body = await this.readBody(req);
        const environment = parseDataPayload(body);
        await this.store.merge(environment);
        return send(res, 200, { stored: Object.keys(environment).length, total: this.store.size });
      }
      throw new HttpError(404, `no route for ${path}`);
    } catch (error) {
      if (error instanceof HttpError) return send(res, error.status, { error: error.message }, error.status === 413);
      if (error instanceof InvalidInputError) return send(res, 400, { error: error.message });
      this.logger.error(`request to ${path} failed: ${error instanceof Error ? error.name : typeof error}`);
      return send(res, 500, { error: error instanceof PersistError ? error.message : 'internal error' });
    }
  }

  /** Reads the body up to the cap; past it the rest is drained (so the client reads the 413) and dropped. */
  private readBody(req: http.IncomingMessage): Promise<string> {
    const limit = this.maxBodyBytes;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= limit) chunks.push(chunk);
        else chunks.length = 0;
        if (size > limit * 16) {
          reject(this.tooLarge());
          req.destroy();
        }
      });
      req.on('end', () => (size > limit ? reject(this.tooLarge()) : resolve(Buffer.concat(chunks).toString('utf8'))));
      req.on('error', reject);
    });
  }

  private tooLarge(): HttpError {
    return new HttpError(413, `body exceeds ${this.maxBodyBytes} bytes`);
  }
}

function methodNotAllowed(allowed: string): HttpError {
  return new HttpError(405, `method not allowed, use ${allowed}`);
}

function send(res: http.ServerResponse, status: number, body: unknown, close = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

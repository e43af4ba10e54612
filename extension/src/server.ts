// The bridge's HTTP server: GET /health, POST /data, and the session's end (/notice, /activity, /save).
// Node's http only; bodies are capped, answers are JSON, and neither answers nor log lines ever carry
// an injected value. Every route but /health needs the instance's token (Authorization: Bearer).
// POST /data is the operator's: it names the reservation it injects for, and the bridge takes one
// injection per reservation (the instance restarts for the next one). The operator also posts the
// stop notice, reads the IDE's last activity and asks for the save; the extension reads the notice
// and reports activity, on this host only. GET /data (the bridge process only) serves the values back
// to this host with the token; `?wait=<seconds>` (up to DATA_WAIT_MAX_SECONDS) holds the answer until the
// values are injected or the wait ends, so the agent's bootstrap beside the IDE waits without polling.
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DATA_BRIDGE_PATHS,
  DATA_BRIDGE_RESERVATION_HEADER,
  DATA_WAIT_MAX_SECONDS,
  type BridgeActivity,
  type DataAnswer,
  type SaveWorkResult,
} from '../../server/src/model/data-bridge.js';
import type { Logger } from './logger.js';
import type { SessionLifecycle } from './lifecycle.js';
import {
  InvalidInputError,
  parseDataPayload,
  parseEmptyPayload,
  parseNoticePayload,
  parseSavePayload,
} from './payload.js';
import type { WorkSaver } from './save.js';
import { PersistError, type EnvironmentStore } from './store.js';

export const MAX_BODY_BYTES = 64 * 1024;
const RESERVATION = /^[A-Za-z0-9._-]{1,128}$/;

export interface BridgeServerOptions {
  host: string;
  port: number;
  /** The secret the operator sends as `Authorization: Bearer <token>` on POST /data. */
  token: string;
  /** Serve the values back (GET /data) to callers on this host with the token: the IDE's extension. */
  serveValues?: boolean;
  /** The stop notice and the IDE's activity (/notice, /activity); without it those routes answer 404. */
  lifecycle?: SessionLifecycle;
  /** Runs the save of POST /save; without it a save answers `failed` (SaveUnavailable). */
  saver?: WorkSaver;
  maxBodyBytes?: number;
  /** How long to keep retrying a port still held, e.g. by the extension host of a window just reloaded. */
  bindRetryMs?: number;
  bindRetryIntervalMs?: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, string> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export class BridgeServer {
  private readonly server: http.Server;
  private readonly maxBodyBytes: number;
  private readonly tokenDigest: Buffer;
  /** The reservation whose values were injected; in memory, so a restarted instance takes the next one. */
  private reservation: string | undefined;
  /** Whether an injection's values are stored: what GET /data?wait=… waits for. */
  private injected = false;
  /** GET /data requests waiting for the injection. */
  private readonly waiters = new Set<() => void>();
  private disposed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: EnvironmentStore,
    private readonly logger: Logger,
    private readonly options: BridgeServerOptions,
  ) {
    this.maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
    this.tokenDigest = digest(options.token);
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
    for (const wake of [...this.waiters]) wake();
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
      if (path === DATA_BRIDGE_PATHS.data && req.method === 'GET' && this.options.serveValues) {
        this.localOnly(req, 'the values are served on this host only');
        this.authenticate(req);
        const waitSeconds = waitOf(req);
        if (waitSeconds > 0 && !this.injected) await this.injection(waitSeconds * 1000, res);
        if (res.destroyed) return;
        const answer: DataAnswer = { environment: this.store.all(), injected: this.injected };
        return send(res, 200, answer);
      }
      if (path === DATA_BRIDGE_PATHS.data) {
        if (req.method !== 'POST') throw methodNotAllowed(this.options.serveValues ? 'GET or POST' : 'POST');
        this.authenticate(req);
        const reservation = reservationOf(req);
        const body = await this.readBody(req);
        // A `user` (older operators) is not the bridge's business: the proxy's admission writes its
        // allowed users, on a volume this container has no part of.
        const { environment } = parseDataPayload(body);
        // Checked and taken in one synchronous step: of two concurrent posts, one gets 409.
        this.claim(reservation);
        try {
          await this.store.merge(environment);
        } catch (error) {
          this.reservation = undefined; // nothing was taken: the operator's retry may post again
          throw error;
        }
        this.injected = true;
        for (const wake of [...this.waiters]) wake();
        return send(res, 200, { stored: Object.keys(environment).length, total: this.store.size });
      }
      const lifecycle = this.options.lifecycle;
      if (path === DATA_BRIDGE_PATHS.notice && lifecycle) {
        if (req.method === 'GET') {
          this.localOnly(req);
          this.authenticate(req);
          return send(res, 200, { notice: lifecycle.notice() ?? null });
        }
        if (req.method !== 'POST') throw methodNotAllowed('GET or POST');
        this.authenticate(req);
        const notice = parseNoticePayload(await this.readBody(req));
        const id = lifecycle.notify(notice);
        this.logger.info(`stop notice ${id}: ${notice.reason} in ${notice.secondsLeft} s`);
        return send(res, 200, { id });
      }
      if (path === DATA_BRIDGE_PATHS.activity && lifecycle) {
        if (req.method === 'GET') {
          this.authenticate(req);
          const answer: BridgeActivity = { secondsSinceActivity: lifecycle.secondsSinceActivity() };
          return send(res, 200, answer);
        }
        if (req.method !== 'POST') throw methodNotAllowed('GET or POST');
        this.localOnly(req);
        this.authenticate(req);
        parseEmptyPayload(await this.readBody(req));
        lifecycle.recordActivity();
        return send(res, 200, { recorded: true });
      }
      if (path === DATA_BRIDGE_PATHS.save) {
        if (req.method !== 'POST') throw methodNotAllowed('POST');
        this.authenticate(req);
        const { timeoutSeconds } = parseSavePayload(await this.readBody(req));
        const result: SaveWorkResult = this.options.saver
          ? await this.options.saver.save(timeoutSeconds)
          : { outcome: 'failed', code: 'SaveUnavailable', message: 'this bridge does not save work' };
        return send(res, 200, result);
      }
      throw new HttpError(404, `no route for ${path}`);
    } catch (error) {
      if (error instanceof HttpError) {
        // An unread body (refused before reading) or an oversized one: the connection is not reused.
        const close = error.status === 413 || error.status === 401 || error.status === 403;
        return send(res, error.status, { error: error.message, ...error.extra }, close, error.headers);
      }
      if (error instanceof InvalidInputError) return send(res, 400, { error: error.message });
      this.logger.error(`request to ${path} failed: ${error instanceof Error ? error.name : typeof error}`);
      return send(res, 500, { error: error instanceof PersistError ? error.message : 'internal error' });
    }
  }

  /** Resolves once the values are injected, the wait ends, the caller hangs up or the server closes. */
  private injection(ms: number, res: http.ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        res.off('close', wake);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      res.on('close', wake);
      this.waiters.add(wake);
      if (this.disposed) wake();
    });
  }

  /** 403 for a caller on another host: what only the IDE's extension (this host) may do. */
  private localOnly(req: http.IncomingMessage, message = 'this route answers callers on this host only'): void {
    if (!isLoopback(req.socket.remoteAddress)) throw new HttpError(403, message);
  }

  /** 401 without a bearer token, 403 with another than the instance's; compared in constant time. */
  private authenticate(req: http.IncomingMessage): void {
    const route = `${req.method} ${new URL(req.url ?? '/', 'http://bridge').pathname}`;
    const match = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (!match) {
      this.logger.warn(`${route} refused: no bearer token`);
      throw new HttpError(401, 'a bearer token is required', {}, { 'www-authenticate': 'Bearer' });
    }
    if (!timingSafeEqual(digest(match[1]!), this.tokenDigest)) {
      this.logger.warn(`${route} refused: wrong token`);
      throw new HttpError(403, "the token is not this instance's");
    }
  }

  /** One injection per reservation: a second post, for the same reservation or another, is refused. */
  private claim(reservation: string): void {
    if (this.reservation !== undefined) {
      const same = this.reservation === reservation;
      this.logger.warn(`POST /data refused: values were already injected (${same ? 'same' : 'another'} reservation)`);
      throw new HttpError(
        409,
        same
          ? 'the values of this reservation were already injected'
          : 'the values of another reservation are held; a new reservation restarts the instance',
        { reservation: same ? 'same' : 'other' },
      );
    }
    this.reservation = reservation;
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

function isLoopback(address: string | undefined): boolean {
  return (
    address !== undefined && (address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.'))
  );
}

function methodNotAllowed(allowed: string): HttpError {
  return new HttpError(405, `method not allowed, use ${allowed}`);
}

/** The seconds of `?wait=`: absent 0; an integer from 0 to DATA_WAIT_MAX_SECONDS, else 400. */
function waitOf(req: http.IncomingMessage): number {
  const raw = new URL(req.url ?? '/', 'http://bridge').searchParams.get('wait');
  if (raw === null) return 0;
  if (!/^\d{1,4}$/.test(raw) || Number(raw) > DATA_WAIT_MAX_SECONDS) {
    throw new HttpError(400, `wait must be a number of seconds from 0 to ${DATA_WAIT_MAX_SECONDS}`);
  }
  return Number(raw);
}

function reservationOf(req: http.IncomingMessage): string {
  const value = req.headers[DATA_BRIDGE_RESERVATION_HEADER];
  if (typeof value !== 'string' || !RESERVATION.test(value)) {
    throw new HttpError(
      400,
      `header ${DATA_BRIDGE_RESERVATION_HEADER} must name the reservation (1-128 of A-Z a-z 0-9 . _ -)`,
    );
  }
  return value;
}

/** Fixed-length digests, so the comparison takes the same time whatever the token's length. */
function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function send(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  close = false,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

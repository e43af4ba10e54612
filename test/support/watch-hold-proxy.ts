// A plain-http proxy in front of another plain-http endpoint (kube-write-proxy's, or a server such as
// the service) that can hold back the events of chosen watches: what a watch event late on a loaded
// machine looks like, made at will; and hold one chosen request before it reaches the server, so a
// test can change the world in the instant between a client's read and its write, or keep a request
// in flight past what its client does meanwhile. Everything else passes as it comes.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface HoldProxy {
  /** The proxy's own URL (plain http on loopback). */
  readonly url: string;
  /**
   * Holds back the events of every watch (open or opened later) whose path `matches` (query
   * included), until the answer is called: the held events then go out in order.
   */
  hold(matches: (pathAndQuery: string) => boolean): () => void;
  /**
   * Holds the next request whose method and path (query included) `matches` before it is forwarded.
   * Resolves once it arrived with the function that sends it on.
   */
  holdRequest(matches: (method: string, pathAndQuery: string) => boolean): Promise<() => void>;
  /** Drops a request hold armed but not met yet: the next such request passes as it comes. */
  disarmRequest(): void;
  close(): Promise<void>;
}

export interface WatchHoldProxy extends HoldProxy {
  /** A kubeconfig file for a client: plain http to this proxy, no credentials in it. */
  readonly kubeconfig: string;
}

interface Stream {
  url: string;
  res: http.ServerResponse;
  held: Buffer[];
  ended: boolean;
}

/** Starts the proxy on 127.0.0.1 in front of the server that `upstreamKubeconfig` (a plain-http one) names. */
export async function startWatchHoldProxy(upstreamKubeconfig: string): Promise<WatchHoldProxy> {
  const upstreamConfig = await readFile(upstreamKubeconfig, 'utf8');
  const server = /server: (http:\/\/[^\s]+)/.exec(upstreamConfig)?.[1];
  if (!server) throw new Error('the upstream kubeconfig names no plain-http server');
  const proxy = await startHoldProxy(() => new URL(server));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-hold-proxy-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(kubeconfig, upstreamConfig.replace(server, proxy.url), { mode: 0o600 });
  return {
    ...proxy,
    kubeconfig,
    async close() {
      await proxy.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the proxy on 127.0.0.1 in front of `upstream` (read per request: the server may start after
 * the proxy), whose path prefix, if any, goes before each request's.
 */
export async function startHoldProxy(upstream: () => URL): Promise<HoldProxy> {
  const streams = new Set<Stream>();
  let holding: ((pathAndQuery: string) => boolean) | undefined;
  const held = (url: string) => !!holding?.(url) && url.includes('watch=');
  let holdingRequest:
    { matches: (method: string, url: string) => boolean; arrived: (send: () => void) => void } | undefined;

  const proxy = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (holdingRequest?.matches(req.method ?? 'GET', url)) {
      const { arrived } = holdingRequest;
      holdingRequest = undefined;
      // The body waits in the paused request until it is piped on.
      return arrived(() => forward(req, res, url));
    }
    forward(req, res, url);
  });
  const forward = (req: http.IncomingMessage, res: http.ServerResponse, url: string) => {
    const target = upstream();
    const forwarded = http.request({
      hostname: target.hostname,
      port: target.port,
      method: req.method,
      path: target.pathname.replace(/\/$/, '') + url,
      headers: { ...req.headers, host: target.host },
    });
    forwarded.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    forwarded.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      const stream: Stream = { url, res, held: [], ended: false };
      streams.add(stream);
      res.once('close', () => streams.delete(stream));
      answer.on('data', (chunk: Buffer) => {
        if (held(url)) stream.held.push(chunk);
        else res.write(chunk);
      });
      answer.on('end', () => {
        stream.ended = true;
        if (stream.held.length === 0) res.end();
      });
      answer.on('error', () => res.destroy());
    });
    req.pipe(forwarded);
  };
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = proxy.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    hold(matches) {
      holding = matches;
      return () => {
        holding = undefined;
        for (const stream of streams) {
          if (stream.held.length === 0) continue;
          for (const chunk of stream.held.splice(0)) stream.res.write(chunk);
          if (stream.ended) stream.res.end();
        }
      };
    },
    holdRequest(matches) {
      if (holdingRequest) throw new Error('a request hold is already armed');
      return new Promise((resolve) => {
        holdingRequest = { matches, arrived: resolve };
      });
    },
    disarmRequest() {
      holdingRequest = undefined;
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

// A plain-http proxy in front of another plain-http endpoint (kube-write-proxy's) that can hold back
// the events of chosen watches: what a watch event late on a loaded machine looks like, made at will;
// and hold one chosen request before it reaches the API server, so a test can change the objects in
// the instant between a client's read and its write. Everything else passes as it comes.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface WatchHoldProxy {
  /** A kubeconfig file for a client: plain http to this proxy, no credentials in it. */
  readonly kubeconfig: string;
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
  close(): Promise<void>;
}

interface Stream {
  url: string;
  res: http.ServerResponse;
  held: Buffer[];
  ended: boolean;
}

/** Starts the proxy on 127.0.0.1 in front of the server that `upstreamKubeconfig` (a plain-http one) names. */
export async function startWatchHoldProxy(upstreamKubeconfig: string): Promise<WatchHoldProxy> {
  const server = /server: (http:\/\/[^\s]+)/.exec(await readFile(upstreamKubeconfig, 'utf8'))?.[1];
  if (!server) throw new Error('the upstream kubeconfig names no plain-http server');
  const upstream = new URL(server);
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
    const forwarded = http.request({
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: url,
      headers: { ...req.headers, host: upstream.host },
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
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-hold-proxy-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  const upstreamConfig = await readFile(upstreamKubeconfig, 'utf8');
  await writeFile(kubeconfig, upstreamConfig.replace(server, `http://127.0.0.1:${port}`), { mode: 0o600 });

  return {
    kubeconfig,
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
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

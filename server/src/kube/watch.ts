import http from 'node:http';
import https from 'node:https';
import type * as k8s from '@kubernetes/client-node';

/** One event of a watch, as the API server sends it (a line of JSON). */
type WatchEvent<T> = { type: string; object: T };

/** TCP keep-alive probes on a watch's connection, as client-node's Watch sets them. */
const KEEP_ALIVE_MS = 30_000;

/**
 * A watch of `path` (client-node's `Watch.watch`, same arguments and same contract): `onEvent` hears
 * each event in order; `done` hears once of the end, with the error if there was one (an abort through
 * the controller answered is an AbortError). Answers the controller that ends it, once the request is
 * sent. Over node:https on the KubeConfig's agent: client-node's Watch passes every byte through
 * node-fetch's body stream and readline, which cost the operator and the service more CPU than the
 * parsing of the events. Lines are split on the bytes, and each is decoded once, whole.
 */
export async function watch<T>(
  kc: k8s.KubeConfig,
  path: string,
  query: Record<string, string | boolean | undefined>,
  onEvent: (type: string, object: T) => void,
  done: (error: unknown) => void,
): Promise<AbortController> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('No currently active cluster');
  const url = new URL(cluster.server + path);
  url.searchParams.set('watch', 'true');
  for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
  const options = await kc.applyToFetchOptions({});
  const headers: Record<string, string> = {};
  // A Headers object (client-node's applyToFetchOptions builds one), whatever its type says.
  (options.headers as unknown as Headers).forEach((value, key) => (headers[key] = value));
  const controller = new AbortController();
  let ended = false;
  const end = (error: unknown) => {
    if (ended) return;
    ended = true;
    controller.abort();
    done(error);
  };
  const request = (url.protocol === 'http:' ? http : https).request(
    url,
    { method: 'GET', headers, agent: options.agent as http.Agent | undefined, signal: controller.signal },
    (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        end(
          Object.assign(new Error(http.STATUS_CODES[response.statusCode ?? 500] ?? 'Internal Server Error'), {
            statusCode: response.statusCode,
          }),
        );
        return;
      }
      const lines = new LineSplitter((line) => {
        let event: WatchEvent<T>;
        try {
          event = JSON.parse(line) as WatchEvent<T>;
        } catch {
          return; // As client-node's Watch: a line that is not JSON is skipped.
        }
        // As client-node's Watch: what a listener throws does not end the watch.
        try {
          onEvent(event.type, event.object);
        } catch {
          // The listener's own failure, not the watch's.
        }
      });
      response.on('data', (chunk: Buffer) => lines.push(chunk));
      response.once('error', end);
      response.once('end', () => end(null));
      response.once('close', () => end(null));
    },
  );
  request.once('socket', (socket) => socket.setKeepAlive(true, KEEP_ALIVE_MS));
  request.once('error', end);
  request.end();
  return controller;
}

/** Cuts a byte stream into lines (on \n), each decoded as UTF-8 once it is whole; empty lines skipped. */
export class LineSplitter {
  /** The bytes of the line not yet ended, in the chunks they came in. */
  private pending: Buffer[] = [];

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      const line =
        this.pending.length === 0
          ? chunk.toString('utf8', start, newline)
          : Buffer.concat([...this.pending, chunk.subarray(start, newline)]).toString('utf8');
      this.pending = [];
      start = newline + 1;
      if (line.length > 0) this.onLine(line);
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
  }
}

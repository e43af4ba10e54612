import http from 'node:http';

/** An answer read whole: its status (`ok`: a 2xx) and its body as text. */
export interface TextAnswer {
  status: number;
  ok: boolean;
  text: string;
}

export interface TextRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** The connections it goes on (keep-alive: a call that follows another takes the same one). */
  agent: http.Agent;
  /** An answer longer than this fails with `tooLong`'s error and its connection is dropped. */
  maxBytes?: number;
  tooLong?: (maxBytes: number) => Error;
  /** A connection silent this long fails the request. */
  idleTimeoutMs?: number;
}

/**
 * One HTTP request over node:http, its answer read whole as text. node:http, not fetch: fetch's layers
 * (WHATWG headers, body streams) cost more CPU than the request itself on a launch's path. Fails with
 * the request's error (its `code`: ECONNREFUSED…), the signal's abort, a silent connection's timeout,
 * or `tooLong`'s error.
 */
export function requestText(url: string, init: TextRequest): Promise<TextAnswer> {
  const { body, maxBytes = Infinity, tooLong = (max) => new Error(`answered more than ${max} bytes`) } = init;
  const headers =
    body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: init.method ?? 'GET', headers, agent: init.agent, signal: init.signal },
      (response) => {
        const refuse = () => {
          response.destroy();
          reject(tooLong(maxBytes));
        };
        if (Number(response.headers['content-length'] ?? NaN) > maxBytes) return refuse();
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) refuse();
          else chunks.push(chunk);
        });
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          resolve({ status, ok: status >= 200 && status <= 299, text: Buffer.concat(chunks).toString('utf8') });
        });
        response.on('error', reject);
      },
    );
    const { idleTimeoutMs } = init;
    if (idleTimeoutMs !== undefined) {
      request.setTimeout(idleTimeoutMs, () =>
        request.destroy(new Error(`${url}: no answer in ${idleTimeoutMs / 1000} s`)),
      );
    }
    request.on('error', reject);
    request.end(body);
  });
}

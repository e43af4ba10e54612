/**
 * Whether the ingress serves a route yet: a GET of the path through the ingress itself, with the
 * session host as Host. An ingress takes a changed Ingress up a moment after it was written (Traefik
 * throttles its reloads), and a URL handed out before that meets the ingress's own 404 in the
 * student's browser; the upstream checks the URL through the ingress before it publishes it too.
 * Whatever the session's proxy or IDE answers means served (the workbench, a redirect to the sign-in,
 * 401, 403); the ingress's 404 and its gateway errors (no backend answering yet) do not.
 */
import http from 'node:http';
import https from 'node:https';

const NOT_SERVED = new Set([404, 502, 503, 504]);

export function ingressServes(checkUrl: string, host: string, path: string, timeoutMs: number): Promise<boolean> {
  const url = new URL(path, checkUrl);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.get(
      url,
      // The session host's certificate may not name the address the operator reaches the ingress at.
      { headers: { Host: host }, timeout: timeoutMs, ...(url.protocol === 'https:' ? { servername: host } : {}) },
      (response) => {
        response.resume();
        resolve(!NOT_SERVED.has(response.statusCode ?? 0));
      },
    );
    // Unanswered within the time: not served (destroy without an error emits no 'error' to settle on).
    request.on('timeout', () => {
      resolve(false);
      request.destroy();
    });
    request.on('error', () => resolve(false));
  });
}

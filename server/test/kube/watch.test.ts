// The watch of kube/watch.ts against a local HTTP server that answers as the API server does: one
// JSON event per line, cut anywhere by the network (mid-line, mid-character); its end; a refusal; an
// abort by the controller it answers.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { LineSplitter, watch } from '../../src/kube/watch.js';

function kubeConfig(port: number): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'watch-test-token' }],
    contexts: [{ name: 'c', cluster: 'local', user: 'u' }],
    currentContext: 'c',
  });
  return kc;
}

describe('watch: events one per line, over node:http', () => {
  let server: http.Server;
  let port: number;
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;

  before(async () => {
    server = http.createServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('delivers each event whole however the bytes are cut, then ends without an error', async () => {
    const events = [
      { type: 'ADDED', object: { metadata: { name: 'é-one', resourceVersion: '1' } } },
      { type: 'MODIFIED', object: { metadata: { name: 'two' }, data: 'x'.repeat(70_000) } },
      { type: 'DELETED', object: { metadata: { name: 'three ✓' } } },
    ];
    const bytes = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    let seenUrl: URL | undefined;
    let auth: string | undefined;
    handler = (req, res) => {
      seenUrl = new URL(req.url!, 'http://x');
      auth = req.headers.authorization;
      res.writeHead(200, { 'content-type': 'application/json' });
      // Cuts that fall inside a line and inside the two-byte é.
      const cuts = [0, 25, 26, 27, 500, 40_000, bytes.length];
      const send = (i: number) => {
        if (i + 1 >= cuts.length) return res.end();
        res.write(bytes.subarray(cuts[i], cuts[i + 1]));
        setImmediate(send, i + 1);
      };
      send(0);
    };
    const got: { type: string; object: unknown }[] = [];
    const ended = new Promise<unknown>((resolve) => {
      void watch(
        kubeConfig(port),
        '/api/v1/namespaces/n/configmaps',
        { resourceVersion: '7', allowWatchBookmarks: true, labelSelector: undefined },
        (type, object) => got.push({ type, object }),
        resolve,
      );
    });
    assert.equal(await ended, null);
    assert.deepEqual(got, events);
    assert.equal(seenUrl?.pathname, '/api/v1/namespaces/n/configmaps');
    assert.deepEqual(Object.fromEntries(seenUrl!.searchParams), {
      watch: 'true',
      resourceVersion: '7',
      allowWatchBookmarks: 'true',
    });
    assert.equal(auth, 'Bearer watch-test-token');
  });

  it('ends with the HTTP status when the server refuses the watch', async () => {
    handler = (_req, res) => {
      res.writeHead(403);
      res.end('{"kind":"Status"}');
    };
    const error = await new Promise<unknown>((resolve) => {
      void watch(kubeConfig(port), '/api/v1/pods', {}, () => undefined, resolve);
    });
    assert.equal((error as { statusCode?: number }).statusCode, 403);
  });

  it('ends with an AbortError when its controller aborts, and hears nothing after', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(`${JSON.stringify({ type: 'ADDED', object: { n: 1 } })}\n`);
      // Stays open, as a watch does.
    };
    const got: unknown[] = [];
    let controller: AbortController | undefined;
    const ended = new Promise<unknown>((resolve) => {
      void watch(
        kubeConfig(port),
        '/api/v1/pods',
        {},
        (_type, object) => {
          got.push(object);
          controller?.abort();
        },
        resolve,
      ).then((c) => (controller = c));
    });
    const deadline = setTimeout(() => controller?.abort(), 5000);
    const error = await ended;
    clearTimeout(deadline);
    assert.equal((error as Error).name, 'AbortError');
    assert.deepEqual(got, [{ n: 1 }]);
  });
});

describe('LineSplitter', () => {
  it('cuts on newlines, skips empty lines and keeps a line that spans chunks', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    for (const chunk of ['a', 'b\n\ncd', '\ne', 'f', 'g\n', 'h']) splitter.push(Buffer.from(chunk));
    assert.deepEqual(lines, ['ab', 'cd', 'efg']);
  });
});

// A proxy between one operator process and the real kube-apiserver, for crash tests: it counts the
// operator's writes and, on the one asked for, lets the write reach the API server and kills the
// operator before the answer gets back, so the write took effect and the operator never learnt it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { DEFAULT_LEASE_NAME } from '../../server/src/operator/config.js';
import { LEADER_ELECTION_MANAGER } from '../../server/src/operator/runtime/leader-election.js';

/** One write the operator sent, in the order they arrived. */
export interface WriteRecord {
  /** 1-based, among the counted writes of this proxy. */
  index: number;
  method: string;
  /** The request path without its query (`/apis/apps/v1/namespaces/x/deployments/y`). */
  path: string;
  /** The query without its `?` (a watch's `watch=true&resourceVersion=…`), empty when there is none. */
  query: string;
  /** The API server's answer; undefined while none came (or the operator died first). */
  status?: number;
}

export interface KubeWriteProxy {
  /** A kubeconfig file for the operator: plain http to this proxy, no credentials in it. */
  readonly kubeconfig: string;
  /** The counted writes so far. */
  readonly writes: readonly WriteRecord[];
  /**
   * Kills with `kill` once the first counted write from now that `at` picks (it sees each one, in
   * the order they arrive) has reached the API server and been answered, before the answer is
   * passed on; every later request is held (it dies with the process). Resolves with that write once
   * `kill` has finished.
   */
  killAfterWrite(at: (write: WriteRecord) => boolean, kill: () => Promise<void>): Promise<WriteRecord>;
  /** Takes back an armed kill; false when it is already under way (await its promise then). */
  disarm(): boolean;
  /** Ends every connection, watches included. */
  close(): Promise<void>;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
// Not forwarded either way: they describe one hop only.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host']);

/**
 * Whether a request writes the leader's Lease: its renewals come every renew interval whatever the
 * operator does, so counting them would make a count depend on time. Its writes name their field
 * manager; a warm instance's reservation, a Lease of its own name, is counted.
 */
export function isLeaderLeaseWrite(method: string, requestPath: string, query = ''): boolean {
  return (
    /\/leases(\/|$)/.test(requestPath) &&
    (requestPath.endsWith(`/leases/${DEFAULT_LEASE_NAME}`) ||
      new URLSearchParams(query).get('fieldManager') === LEADER_ELECTION_MANAGER)
  );
}

/**
 * Which requests count as writes: by default every mutating request except the leader's Lease
 * (isLeaderLeaseWrite) and Events (sent in the background, their order among the other writes
 * varies, and nothing reads them back).
 */
export function isCountedWrite(method: string, requestPath: string, query = ''): boolean {
  if (!MUTATING.has(method)) return false;
  return !isLeaderLeaseWrite(method, requestPath, query) && !/\/events(\/|$)/.test(requestPath);
}

/**
 * Starts the proxy on 127.0.0.1 in front of `kc`'s current cluster, with `kc`'s credentials. `counts`
 * picks the requests it records (reads too, if it picks them: a test can count a client's watches).
 */
export async function startKubeWriteProxy(
  kc: k8s.KubeConfig,
  counts: (method: string, requestPath: string, query: string) => boolean = isCountedWrite,
): Promise<KubeWriteProxy> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const upstream = new URL(cluster.server);
  // The kubeconfig's CA, client certificate and Authorization header, on one keep-alive agent.
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const agent = new https.Agent({ keepAlive: true, ca: tls.ca, cert: tls.cert, key: tls.key });
  const credentials = (tls.headers ?? {}) as Record<string, string>;

  const writes: WriteRecord[] = [];
  const upstreamRequests = new Set<http.ClientRequest>();
  let armed:
    { at: (write: WriteRecord) => boolean; kill: () => Promise<void>; done: (w: WriteRecord) => void } | undefined;
  // Once the write to kill at is on its way, nothing else is forwarded: the process is as good as dead.
  let frozen = false;

  const server = http.createServer((req, res) => {
    const [requestPath = '/', query = ''] = (req.url ?? '/').split('?');
    const method = req.method ?? 'GET';
    if (frozen) return void req.socket.destroy();
    let record: WriteRecord | undefined;
    let killHere: typeof armed;
    if (counts(method, requestPath, query)) {
      record = { index: writes.length + 1, method, path: requestPath, query };
      writes.push(record);
      if (armed?.at(record)) {
        killHere = armed;
        armed = undefined;
        frozen = true;
      }
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [key, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(key) && value !== undefined) headers[key] = value;
    }
    const forwarded = https.request({
      protocol: 'https:',
      hostname: upstream.hostname,
      port: upstream.port,
      method,
      path: req.url,
      agent,
      headers: { ...headers, ...credentials, host: upstream.host },
    });
    upstreamRequests.add(forwarded);
    forwarded.once('close', () => upstreamRequests.delete(forwarded));
    forwarded.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) forwarded.destroy();
    });
    forwarded.on('response', (answer) => {
      if (record) record.status = answer.statusCode;
      if (killHere) {
        // The API server answered: the write took effect (or was refused). The operator dies before
        // it reads the answer.
        answer.resume();
        const target = killHere;
        void target.kill().then(() => {
          req.socket.destroy();
          target.done(record!);
        });
        return;
      }
      const answerHeaders: http.OutgoingHttpHeaders = {};
      for (const [key, value] of Object.entries(answer.headers)) {
        if (!HOP_BY_HOP.has(key) && value !== undefined) answerHeaders[key] = value;
      }
      res.writeHead(answer.statusCode ?? 502, answerHeaders);
      // Streams as it comes: a watch's events reach the operator one by one.
      res.flushHeaders();
      answer.pipe(res);
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-write-proxy-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: proxy',
      '  cluster:',
      `    server: http://127.0.0.1:${port}`,
      // Plain http to the proxy on loopback (client-node only allows http with this flag set).
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: proxied',
      '  user: {}',
      'contexts:',
      '- name: proxy',
      '  context: {cluster: proxy, user: proxied}',
      'current-context: proxy',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );

  return {
    kubeconfig,
    writes,
    killAfterWrite(at, kill) {
      if (armed || frozen) throw new Error('a kill is already armed');
      return new Promise((done) => {
        armed = { at, kill, done };
      });
    },
    disarm() {
      if (!armed) return false;
      armed = undefined;
      return true;
    },
    async close() {
      frozen = true;
      for (const request of upstreamRequests) request.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// kube-apiserver's own request counters (apiserver_request_total) and response sizes, read from its
// /metrics endpoint with the admin token of the kubeconfig. They count every client: the operator, the
// service, the controller manager, the scheduler, kwok and this benchmark's own watches.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';

const READS = new Set(['GET', 'LIST', 'WATCH']);
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/** Counter values keyed by `VERB resource[/subresource]`, and LIST/GET response bytes. */
export interface ApiSnapshot {
  at: number;
  requests: Map<string, number>;
  responseBytes: Map<string, number>;
}

export interface ApiDelta {
  reads: number;
  writes: number;
  /** Per `VERB resource`, largest first. */
  byKey: Record<string, number>;
  /** Bytes of GET and LIST answers (apiserver_response_sizes). */
  readBytes: number;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
  return labels;
}

export class ApiMetrics {
  private readonly server: string;
  private readonly token: string;
  private readonly ca?: Buffer;

  constructor(kc: k8s.KubeConfig) {
    const cluster = kc.getCurrentCluster()!;
    this.server = cluster.server;
    this.token = kc.getCurrentUser()?.token ?? '';
    this.ca = cluster.caFile ? readFileSync(cluster.caFile) : undefined;
  }

  private fetchText(): Promise<string> {
    return new Promise((resolve, reject) => {
      const request = https.get(
        `${this.server}/metrics`,
        { headers: { Authorization: `Bearer ${this.token}` }, ca: this.ca },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () =>
            response.statusCode === 200 ? resolve(body) : reject(new Error(`metrics: HTTP ${response.statusCode}`)),
          );
        },
      );
      request.on('error', reject);
    });
  }

  async snapshot(): Promise<ApiSnapshot> {
    const text = await this.fetchText();
    const requests = new Map<string, number>();
    const responseBytes = new Map<string, number>();
    for (const line of text.split('\n')) {
      let target: Map<string, number> | undefined;
      let rest: string | undefined;
      if (line.startsWith('apiserver_request_total{')) {
        target = requests;
        rest = line.slice('apiserver_request_total'.length);
      } else if (line.startsWith('apiserver_response_sizes_sum{')) {
        target = responseBytes;
        rest = line.slice('apiserver_response_sizes_sum'.length);
      }
      if (!target || !rest) continue;
      const close = rest.lastIndexOf('}');
      const labels = parseLabels(rest.slice(1, close));
      const value = Number(rest.slice(close + 1).trim());
      const resource = labels.subresource ? `${labels.resource}/${labels.subresource}` : (labels.resource ?? '');
      const key = `${labels.verb} ${resource}`;
      target.set(key, (target.get(key) ?? 0) + value);
    }
    return { at: Date.now(), requests, responseBytes };
  }
}

export function diff(before: ApiSnapshot, after: ApiSnapshot): ApiDelta {
  let reads = 0;
  let writes = 0;
  const byKey: Record<string, number> = {};
  for (const [key, value] of after.requests) {
    const d = value - (before.requests.get(key) ?? 0);
    if (d <= 0) continue;
    const verb = key.split(' ')[0]!;
    if (READS.has(verb)) reads += d;
    else if (WRITES.has(verb)) writes += d;
    byKey[key] = d;
  }
  let readBytes = 0;
  for (const [key, value] of after.responseBytes) {
    const verb = key.split(' ')[0]!;
    if (verb === 'GET' || verb === 'LIST') readBytes += value - (before.responseBytes.get(key) ?? 0);
  }
  const sorted = Object.fromEntries(Object.entries(byKey).sort((a, b) => b[1] - a[1]));
  return { reads, writes, byKey: sorted, readBytes };
}

/** `delta` per launch, minus what the idle background would have done in the same time. */
export function perLaunch(
  delta: ApiDelta,
  launches: number,
  background: { delta: ApiDelta; seconds: number } | undefined,
  seconds: number,
): { reads: number; writes: number; ownWrites: number; readKiB: number; byKey: Record<string, number> } {
  const scale = background ? seconds / background.seconds : 0;
  const net = (value: number, bg: number) => Math.max(0, (value - bg * scale) / launches);
  const round = (x: number) => Math.round(x * 10) / 10;
  const byKey: Record<string, number> = {};
  for (const [key, value] of Object.entries(delta.byKey)) {
    const v = round(net(value, background?.delta.byKey[key] ?? 0));
    if (v >= 0.1) byKey[key] = v;
  }
  const ownWrites = Object.entries(byKey)
    .filter(([key]) => isOwnWrite(key))
    .reduce((sum, [, v]) => sum + v, 0);
  return {
    ownWrites: round(ownWrites),
    reads: round(net(delta.reads, background?.delta.reads ?? 0)),
    writes: round(net(delta.writes, background?.delta.writes ?? 0)),
    readKiB: round(net(delta.readBytes, background?.delta.readBytes ?? 0) / 1024),
    byKey,
  };
}

/**
 * Writes IDE Cloud's operator and service make themselves: its custom resources, the shared Ingress,
 * the objects it creates (Deployments, Services, ConfigMaps, claims, but not their status, which the
 * controllers write) and Events (on a lazy launch the controllers record a few Events too).
 */
export function isOwnWrite(key: string): boolean {
  const [verb, resource = ''] = key.split(' ');
  if (!WRITES.has(verb!)) return false;
  const [kind, sub] = resource.split('/');
  if (['sessions', 'appdefinitions', 'workspaces'].includes(kind!)) return true;
  if (sub) return false;
  return (
    ['ingresses', 'deployments', 'services', 'configmaps', 'persistentvolumeclaims', 'events'].includes(kind!) &&
    verb !== 'DELETE'
  );
}

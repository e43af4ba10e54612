// kube-apiserver's own request counters (apiserver_request_total) and response sizes, read from its
// /metrics endpoint with the admin token of the kubeconfig. They count every client: the operator, the
// service, the controller manager, the scheduler, kwok and this benchmark's own watches. With an
// audit log, each snapshot also holds IDE Cloud's own requests up to the same point (auditlog.ts):
// the GET /metrics of the snapshot is the marker that cuts the log.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import {
  LEADER_LEASE,
  MARKER_AGENT,
  OWN_CLIENTS,
  diffOwn,
  type AuditCounts,
  type AuditLog,
  type OwnDelta,
} from './auditlog.js';

const READS = new Set(['GET', 'LIST', 'WATCH']);
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/** Counter values keyed by `VERB resource[/subresource]`, and LIST/GET response bytes. */
export interface ApiSnapshot {
  at: number;
  requests: Map<string, number>;
  responseBytes: Map<string, number>;
  /** apiserver_audit_error_total, all plugins: audit events lost (e.g. a full buffer). */
  auditErrors: number;
  /** IDE Cloud's requests in the audit log up to this snapshot's GET /metrics. */
  own?: AuditCounts;
}

export interface ApiDelta {
  reads: number;
  writes: number;
  /** Per `VERB resource`, largest first. */
  byKey: Record<string, number>;
  /** Bytes of GET and LIST answers (apiserver_response_sizes). */
  readBytes: number;
  auditErrors: number;
  /** IDE Cloud's own requests (operator and service), from the audit log. */
  own?: OwnDelta;
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
  private marker = 0;

  constructor(
    kc: k8s.KubeConfig,
    private readonly audit?: AuditLog,
  ) {
    const cluster = kc.getCurrentCluster()!;
    this.server = cluster.server;
    this.token = kc.getCurrentUser()?.token ?? '';
    this.ca = cluster.caFile ? readFileSync(cluster.caFile) : undefined;
  }

  private fetchText(userAgent: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const request = https.get(
        `${this.server}/metrics`,
        { headers: { Authorization: `Bearer ${this.token}`, 'User-Agent': userAgent }, ca: this.ca },
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
    const agent = `${MARKER_AGENT}${++this.marker}`;
    const text = await this.fetchText(agent);
    const at = Date.now();
    const requests = new Map<string, number>();
    const responseBytes = new Map<string, number>();
    let auditErrors = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('apiserver_audit_error_total')) auditErrors += Number(line.slice(line.lastIndexOf(' ') + 1));
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
    const own = this.audit ? await this.audit.at(agent) : undefined;
    return { at, requests, responseBytes, auditErrors, own };
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
  const own = before.own && after.own ? diffOwn(before.own, after.own) : undefined;
  return { reads, writes, byKey: sorted, readBytes, auditErrors: after.auditErrors - before.auditErrors, own };
}

export interface PerLaunch {
  /** All clients (apiserver_request_total), net of the background. */
  reads: number;
  writes: number;
  readKiB: number;
  byKey: Record<string, number>;
  /** IDE Cloud's own requests (audit log), net of IDE Cloud's own background; absent without the log. */
  own?: Pick<OwnDelta, 'reads' | 'writes' | 'byClient' | 'writesByKey' | 'readsByKey' | 'failedWritesByKey'> & {
    /** Writes of Events (create and patch), counted apart: the operator sends them after the URL. */
    eventWrites: number;
    /** `writes` without the Events: the launch's own writes. */
    writesWithoutEvents: number;
    /** The operator's and service's own requests per second in the idle window (subtracted). */
    backgroundReadsPerSec: number;
    backgroundWritesPerSec: number;
    backgroundWritesPerSecByVerbAndResource: Record<string, number>;
    backgroundReadsPerSecByVerbAndResource: Record<string, number>;
    /** Audit events lost in the window (apiserver_audit_error_total): the figures are then lower bounds. */
    auditEventsLost: number;
  };
}

/** `delta` per launch, minus what the idle background would have done in the same time. */
export function perLaunch(
  delta: ApiDelta,
  launches: number,
  background: { delta: ApiDelta; seconds: number } | undefined,
  seconds: number,
): PerLaunch {
  const scale = background ? seconds / background.seconds : 0;
  const net = (value: number, bg: number) => Math.max(0, (value - bg * scale) / launches);
  const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
  const byKey: Record<string, number> = {};
  for (const [key, value] of Object.entries(delta.byKey)) {
    const v = round(net(value, background?.delta.byKey[key] ?? 0));
    if (v >= 0.1) byKey[key] = v;
  }
  const result: PerLaunch = {
    reads: round(net(delta.reads, background?.delta.reads ?? 0)),
    writes: round(net(delta.writes, background?.delta.writes ?? 0)),
    readKiB: round(net(delta.readBytes, background?.delta.readBytes ?? 0) / 1024),
    byKey,
  };
  const own = delta.own;
  if (own) {
    const bg = background?.delta.own;
    // Net per client, verb and resource (clamped at 0); the totals are the sums of these, so they
    // match the breakdowns. Two decimals: with no background, n launches give multiples of 1/n.
    const netKeys = (map: Record<string, number>, bgMap: Record<string, number> | undefined) =>
      Object.entries(map).map(([key, value]) => [key, net(value, bgMap?.[key] ?? 0)] as const);
    const reads = netKeys(own.readsByClientKey, bg?.readsByClientKey);
    // The leader's Lease renewals come every few seconds whatever launches do: background, not a
    // launch's writes (launch-writes.test.ts counts the same way). Net of the idle window they are
    // only noise (a renewal more or less in the window); backgroundWritesPerSec keeps their rate.
    const writes = netKeys(own.writesByClientKey, bg?.writesByClientKey).filter(
      ([key]) => !key.endsWith(` ${LEADER_LEASE}`),
    );
    const sum = (entries: (readonly [string, number])[]) =>
      round(
        entries.reduce((a, [, x]) => a + x, 0),
        2,
      );
    const rounded = (map: Record<string, number>) =>
      Object.fromEntries(
        Object.entries(map)
          .map(([k, x]) => [k, round(x, 2)] as const)
          .filter(([, x]) => x > 0)
          .sort((a, b) => b[1] - a[1]),
      );
    const byVerbAndResource = (entries: (readonly [string, number])[]) => {
      const out: Record<string, number> = {};
      for (const [key, x] of entries) {
        const name = key.slice(key.indexOf(' ') + 1);
        out[name] = (out[name] ?? 0) + x;
      }
      return rounded(out);
    };
    const byClient = {} as OwnDelta['byClient'];
    for (const client of OWN_CLIENTS) {
      const mine = (entries: (readonly [string, number])[]) => entries.filter(([k]) => k.startsWith(`${client} `));
      byClient[client] = { reads: sum(mine(reads)), writes: sum(mine(writes)) };
    }
    const perSecond = (map: Record<string, number> | undefined) =>
      Object.fromEntries(
        Object.entries(map ?? {}).map(([k, x]) => [k, round(x / (background?.seconds ?? 1), 2)] as const),
      );
    const isEvent = ([key]: readonly [string, number]) => key.endsWith(' events');
    result.own = {
      reads: sum(reads),
      writes: sum(writes),
      eventWrites: sum(writes.filter(isEvent)),
      writesWithoutEvents: sum(writes.filter((entry) => !isEvent(entry))),
      byClient,
      writesByKey: byVerbAndResource(writes),
      readsByKey: byVerbAndResource(reads),
      failedWritesByKey: rounded(Object.fromEntries(netKeys(own.failedWritesByKey, bg?.failedWritesByKey))),
      backgroundReadsPerSec: background && bg ? round(bg.reads / background.seconds, 2) : 0,
      backgroundWritesPerSec: background && bg ? round(bg.writes / background.seconds, 2) : 0,
      backgroundWritesPerSecByVerbAndResource: background && bg ? perSecond(bg.writesByKey) : {},
      backgroundReadsPerSecByVerbAndResource: background && bg ? perSecond(bg.readsByKey) : {},
      auditEventsLost: delta.auditErrors + (background?.delta.auditErrors ?? 0),
    };
  }
  return result;
}

// IDE Cloud's own API requests, from kube-apiserver's audit log (startControlPlane with `auditLog`:
// JSON lines, level Metadata, no RequestReceived stage). The operator and the service send a
// User-Agent naming themselves (configureClient in server/src/kube/client.ts), so their requests can
// be told from the controller manager's, the scheduler's, kwok's and this benchmark's, which
// apiserver_request_total cannot.
//
// Windows are cut by markers, not clocks: every snapshot of ApiMetrics is a GET /metrics with a
// User-Agent of its own (`ide-cloud-bench-mark/<n>`), and the log is read in order up to that
// request's event. A request belongs to the window in whose stretch of the log its first event lies
// (the event of its response, or of a watch's start), so consecutive windows never count a request
// twice or miss one.
import { open, type FileHandle } from 'node:fs/promises';
import { sleep } from './util.js';
import { DEFAULT_LEASE_NAME } from '../../server/src/operator/config.js';
import { LEADER_ELECTION_MANAGER } from '../../server/src/operator/runtime/leader-election.js';

/** The resource name under which the leader's Lease writes are counted: background, no launch's. */
export const LEADER_LEASE = 'leases (leader election)';

/** User-Agent prefixes of IDE Cloud's own components. */
export const OWN_CLIENTS = ['ide-cloud-operator', 'ide-cloud-service'] as const;
export type OwnClient = (typeof OWN_CLIENTS)[number];
/** User-Agent prefix of the benchmark's marker requests (its GET /metrics snapshots). */
export const MARKER_AGENT = 'ide-cloud-bench-mark/';

// A watch is not a launch's read: launches wait on cache events, and the informers' watches are
// renewed every few minutes whatever happens; they are counted apart, as `watches`.
const READ_VERBS = new Set(['get', 'list']);
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const SEP = '\t';

interface AuditEvent {
  auditID?: string;
  stage?: string;
  verb?: string;
  userAgent?: string;
  requestURI?: string;
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  objectRef?: { resource?: string; subresource?: string; name?: string };
  responseStatus?: { code?: number };
}

/** One write of IDE Cloud's own (Events left out), as the audit log has it: what launches.ts attributes. */
export interface AuditWrite {
  client: OwnClient;
  verb: string;
  /** `resource[/subresource]`, e.g. `sessions/status`. */
  resource: string;
  /** The object's name (none for a create without a name in the path, or a deletecollection). */
  name: string;
  code: number;
  /** requestReceivedTimestamp and stageTimestamp (its answer), in ms since the epoch with µs. */
  receivedMs: number;
  answeredMs: number;
}

/** An audit timestamp (RFC 3339 with microseconds) in ms since the epoch, keeping the microseconds. */
export function auditTime(text: string | undefined): number {
  if (!text) return NaN;
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!m) return Date.parse(text);
  return Date.parse(`${m[1]}${m[3]}`) + Number(m[2] ?? 0) * 1000;
}

/**
 * Cumulative counts of IDE Cloud's requests from the start of the log up to one point, keyed
 * `client \t verb \t resource[/subresource] \t response code`.
 */
export type AuditCounts = ReadonlyMap<string, number>;

export interface OwnDelta {
  reads: number;
  writes: number;
  /** Watches started or renewed (not in `reads`). */
  watches: number;
  byClient: Record<OwnClient, { reads: number; writes: number }>;
  /** Per `verb resource[/subresource]`, largest first. */
  writesByKey: Record<string, number>;
  readsByKey: Record<string, number>;
  /** Writes answered with a status other than 2xx, per `verb resource[/subresource] code`. */
  failedWritesByKey: Record<string, number>;
  /** Per `client verb resource[/subresource]`. */
  readsByClientKey: Record<string, number>;
  writesByClientKey: Record<string, number>;
}

export class AuditLog {
  private handle?: FileHandle;
  private offset = 0;
  private rest = Buffer.alloc(0);
  private readonly counts = new Map<string, number>();
  /** auditIDs of IDE Cloud's long-running requests already counted at ResponseStarted. */
  private readonly started = new Set<string>();
  private readonly marks = new Map<string, AuditCounts>();
  /** Events read (every client). */
  events = 0;
  /** IDE Cloud's writes read so far (Events left out), in the order of the log. */
  readonly writes: AuditWrite[] = [];
  /** When each component's latest request read so far was received (ms since the epoch), lease renewals apart. */
  readonly lastRequestAt: Record<OwnClient, number> = { 'ide-cloud-operator': 0, 'ide-cloud-service': 0 };

  constructor(readonly file: string) {}

  /** Reads what was appended since the last call and counts it (whole lines only). */
  async poll(): Promise<void> {
    this.handle ??= await open(this.file, 'r');
    const chunk = Buffer.alloc(4 << 20);
    for (;;) {
      const { bytesRead } = await this.handle.read(chunk, 0, chunk.length, this.offset);
      if (bytesRead === 0) return;
      this.offset += bytesRead;
      // Split on the last newline in bytes, so neither a line nor a multi-byte character is cut.
      const data = this.rest.length
        ? Buffer.concat([this.rest, chunk.subarray(0, bytesRead)])
        : chunk.subarray(0, bytesRead);
      const end = data.lastIndexOf(0x0a);
      this.rest = Buffer.from(data.subarray(end + 1));
      if (end >= 0) for (const line of data.toString('utf8', 0, end).split('\n')) this.line(line);
      if (bytesRead < chunk.length) return;
    }
  }

  private line(line: string): void {
    if (!line) return;
    this.events++;
    // Cheap pre-filter: only IDE Cloud's components and the markers have agents starting like this.
    if (!line.includes('"userAgent":"ide-cloud-')) return;
    const event = JSON.parse(line) as AuditEvent;
    const agent = event.userAgent ?? '';
    if (agent.startsWith(MARKER_AGENT)) {
      if (event.stage !== 'ResponseStarted') this.marks.set(agent, new Map(this.counts));
      return;
    }
    const client = OWN_CLIENTS.find((c) => agent.startsWith(c));
    if (!client) return;
    const id = event.auditID ?? '';
    // One count per request: a long-running request (watch) at its ResponseStarted, any other at
    // its ResponseComplete (or Panic).
    if (event.stage === 'ResponseStarted') this.started.add(id);
    else if (this.started.delete(id)) return;
    const ref = event.objectRef;
    // The leader's Lease renewals (every few seconds, whatever happens) are not work a launch left
    // behind; a warm instance's reservation, a Lease too, is.
    const leader =
      ref?.resource === 'leases' &&
      (ref.name === DEFAULT_LEASE_NAME || (event.requestURI ?? '').includes(`fieldManager=${LEADER_ELECTION_MANAGER}`));
    if (event.requestReceivedTimestamp && !leader) {
      this.lastRequestAt[client] = Math.max(this.lastRequestAt[client], Date.parse(event.requestReceivedTimestamp));
    }
    const resource = leader
      ? LEADER_LEASE
      : ref
        ? `${ref.resource ?? ''}${ref.subresource ? `/${ref.subresource}` : ''}`
        : (event.requestURI ?? '').split('?')[0]!;
    const key = [client, event.verb ?? '', resource, String(event.responseStatus?.code ?? 0)].join(SEP);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (WRITE_VERBS.has(event.verb ?? '') && ref?.resource !== 'events') {
      this.writes.push({
        client,
        verb: event.verb!,
        resource,
        name: ref?.name ?? '',
        code: event.responseStatus?.code ?? 0,
        receivedMs: auditTime(event.requestReceivedTimestamp),
        answeredMs: auditTime(event.stageTimestamp),
      });
    }
  }

  /**
   * The cumulative counts at the marker request whose User-Agent was `agent`, once its event is in
   * the file (the log backend writes asynchronously, within milliseconds).
   */
  async at(agent: string, timeoutMs = 60_000): Promise<AuditCounts> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.poll();
      const counts = this.marks.get(agent);
      if (counts) {
        this.marks.delete(agent);
        return counts;
      }
      if (Date.now() > deadline) throw new Error(`audit log: no event of the marker ${agent} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  async close(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }
}

const sortDesc = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).sort((a, b) => b[1] - a[1]));

/** IDE Cloud's requests between two points of the log. */
export function diffOwn(before: AuditCounts, after: AuditCounts): OwnDelta {
  const delta: OwnDelta = {
    reads: 0,
    writes: 0,
    watches: 0,
    byClient: {
      'ide-cloud-operator': { reads: 0, writes: 0 },
      'ide-cloud-service': { reads: 0, writes: 0 },
    },
    writesByKey: {},
    readsByKey: {},
    failedWritesByKey: {},
    readsByClientKey: {},
    writesByClientKey: {},
  };
  const add = (map: Record<string, number>, key: string, d: number) => (map[key] = (map[key] ?? 0) + d);
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d <= 0) continue;
    const [client, verb, resource, code] = key.split(SEP) as [OwnClient, string, string, string];
    const name = `${verb} ${resource}`;
    if (verb === 'watch') {
      delta.watches += d;
    } else if (READ_VERBS.has(verb)) {
      delta.reads += d;
      delta.byClient[client].reads += d;
      add(delta.readsByKey, name, d);
      add(delta.readsByClientKey, `${client} ${name}`, d);
    } else if (WRITE_VERBS.has(verb)) {
      delta.writes += d;
      delta.byClient[client].writes += d;
      add(delta.writesByKey, name, d);
      add(delta.writesByClientKey, `${client} ${name}`, d);
      if (!code.startsWith('2')) add(delta.failedWritesByKey, `${name} ${code}`, d);
    }
  }
  delta.writesByKey = sortDesc(delta.writesByKey);
  delta.readsByKey = sortDesc(delta.readsByKey);
  delta.failedWritesByKey = sortDesc(delta.failedWritesByKey);
  return delta;
}

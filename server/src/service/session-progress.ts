import type * as k8s from '@kubernetes/client-node';
import { capRefusal, OpenCounts } from '../http/open-counts.js';
import type { WatchEventType } from '../kube/informer.js';
import { isQueued, mayWaitAtGate, mayWaitAtGateIn, placeAt, queueOf, type QueuePlace } from '../model/admission.js';
import type { Session } from '../model/session.js';
import type { CachedResource, SessionEventCache } from './cache.js';
import { ApiError } from './errors.js';

/** What the progress stream says about the session: status only; never env values or the session secret. */
export interface SessionProgressView {
  name: string;
  phase?: string;
  url?: string;
  startStrategy?: string;
  error?: { code: number; reason: string };
  conditions: { type: string; status: string; reason?: string; message?: string }[];
  /** While the session waits at the operator's lazy-start gate: its place in the queue (1 is next). */
  queue?: QueuePlace;
}

/** One Kubernetes Event about the session (DESIGN.md: events never carry secrets). */
export interface SessionEventView {
  type: string;
  reason: string;
  message: string;
  time?: string;
  count?: number;
}

export type ProgressMessage =
  | { event: 'session'; data: SessionProgressView }
  | { event: 'deleted'; data: { name: string } }
  | { event: 'event'; data: SessionEventView };

export function toProgressView(session: Session, place?: QueuePlace): SessionProgressView {
  const status = session.status;
  return {
    name: session.metadata.name,
    ...(status?.phase ? { phase: status.phase } : {}),
    ...(status?.url ? { url: status.url } : {}),
    ...(status?.startStrategy ? { startStrategy: status.startStrategy } : {}),
    ...(status?.error ? { error: { code: status.error.code, reason: status.error.reason } } : {}),
    conditions: (status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
    })),
    ...(place ? { queue: place } : {}),
  };
}

/**
 * The lazy-start queue as the session cache shows it (model/admission.ts: the sessions that may hold
 * a place, in creation order; a Queued one's place is its position among them). The places are
 * computed again only when a session joins or leaves that line, once for every stream; then each
 * stream whose place changed sends it. Nothing is written or polled for it: the operator writes a
 * queued session's condition once, and each session that leaves the line (admitted, deleted,
 * failed) is one cache event.
 */
export class LazyStartQueue {
  private readonly members = new Set<string>();
  private positions: Map<string, number> | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly sessions: CachedResource<Session>) {
    for (const session of sessions.list()) if (mayWaitAtGate(session)) this.members.add(session.metadata.name);
    sessions.informer.on((type, session) => {
      const name = session.metadata.name;
      const member = type !== 'DELETED' && mayWaitAtGate(session);
      // Only a session that joins or leaves the line, or a queued one (its rate), moves places.
      if (member === this.members.has(name) && !isQueued(session)) return;
      if (member) this.members.add(name);
      else this.members.delete(name);
      this.positions = undefined;
      for (const listener of [...this.listeners]) listener();
    });
  }

  /** The session's place; undefined when it is not queued. */
  placeOf(session: Session): QueuePlace | undefined {
    if (!isQueued(session)) return undefined;
    const name = session.metadata.name;
    // A stream can ask before this listener has seen the event that put the session in the line.
    if (!this.positions?.has(name)) {
      this.positions = new Map(queueOf(mayWaitAtGateIn(this.sessions)).map((s, i) => [s.metadata.name, i + 1]));
    }
    const position = this.positions.get(name);
    return position === undefined ? undefined : placeAt(position, session);
  }

  /** Calls `listener` whenever places may have moved. Answers the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function toEventView(event: k8s.CoreV1Event): SessionEventView {
  const time = event.lastTimestamp ?? event.eventTime ?? event.firstTimestamp ?? event.metadata?.creationTimestamp;
  return {
    type: event.type ?? 'Normal',
    reason: event.reason ?? '',
    message: event.message ?? '',
    ...(time ? { time: new Date(time as unknown as string).toISOString() } : {}),
    ...(event.count ? { count: event.count } : {}),
  };
}

/** The caps on progress streams (configuration; DESIGN.md: 429 with Retry-After when over). */
export interface ProgressStreamLimits {
  perUser: number;
  /** Per client address (`http/client-address.ts`): in anonymous mode the caller chooses the user. */
  perClient: number;
  total: number;
}

/**
 * The live progress of one workspace's session, from the service's caches (never a watch of its
 * own, never polling): the Session from the session cache (phase, conditions, URL, error) and the
 * Kubernetes Events whose involved object is that Session from the one shared Event cache; while the
 * session waits at the operator's lazy-start gate, its place in the queue (`queue`), sent again
 * whenever it moves. Only a
 * session of `user` is reported; events are matched to the session by its uid, so the events of an
 * earlier session with the same name are not replayed as the new one's. Streams are capped per user,
 * per client and in total (`admit`).
 */
export class SessionProgress {
  private readonly open = new OpenCounts();
  private readonly queue: LazyStartQueue;

  constructor(
    private readonly caches: { sessions: CachedResource<Session>; sessionEvents: SessionEventCache },
    private readonly limits: ProgressStreamLimits,
  ) {
    this.queue = new LazyStartQueue(caches.sessions);
  }

  /**
   * Admits one more stream of `user` from `client`: 429 (with Retry-After) when the user already has
   * `limits.perUser` open, the client `limits.perClient`, or the service `limits.total`. Answers the
   * release, which may be called more than once.
   */
  admit(user: string, client: string): () => void {
    const admitted = this.open.admit([
      { key: `user:${user}`, max: this.limits.perUser, refusal: capRefusal.perUser(this.limits.perUser) },
      { key: `client:${client}`, max: this.limits.perClient, refusal: capRefusal.perClient(this.limits.perClient) },
      { key: 'total', max: this.limits.total, refusal: 'too many progress streams on this service; retry later' },
    ]);
    if ('refused' in admitted) throw new ApiError(429, admitted.refused, undefined, { 'Retry-After': '10' });
    return admitted.release;
  }

  /** Streams until `signal` aborts. */
  stream(input: {
    sessionName: string;
    user: string;
    signal: AbortSignal;
    send: (message: ProgressMessage) => void;
  }): void {
    const { sessionName, user, signal, send } = input;
    const { sessions, sessionEvents } = this.caches;
    if (signal.aborted) return;
    let uid: string | undefined;
    // The place last sent: a change of the queue sends the session again only when its place moved.
    let sentPlace: string | undefined;
    const sendSession = (session: Session) => {
      const place = this.queue.placeOf(session);
      sentPlace = JSON.stringify(place);
      send({ event: 'session', data: toProgressView(session, place) });
    };

    const sendEvent = (event: k8s.CoreV1Event) => send({ event: 'event', data: toEventView(event) });

    const onSession = (type: WatchEventType, session: Session) => {
      if (session.spec?.user !== user) return;
      if (type === 'DELETED') {
        send({ event: 'deleted', data: { name: sessionName } });
        return;
      }
      sendSession(session);
      if (session.metadata.uid && session.metadata.uid !== uid) {
        // A session (new to this stream): the events about it that came before it.
        uid = session.metadata.uid;
        for (const event of sessionEvents.of(sessionName)) if (event.involvedObject?.uid === uid) sendEvent(event);
      }
    };
    const onEvent = (event: k8s.CoreV1Event) => {
      // Events about a session not known yet stay in the cache until it is (above).
      if (uid !== undefined && event.involvedObject?.uid === uid) sendEvent(event);
    };

    const onQueue = () => {
      const session = sessions.get(sessionName);
      if (!session || session.spec?.user !== user || session.metadata.uid !== uid) return;
      if (JSON.stringify(this.queue.placeOf(session)) !== sentPlace) sendSession(session);
    };

    const unsubscribeEvents = sessionEvents.subscribe(sessionName, onEvent);
    const unsubscribeSession = sessions.subscribe(sessionName, onSession);
    const unsubscribeQueue = this.queue.onChange(onQueue);
    signal.addEventListener(
      'abort',
      () => {
        unsubscribeEvents();
        unsubscribeSession();
        unsubscribeQueue();
      },
      { once: true },
    );
    const current = sessions.get(sessionName);
    if (current) onSession('ADDED', current);
  }
}

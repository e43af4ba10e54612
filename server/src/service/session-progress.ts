import type * as k8s from '@kubernetes/client-node';
import type { WatchEventType } from '../kube/informer.js';
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

export function toProgressView(session: Session): SessionProgressView {
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
  };
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
  total: number;
}

/**
 * The live progress of one workspace's session, from the service's caches (never a watch of its
 * own, never polling): the Session from the session cache (phase, conditions, URL, error) and the
 * Kubernetes Events whose involved object is that Session from the one shared Event cache. Only a
 * session of `user` is reported; events are matched to the session by its uid, so the events of an
 * earlier session with the same name are not replayed as the new one's. Streams are capped per user
 * and in total (`admit`).
 */
export class SessionProgress {
  private readonly openByUser = new Map<string, number>();
  private open = 0;

  constructor(
    private readonly caches: { sessions: CachedResource<Session>; sessionEvents: SessionEventCache },
    private readonly limits: ProgressStreamLimits,
  ) {}

  /**
   * Admits one more stream of `user`: 429 (with Retry-After) when the user already has
   * `limits.perUser` open or the service `limits.total`. Answers the release, which may be called
   * more than once.
   */
  admit(user: string): () => void {
    const ofUser = this.openByUser.get(user) ?? 0;
    if (ofUser >= this.limits.perUser) {
      throw new ApiError(
        429,
        `too many progress streams of this user (at most ${this.limits.perUser}); close one first`,
        undefined,
        { 'Retry-After': '10' },
      );
    }
    if (this.open >= this.limits.total) {
      throw new ApiError(429, 'too many progress streams on this service; retry later', undefined, {
        'Retry-After': '10',
      });
    }
    this.openByUser.set(user, ofUser + 1);
    this.open += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open -= 1;
      const left = (this.openByUser.get(user) ?? 1) - 1;
      if (left > 0) this.openByUser.set(user, left);
      else this.openByUser.delete(user);
    };
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

    const sendEvent = (event: k8s.CoreV1Event) => send({ event: 'event', data: toEventView(event) });

    const onSession = (type: WatchEventType, session: Session) => {
      if (session.spec?.user !== user) return;
      if (type === 'DELETED') {
        send({ event: 'deleted', data: { name: sessionName } });
        return;
      }
      send({ event: 'session', data: toProgressView(session) });
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

    const unsubscribeEvents = sessionEvents.subscribe(sessionName, onEvent);
    const unsubscribeSession = sessions.subscribe(sessionName, onSession);
    signal.addEventListener(
      'abort',
      () => {
        unsubscribeEvents();
        unsubscribeSession();
      },
      { once: true },
    );
    const current = sessions.get(sessionName);
    if (current) onSession('ADDED', current);
  }
}

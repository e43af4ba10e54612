import * as k8s from '@kubernetes/client-node';
import type { Session } from '../model/session.js';
import type { ServiceResources } from './resources.js';
import { describeError } from './errors.js';
import type { Logger } from './logger.js';

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

type WatchHandler = (type: string, object: { metadata?: { resourceVersion?: string } }) => void;

/**
 * Keeps one field-selected watch open until `signal` aborts: a watch that ends is resumed from the
 * last resourceVersion seen; after a 410 Gone it starts afresh (the server then sends the current
 * objects as ADDED again, which the consumers treat idempotently).
 */
function keepWatching(
  kc: k8s.KubeConfig,
  path: string,
  fieldSelector: string,
  signal: AbortSignal,
  handler: WatchHandler,
  logger: Logger,
): void {
  const watch = new k8s.Watch(kc);
  let resourceVersion: string | undefined;
  let restarts = 0;
  let controller: AbortController | undefined;
  signal.addEventListener('abort', () => controller?.abort(), { once: true });

  const start = async (): Promise<void> => {
    if (signal.aborted) return;
    let gone = false;
    try {
      controller = await watch.watch(
        path,
        { fieldSelector, allowWatchBookmarks: true, ...(resourceVersion ? { resourceVersion } : {}) },
        (type: string, object: { metadata?: { resourceVersion?: string } }) => {
          if (type === 'ERROR') {
            gone = true;
            return;
          }
          restarts = 0;
          if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
          if (type !== 'BOOKMARK') handler(type, object);
        },
        () => restart(gone),
      );
      if (signal.aborted) controller.abort();
    } catch (error) {
      logger.debug({ err: describeError(error) }, 'progress watch failed to start');
      restart(false);
    }
  };
  const restart = (gone: boolean) => {
    if (signal.aborted) return;
    if (gone) resourceVersion = undefined;
    restarts += 1;
    setTimeout(() => void start(), Math.min(2000, 100 * restarts));
  };
  void start();
}

/**
 * The live progress of one workspace's session, by watching (never polling): the Session itself
 * (phase, conditions, URL, error) and the Kubernetes Events whose involved object is that Session.
 * Only a session of `user` is reported; events are matched to the session by its uid, so the events
 * of an earlier session with the same name are not replayed as the new one's.
 */
export class SessionProgress {
  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly resources: Pick<ServiceResources, 'sessions'>,
    private readonly logger: Logger,
  ) {}

  stream(input: {
    sessionName: string;
    user: string;
    signal: AbortSignal;
    send: (message: ProgressMessage) => void;
  }): void {
    const { sessionName, user, signal, send } = input;
    let uid: string | undefined;
    let pending: k8s.CoreV1Event[] = [];

    const sendEvent = (event: k8s.CoreV1Event) => send({ event: 'event', data: toEventView(event) });

    keepWatching(
      this.kc,
      this.resources.sessions.path,
      `metadata.name=${sessionName}`,
      signal,
      (type, object) => {
        const session = object as Session;
        if (session.spec?.user !== user) return;
        if (type === 'DELETED') {
          send({ event: 'deleted', data: { name: sessionName } });
          return;
        }
        if (session.metadata.uid && session.metadata.uid !== uid) {
          uid = session.metadata.uid;
          const matching = pending.filter((e) => e.involvedObject?.uid === uid);
          pending = [];
          send({ event: 'session', data: toProgressView(session) });
          for (const event of matching) sendEvent(event);
          return;
        }
        send({ event: 'session', data: toProgressView(session) });
      },
      this.logger,
    );

    keepWatching(
      this.kc,
      `/api/v1/namespaces/${this.resources.sessions.namespace}/events`,
      `involvedObject.name=${sessionName}`,
      signal,
      (type, object) => {
        if (type === 'DELETED') return;
        const event = object as k8s.CoreV1Event;
        const eventUid = event.involvedObject?.uid;
        if (uid !== undefined) {
          if (eventUid === uid) sendEvent(event);
          return;
        }
        // The session is not known yet: keep a few events until it is, then send the matching ones.
        pending.push(event);
        if (pending.length > 100) pending.shift();
      },
      this.logger,
    );
  }
}

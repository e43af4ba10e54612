import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { describeFailure, isConflict, isNotFound } from '../../kube/client.js';
import type { SessionFailureReasonValue } from '../../model/session.js';
import {
  EventCorrelator,
  type CorrelatedEvent,
  type EventCorrelatorOptions,
  type EventType,
} from './event-correlator.js';
import type { Logger } from './logger.js';

/**
 * Why an Event was recorded. A launch that goes well records none (its conditions tell its story, in
 * the status write it makes anyway); what went wrong (Warning): NotReady, InjectionFailed, Failed, or
 * a start that failed under its machine reason (ImagePullFailed, CrashLooping, …); a lost pod back
 * (Ready); the end: StopWarning, WorkSaved, WorkNotSaved, Stopped.
 */
export type EventReason =
  | 'Ready'
  | 'NotReady'
  | 'InjectionFailed'
  | 'Failed'
  | 'Stopped'
  | 'StopWarning'
  | 'WorkSaved'
  | 'WorkNotSaved'
  | SessionFailureReasonValue;

/** The object an Event is about. */
export type EventSubject = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string };
};

/** What a reconciler needs of the recorder: record, in the background. */
export interface EventSink {
  record(object: EventSubject, type: EventType, reason: EventReason, message: string): void;
}

/** The calls Events are written with. */
export type EventsApi = Pick<k8s.CoreV1Api, 'createNamespacedEvent' | 'patchNamespacedEvent'>;

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** An Event to write, with what it is about. */
interface Write {
  object: EventSubject;
  namespace: string;
  type: EventType;
  reason: EventReason;
  event: CorrelatedEvent;
}

export interface EventRecorderOptions extends Partial<Omit<EventCorrelatorOptions, 'newName'>> {
  /** Writes waiting beyond which new ones are dropped (client-go's broadcaster: 1000). */
  maxQueued?: number;
}

/**
 * Kubernetes Events on IDE Cloud objects, so that `kubectl describe` tells a launch's story.
 * Aggregated as client-go's recorder does (runtime/event-correlator.ts): a repeat patches the
 * count of its Event, an object has a budget of writes. Written in the background by one writer,
 * in order, as client-go's broadcaster does: a reconcile pass neither waits for an Event nor fails
 * with one, and a burst of launches does not send its Events all at once. Messages are written by
 * the operator from names and counts only: never values of the session environment.
 */
export class EventRecorder implements EventSink {
  private readonly correlator: EventCorrelator;
  private readonly maxQueued: number;
  private readonly queue: Write[] = [];
  private writing?: Promise<void>;
  private sequence = 0;
  /** Events dropped since the queue was last full. */
  private dropped = 0;

  constructor(
    private readonly api: EventsApi,
    private readonly component: string,
    private readonly log: Logger,
    options: EventRecorderOptions = {},
  ) {
    this.maxQueued = options.maxQueued ?? 1000;
    this.correlator = new EventCorrelator({ ...options, newName: (name, now) => this.newName(name, now) });
  }

  record(object: EventSubject, type: EventType, reason: EventReason, message: string): void {
    const { name, namespace = 'default', uid } = object.metadata;
    const event = this.correlator.correlate({
      objectKey: uid ?? `${object.kind}/${namespace}/${name}`,
      objectName: name,
      type,
      reason,
      message,
    });
    if (!event) {
      this.log.debug({ object: name, reason }, "event over its object's budget: counted, not written yet");
      return;
    }
    if (this.queue.length >= this.maxQueued) {
      // One warning per overflow, not one per Event dropped.
      this.dropped++;
      if (this.dropped === 1) this.log.warn({ object: name, reason }, 'too many events waiting: events dropped');
      return;
    }
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, 'events written again; some were dropped');
      this.dropped = 0;
    }
    this.queue.push({ object, namespace, type, reason, event });
    this.writing ??= this.drain();
  }

  /**
   * Waits for the Events still to be written, at most `timeoutMs`; those still waiting then are
   * dropped (the API server may be what is gone).
   */
  async flush(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const drained = (async () => {
      while (this.writing) await this.writing;
    })();
    await Promise.race([drained, timeout]);
    clearTimeout(timer);
    this.queue.length = 0;
  }

  private async drain(): Promise<void> {
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) await this.write(next);
    } finally {
      this.writing = undefined;
    }
  }

  /** Creates the Event, or patches its count; a write that a later one already carried is skipped. */
  private async write(write: Write): Promise<void> {
    const { event } = write;
    const count = event.count;
    if (event.writtenCount >= count) return;
    try {
      if (event.writtenCount === 0) await this.create(write);
      else await this.patch(write);
      event.writtenCount = Math.max(event.writtenCount, count);
    } catch (error) {
      this.log.warn({ err: describeFailure(error), reason: write.reason }, 'could not record event');
    }
  }

  /** A new Event; one already there under that name (a create that answered too late) is patched. */
  private async create(write: Write, fallBack = true): Promise<void> {
    const { object, namespace, type, reason, event } = write;
    try {
      await this.api.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: event.name, namespace },
          involvedObject: {
            apiVersion: object.apiVersion,
            kind: object.kind,
            name: object.metadata.name,
            namespace,
            uid: object.metadata.uid,
          },
          type,
          reason,
          message: event.message,
          source: { component: this.component },
          firstTimestamp: new Date(event.firstTimestamp),
          lastTimestamp: new Date(event.lastTimestamp),
          count: event.count,
        },
      });
    } catch (error) {
      if (!fallBack || !isConflict(error)) throw error;
      await this.patch(write, false);
    }
  }

  /** The repeat's count on the Event; one gone meanwhile (Events expire) is created again. */
  private async patch(write: Write, fallBack = true): Promise<void> {
    const { namespace, event } = write;
    try {
      await this.api.patchNamespacedEvent(
        {
          name: event.name,
          namespace,
          body: {
            count: event.count,
            lastTimestamp: new Date(event.lastTimestamp).toISOString(),
            message: event.message,
          },
        },
        mergePatch,
      );
    } catch (error) {
      if (!fallBack || !isNotFound(error)) throw error;
      await this.create(write, false);
    }
  }

  /** `<object>.<hex time><hex sequence><random>`: ordered as recorded, unique across operators. */
  private newName(objectName: string, now: number): string {
    const sequence = (this.sequence++ % 0x10000).toString(16).padStart(4, '0');
    return `${objectName}.${now.toString(16)}${sequence}${randomBytes(2).toString('hex')}`;
  }
}

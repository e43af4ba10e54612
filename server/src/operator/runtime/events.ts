import { describeFailure } from '../../kube/client.js';
import { randomBytes } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import type { SessionFailureReasonValue } from '../../model/session.js';
import type { Logger } from './logger.js';

/** A start that failed is told under its machine reason (ImagePullFailed, CrashLooping, …). */
export type EventReason = 'LazyStart' | 'InjectionFailed' | 'Failed' | 'Stopped' | SessionFailureReasonValue;

/** The object an Event is about. */
export type EventSubject = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string };
};

/** What a reconciler needs of the recorder: record, in the background. */
export interface EventSink {
  record(object: EventSubject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void;
}

/**
 * Kubernetes Events on IDE Cloud objects, for what a person may want explained: a lazy start (why it
 * took longer), failures, stops. A warm launch that goes as planned is told by the session's
 * conditions alone: every Event is an API write, and a launch should cost few. Messages are written
 * by the operator from names and counts only: never values of the session environment.
 */
export class EventRecorder implements EventSink {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly core: Pick<k8s.CoreV1Api, 'createNamespacedEvent'>,
    private readonly component: string,
    private readonly log: Logger,
  ) {}

  /**
   * Records in the background, as client-go's recorder does: an Event is for people reading
   * `kubectl describe`, so a reconcile pass neither waits for it nor fails with it.
   */
  record(object: EventSubject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    const sent = this.send(object, type, reason, message).finally(() => this.pending.delete(sent));
    this.pending.add(sent);
  }

  /** Waits for the Events still being sent. */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  private async send(
    object: EventSubject,
    type: 'Normal' | 'Warning',
    reason: EventReason,
    message: string,
  ): Promise<void> {
    const namespace = object.metadata.namespace ?? 'default';
    const now = new Date();
    try {
      await this.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: {
            name: `${object.metadata.name}.${now.getTime().toString(16)}${randomBytes(3).toString('hex')}`,
            namespace,
          },
          involvedObject: {
            apiVersion: object.apiVersion,
            kind: object.kind,
            name: object.metadata.name,
            namespace,
            uid: object.metadata.uid,
          },
          type,
          reason,
          message,
          source: { component: this.component },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (error) {
      this.log.warn({ err: describeFailure(error), reason }, 'could not record event');
    }
  }
}

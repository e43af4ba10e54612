// What the bridge keeps of the session's end: the operator's latest stop notice (counted down on this
// machine's clock, so the operator's and the pod's clocks never need to agree) and when the IDE last
// reported activity. In memory only: a restarted container is a new instance.
import type { StopNotice } from '../../server/src/model/data-bridge.js';

export interface HeldNotice extends StopNotice {
  /** Grows with each notice: the extension shows each one once. */
  id: number;
}

export class SessionLifecycle {
  private held: { id: number; notice: StopNotice; stopAt: number } | undefined;
  private lastActivity: number | undefined;
  private nextId = 1;

  constructor(private readonly clock: () => number = Date.now) {}

  /** Keeps the operator's notice in place of any earlier one; returns its id. */
  notify(notice: StopNotice): number {
    const id = this.nextId++;
    this.held = { id, notice, stopAt: this.clock() + notice.secondsLeft * 1000 };
    return id;
  }

  /** The notice held, with the seconds left now; undefined when none was given. */
  notice(): HeldNotice | undefined {
    if (!this.held) return undefined;
    const secondsLeft = Math.max(0, Math.ceil((this.held.stopAt - this.clock()) / 1000));
    return { id: this.held.id, ...this.held.notice, secondsLeft };
  }

  recordActivity(): void {
    this.lastActivity = this.clock();
  }

  /** Whole seconds since the last activity the IDE reported; null when it reported none. */
  secondsSinceActivity(): number | null {
    return this.lastActivity === undefined ? null : Math.max(0, Math.floor((this.clock() - this.lastActivity) / 1000));
  }
}

/**
 * At most `limit` calls in flight; the others wait in order of issue, the calls ahead before the
 * others. A wait ends early, rejected with the signal's reason, when the call's signal aborts (its
 * deadline passed).
 */
export class CallSlots {
  private inFlight = 0;
  /** The waiting calls' turns: those ahead, then the others, each in order of issue. */
  private readonly waiting = { ahead: [] as (() => void)[], others: [] as (() => void)[] };

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`calls in flight: at least 1, not ${limit}`);
  }

  /** Takes a slot when one is free, without waiting; each true is followed by one release. */
  tryAcquire(): boolean {
    if (this.inFlight >= this.limit) return false;
    this.inFlight++;
    return true;
  }

  /** Resolves when the call may go; each resolved acquire is followed by one release. */
  acquire(signal?: AbortSignal, { ahead = false } = {}): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.tryAcquire()) return Promise.resolve();
    const lane = ahead ? this.waiting.ahead : this.waiting.others;
    return new Promise((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener('abort', abandon);
        resolve();
      };
      const abandon = () => {
        lane.splice(lane.indexOf(turn), 1);
        reject(signal!.reason);
      };
      lane.push(turn);
      signal?.addEventListener('abort', abandon, { once: true });
    });
  }

  /** The call's slot goes to the next waiting call, if any. */
  release(): void {
    const next = this.waiting.ahead.shift() ?? this.waiting.others.shift();
    if (next) next();
    else this.inFlight--;
  }

  /** Calls in flight and waiting. */
  get counts(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waiting.ahead.length + this.waiting.others.length };
  }
}

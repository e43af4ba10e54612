import { RankedQueue } from './ranked-queue.js';

/**
 * At most `limit` calls in flight; the others wait in order of issue, the calls ahead before the
 * others. A wait ends early, rejected with the signal's reason, when the call's signal aborts (its
 * deadline passed).
 */
export class CallSlots {
  private inFlight = 0;
  private readonly waiting = new RankedQueue<{ turn: () => void; abandoned: boolean }>();
  private abandoned = 0;

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`calls in flight: at least 1, not ${limit}`);
  }

  /** Resolves when the call may go; each resolved acquire is followed by one release. */
  acquire(signal?: AbortSignal, { ahead = false } = {}): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        turn: () => {
          signal?.removeEventListener('abort', abandon);
          resolve();
        },
        abandoned: false,
      };
      // Left in the queue, skipped when its turn comes.
      const abandon = () => {
        waiter.abandoned = true;
        this.abandoned++;
        reject(signal!.reason);
      };
      this.waiting.push(waiter, ahead ? 0 : 1);
      signal?.addEventListener('abort', abandon, { once: true });
    });
  }

  /** The call's slot goes to the next waiting call, if any. */
  release(): void {
    for (let next = this.waiting.pop(); next; next = this.waiting.pop()) {
      if (!next.abandoned) return next.turn();
      this.abandoned--;
    }
    this.inFlight--;
  }

  /** Calls in flight and waiting. */
  get counts(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waiting.size - this.abandoned };
  }
}

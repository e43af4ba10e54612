/**
 * At most `limit` calls in flight; the others wait in order of issue. A wait ends early, rejected with
 * the signal's reason, when the call's signal aborts (its deadline passed).
 */
export class CallSlots {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`calls in flight: at least 1, not ${limit}`);
  }

  /** Resolves when the call may go; each resolved acquire is followed by one release. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener('abort', abandon);
        resolve();
      };
      const abandon = () => {
        this.waiting.splice(this.waiting.indexOf(turn), 1);
        reject(signal!.reason);
      };
      this.waiting.push(turn);
      signal?.addEventListener('abort', abandon, { once: true });
    });
  }

  /** The call's slot goes to the next waiting call, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }

  /** Calls in flight and waiting. */
  get counts(): { inFlight: number; waiting: number } {
    return { inFlight: this.inFlight, waiting: this.waiting.length };
  }
}

/** One cap: at most `max` open at once among the requests counted under the same `key`. */
export interface Cap {
  key: string;
  max: number;
  /** What the refused caller is told (no secret: it is sent as the error's reason). */
  refusal: string;
}

/**
 * Counts long-lived requests (progress streams) under several caps at once, e.g. per user, per client
 * and in total: a request is admitted only when every cap it falls under has room, and is counted under
 * all of them until released. The service and the landing page each keep their own.
 */
export class OpenCounts {
  private readonly counts = new Map<string, number>();

  /** The refusal of the first full cap (in the order given), or the release of the admitted request. */
  admit(caps: readonly Cap[]): { refused: string } | { release: () => void } {
    const full = caps.find((cap) => (this.counts.get(cap.key) ?? 0) >= cap.max);
    if (full) return { refused: full.refusal };
    for (const cap of caps) this.counts.set(cap.key, (this.counts.get(cap.key) ?? 0) + 1);
    let released = false;
    // May be called more than once (close and finish both fire).
    const release = () => {
      if (released) return;
      released = true;
      for (const cap of caps) {
        const left = (this.counts.get(cap.key) ?? 1) - 1;
        if (left > 0) this.counts.set(cap.key, left);
        else this.counts.delete(cap.key);
      }
    };
    return { release };
  }
}

/** The reasons of the caps, the same wording on the service and the landing page. */
export const capRefusal = {
  perUser: (max: number) => `too many progress streams of this user (at most ${max}); close one first`,
  perClient: (max: number) => `too many progress streams from this client (at most ${max}); close one first`,
};

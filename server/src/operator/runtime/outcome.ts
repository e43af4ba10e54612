/** Typed step errors: steps throw them, one function (`outcomeOf`) maps them to requeue/fail/warn. */

/** The part is not ready yet; visit again later. */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly afterMs = 1000,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/** The object cannot be served: it goes to Failed with this code and reason (terminal). */
export class FailObject extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'FailObject';
  }
}

export type Outcome =
  | { kind: 'requeue'; afterMs: number; message: string }
  | { kind: 'fail'; code: number; reason: string }
  | { kind: 'error'; error: unknown };

export function outcomeOf(error: unknown): Outcome {
  if (error instanceof RetryLater) return { kind: 'requeue', afterMs: error.afterMs, message: error.message };
  if (error instanceof FailObject) return { kind: 'fail', code: error.code, reason: error.reason };
  return { kind: 'error', error };
}

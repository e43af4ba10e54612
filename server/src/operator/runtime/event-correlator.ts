/**
 * Which Event an occurrence is written to, decided as client-go's EventCorrelator does
 * (tools/record/events_cache.go), so a pass that repeats itself cannot flood the API server:
 *
 * 1. Similar occurrences (same object, type and reason) with many different messages within the
 *    window are combined into one Event, its message prefixed `(combined from similar events): `.
 * 2. A repeat of the same object, type, reason and message within the window counts on the Event
 *    already there (`count`, `lastTimestamp`) instead of making another.
 * 3. Each object has a budget of writes (a token bucket): past it an occurrence is counted on its
 *    Event but not written; the next write that fits the budget carries the count.
 *
 * Pure and clocked from outside: what to write, never how.
 */

export type EventType = 'Normal' | 'Warning';

/** One occurrence to correlate. */
export interface EventOccurrence {
  /** The involved object's identity (its uid, else kind, namespace and name). */
  objectKey: string;
  /** The involved object's name: new Events are named after it. */
  objectName: string;
  type: EventType;
  reason: string;
  message: string;
}

/** One Event: created once, then patched with the count of each repeat. Shared with its writer. */
export interface CorrelatedEvent {
  readonly name: string;
  message: string;
  count: number;
  readonly firstTimestamp: number;
  lastTimestamp: number;
  /** The count the API server holds (0: not created yet); kept by the writer. */
  writtenCount: number;
}

/** client-go's defaults (record.NewEventCorrelator): 10 minutes, 10 messages, 25 writes then one per 5 minutes, 4096 entries. */
export const EVENT_CORRELATION = {
  windowMs: 10 * 60_000,
  maxSimilarMessages: 10,
  burst: 25,
  refillMs: 5 * 60_000,
  maxEntries: 4096,
} as const;

export const COMBINED_PREFIX = '(combined from similar events): ';

export interface EventCorrelatorOptions {
  /** The clock (ms since the epoch). */
  now?: () => number;
  /** A repeat within this time of the last one counts on the same Event. */
  windowMs?: number;
  /** Different messages of one object, type and reason within the window from which they are combined. */
  maxSimilarMessages?: number;
  /** Writes an object may have at once, and the time in which its budget gains one more. */
  burst?: number;
  refillMs?: number;
  /** Objects (and Events) remembered; the least recently seen are forgotten first. */
  maxEntries?: number;
  /** The name of a new Event about `objectName` first seen at `now`. */
  newName: (objectName: string, now: number) => string;
}

/** A map that forgets its least recently used entry past `max`. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
}

const SEP = '\u0000';

export class EventCorrelator {
  private readonly now: () => number;
  private readonly windowMs: number;
  private readonly maxSimilarMessages: number;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly newName: (objectName: string, now: number) => string;
  private readonly similar: Lru<{ messages: Set<string>; lastSeen: number }>;
  private readonly events: Lru<CorrelatedEvent>;
  private readonly budgets: Lru<{ tokens: number; at: number }>;

  constructor(options: EventCorrelatorOptions) {
    this.now = options.now ?? Date.now;
    this.windowMs = options.windowMs ?? EVENT_CORRELATION.windowMs;
    this.maxSimilarMessages = options.maxSimilarMessages ?? EVENT_CORRELATION.maxSimilarMessages;
    this.burst = options.burst ?? EVENT_CORRELATION.burst;
    this.refillMs = options.refillMs ?? EVENT_CORRELATION.refillMs;
    this.newName = options.newName;
    const max = options.maxEntries ?? EVENT_CORRELATION.maxEntries;
    this.similar = new Lru(max);
    this.events = new Lru(max);
    this.budgets = new Lru(max);
  }

  /** The Event to write this occurrence to, or undefined when the object's budget is spent. */
  correlate(occurrence: EventOccurrence): CorrelatedEvent | undefined {
    const now = this.now();
    const similarKey = [occurrence.objectKey, occurrence.type, occurrence.reason].join(SEP);
    let key = `${similarKey}${SEP}${occurrence.message}`;
    let message = occurrence.message;
    if (this.manySimilar(similarKey, occurrence.message, now)) {
      key = similarKey;
      message = `${COMBINED_PREFIX}${occurrence.message}`;
    }
    let event = this.events.get(key);
    if (event && now - event.lastTimestamp <= this.windowMs) {
      event.count += 1;
      event.lastTimestamp = now;
      event.message = message;
    } else {
      event = {
        name: this.newName(occurrence.objectName, now),
        message,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        writtenCount: 0,
      };
    }
    this.events.set(key, event);
    return this.spend(occurrence.objectKey, now) ? event : undefined;
  }

  /** Whether the messages of one object, type and reason seen within the window reached the limit. */
  private manySimilar(similarKey: string, message: string, now: number): boolean {
    let seen = this.similar.get(similarKey);
    if (!seen || now - seen.lastSeen > this.windowMs) seen = { messages: new Set(), lastSeen: now };
    seen.messages.add(message);
    seen.lastSeen = now;
    this.similar.set(similarKey, seen);
    if (seen.messages.size < this.maxSimilarMessages) return false;
    // As client-go: one message goes, so the set stays bounded and further ones keep being combined.
    seen.messages.delete(seen.messages.values().next().value!);
    return true;
  }

  /** Takes one write from the object's budget, if it has one. */
  private spend(objectKey: string, now: number): boolean {
    const budget = this.budgets.get(objectKey) ?? { tokens: this.burst, at: now };
    budget.tokens = Math.min(this.burst, budget.tokens + (now - budget.at) / this.refillMs);
    budget.at = now;
    this.budgets.set(objectKey, budget);
    if (budget.tokens < 1) return false;
    budget.tokens -= 1;
    return true;
  }
}

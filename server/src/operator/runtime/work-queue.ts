import { RankedQueue } from './ranked-queue.js';

/**
 * A de-duplicating work queue keyed by string (namespace/name), in the shape of client-go's
 * workqueue: a key is queued at most once, is never processed by two workers at the same time, and a
 * key added while it is processed is processed again afterwards. Failures come back with per-key
 * exponential backoff; `addAfter` schedules a later visit.
 */
export type Handler = (key: string) => Promise<{ requeueAfterMs?: number } | void>;

export interface WorkQueueOptions {
  workers: number;
  /**
   * A key's place in line: lower goes first, equal ones in order of adding. Without it the queue is
   * first in, first out.
   */
  rank?: (key: string) => number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (key: string, error: unknown) => void;
}

export class WorkQueue {
  private readonly queue = new RankedQueue<string>();
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  /** Per key being processed: the wakes its own pass may have caused (`addUnlessOwn`), judged when it ends. */
  private readonly maybeOwn = new Map<string, (() => boolean)[]>();
  private readonly failures = new Map<string, number>();
  /** Each key's scheduled visit: its timer and when it is due (ms since the epoch). */
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; dueAt: number }>();
  private waiters: (() => void)[] = [];
  private stopped = false;
  private running: Promise<void>[] = [];

  constructor(
    private readonly handler: Handler,
    private readonly options: WorkQueueOptions,
  ) {}

  start(): void {
    this.stopped = false;
    for (let i = 0; i < this.options.workers; i++) this.running.push(this.worker());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.wake();
    await Promise.all(this.running);
    this.running = [];
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key, this.options.rank?.(key) ?? 0);
    this.wake();
  }

  /**
   * A wake by a change that the key's pass in progress may have written itself (the watch's copy of a
   * write can come before the write's answer): judged when that pass ends, its writes answered by
   * then, by `own`. A key not being processed is added at once.
   */
  addUnlessOwn(key: string, own: () => boolean): void {
    if (this.stopped) return;
    if (!this.processing.has(key)) return this.add(key);
    const checks = this.maybeOwn.get(key) ?? [];
    checks.push(own);
    this.maybeOwn.set(key, checks);
  }

  /** Adds the key after `ms`, or sooner when a visit of it is scheduled sooner already (one visit either way). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const dueAt = Date.now() + ms;
    const scheduled = this.timers.get(key);
    if (scheduled && scheduled.dueAt <= dueAt) return;
    if (scheduled) clearTimeout(scheduled.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { timer, dueAt });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private async next(): Promise<string | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      const key = this.queue.pop();
      if (key !== undefined) {
        this.queued.delete(key);
        return key;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private backoff(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const base = this.options.baseBackoffMs ?? 200;
    return Math.min(this.options.maxBackoffMs ?? 30_000, base * 2 ** (n - 1));
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.next();
      if (key === undefined) return;
      this.processing.add(key);
      let retryAfter: number | undefined;
      try {
        const result = await this.handler(key);
        this.failures.delete(key);
        retryAfter = result?.requeueAfterMs;
      } catch (error) {
        this.options.onError?.(key, error);
        retryAfter = this.backoff(key);
      } finally {
        this.processing.delete(key);
      }
      const checks = this.maybeOwn.get(key) ?? [];
      this.maybeOwn.delete(key);
      if (this.dirty.delete(key) || checks.some((own) => !own())) this.add(key);
      else if (retryAfter !== undefined) this.addAfter(key, retryAfter);
    }
  }
}

import type * as k8s from '@kubernetes/client-node';
import { Informer, type IndexFunc, type Listener } from '../kube/informer.js';
import { API_VERSION } from '../model/api-group.js';
import type { AppDefinition } from '../model/app-definition.js';
import { gateIndexers } from '../model/admission.js';
import { limitIndexers } from '../model/limits.js';
import type { Session } from '../model/session.js';
import type { Workspace } from '../model/workspace.js';
import { ServiceStopping } from './errors.js';

/** What the cache needs of an object: its name, uid, version and deletion mark. */
export interface CachedObject {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string | Date;
  };
}

/** The authoritative read of one object by name (a GET), used where the cache may lag a write. */
export interface ObjectReader<T> {
  readonly path: string;
  readonly namespace: string;
  readonly kind: string;
  find(name: string): Promise<T | undefined>;
}

/** How a wait ends: with a value, with an error, or not yet (undefined). */
export type Decision<R> = { value: R } | { error: Error } | undefined;

export interface WaitOptions<T, R> {
  /** The object waited on; another object of the same name counts as gone. */
  uid?: string;
  /** Called with the cached object on every change of it (and once at the start). */
  decide: (current: T) => Decision<R>;
  /** How the wait ends when the object is gone (deleted, or replaced by one with another uid). */
  gone: () => Decision<R>;
  /**
   * Whether "gone" in the cache is checked with one GET first: the cache can lag a write (a relist
   * that started before a create reports the created object as deleted until the watch brings it).
   */
  confirmGone?: boolean;
  /** Epoch milliseconds. */
  deadline: number;
  onDeadline: () => Error;
}

/**
 * One kind of resource as the service sees it: an informer's cache of the namespace, waits on one
 * object's changes (from the informer's events, never by polling or per-request watches) and
 * read-your-writes after the service's own writes.
 */
export class CachedResource<T extends CachedObject> {
  readonly informer: Informer<T>;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly subscribers = new Map<string, Set<Listener<T>>>();
  private stopped = false;

  constructor(
    kc: k8s.KubeConfig,
    private readonly reader: ObjectReader<T>,
    options: {
      rewatchIntervalMs: number;
      onError: (error: unknown) => void;
      indexers?: Record<string, IndexFunc<T>>;
    },
  ) {
    this.informer = new Informer<T>(kc, {
      path: reader.path,
      apiVersion: API_VERSION,
      kind: reader.kind,
      namespace: reader.namespace,
      rewatchIntervalMs: options.rewatchIntervalMs,
      onError: options.onError,
      indexers: options.indexers,
    });
    this.informer.on((type, object, ownWrite) => {
      this.notify(object.metadata.name);
      for (const listener of [...(this.subscribers.get(object.metadata.name) ?? [])]) listener(type, object, ownWrite);
    });
  }

  /**
   * Follows one object by name through the cache's events (ADDED, MODIFIED, DELETED, as a watch of
   * that name would report them) without a request of its own. Answers the unsubscribe.
   */
  subscribe(name: string, listener: Listener<T>): () => void {
    let set = this.subscribers.get(name);
    if (!set) this.subscribers.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.subscribers.get(name) === set) this.subscribers.delete(name);
    };
  }

  /** The cached object, or undefined (cache only). */
  get(name: string): T | undefined {
    return this.informer.get(name);
  }

  /**
   * The object: from the cache; on a miss, one GET (an object another replica or client has just
   * created may not have reached the cache yet). A miss that the API server confirms is cheap.
   */
  find(name: string): Promise<T | undefined> {
    return this.informer.find(name, (n) => this.reader.find(n));
  }

  /** Every cached object (a fresh array; the objects are the cache's own: never mutate them). */
  list(): T[] {
    return this.informer.list();
  }

  /** The cached objects under `key` in one of the cache's indexes. */
  byIndex(index: string, key: string): T[] {
    return this.informer.byIndex(index, key);
  }

  /** How many cached objects are under `key` in one of the cache's indexes. */
  countByIndex(index: string, key: string): number {
    return this.informer.countByIndex(index, key);
  }

  /** Read-your-writes: the answer of a write replaces an older cached version, unless its object was deleted. */
  observe(object: T): void {
    this.informer.observe(object);
  }

  /**
   * Waits for one object by the cache's events: checks the cached object first, then every change;
   * rejects with `onDeadline()` at the deadline and with ServiceStopping when the cache stops.
   */
  waitFor<R>(name: string, options: WaitOptions<T, R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.stopped) {
        reject(new ServiceStopping());
        return;
      }
      let set = this.waiters.get(name);
      if (!set) this.waiters.set(name, (set = new Set()));
      const waiters = set;
      const wait: PendingWait<T, R> = new PendingWait(
        { cached: () => this.informer.get(name), read: () => this.reader.find(name), observe: (o) => this.observe(o) },
        options,
        (decision) => {
          waiters.delete(wait);
          if (waiters.size === 0 && this.waiters.get(name) === waiters) this.waiters.delete(name);
          if ('value' in decision) resolve(decision.value);
          else reject(decision.error);
        },
      );
      waiters.add(wait);
      wait.check();
    });
  }

  /**
   * Resolves once the cache shows the object deleted or being deleted (after the service deleted it),
   * so the caller's next listing does not show it as before; gives up quietly after `timeoutMs`.
   */
  async reflectsDeletion(name: string, uid: string | undefined, timeoutMs = 10_000): Promise<void> {
    await this.waitFor(name, {
      uid,
      decide: (current) => (current.metadata.deletionTimestamp ? { value: undefined } : undefined),
      gone: () => ({ value: undefined }),
      deadline: Date.now() + timeoutMs,
      onDeadline: () => new Error('the cache did not see the deletion in time'),
    }).catch(() => undefined);
  }

  start(): void {
    this.stopped = false;
    this.informer.start();
  }

  /** Stops the informer; pending waits reject with ServiceStopping. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const set of [...this.waiters.values()]) for (const waiter of [...set]) waiter.stop();
    await this.informer.stop();
  }

  private notify(name: string): void {
    const set = this.waiters.get(name);
    if (!set) return;
    for (const waiter of [...set]) waiter.check();
  }
}

interface Waiter {
  check(): void;
  stop(): void;
}

/** Where one wait reads its object: the cache, the API server (one GET), and read-your-writes. */
interface WaitSource<T> {
  cached(): T | undefined;
  read(): Promise<T | undefined>;
  observe(object: T): void;
}

/**
 * One pending `waitFor`: decides on the object at every check until a decision, the deadline or the
 * cache's stop ends it; `settle` is called once, with the decision that ended it.
 */
class PendingWait<T extends CachedObject, R> implements Waiter {
  private finished = false;
  /** A GET confirming "gone" is on its way. */
  private confirming = false;
  private changedWhileConfirming = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly source: WaitSource<T>,
    private readonly options: WaitOptions<T, R>,
    private readonly settle: (decision: NonNullable<Decision<R>>) => void,
  ) {
    this.timer = setTimeout(
      () => this.finish({ error: options.onDeadline() }),
      Math.max(0, options.deadline - Date.now()),
    );
  }

  check(): void {
    if (this.finished) return;
    const current = this.source.cached();
    if (!this.isGone(current)) {
      this.decideOn(current);
      return;
    }
    if (!this.options.confirmGone) {
      this.decideGone();
      return;
    }
    if (this.confirming) {
      this.changedWhileConfirming = true;
      return;
    }
    this.confirmGone();
  }

  stop(): void {
    this.finish({ error: new ServiceStopping() });
  }

  /** Asks the API server whether the object the cache misses is really gone, then decides. */
  private confirmGone(): void {
    this.confirming = true;
    this.changedWhileConfirming = false;
    this.source.read().then(
      (found) => {
        this.confirming = false;
        if (this.finished) return;
        if (this.isGone(found)) {
          this.decideGone();
        } else {
          // The cache lags: the object is there. Decide on what the API server said; the watch
          // brings the object into the cache and its next change comes as an event.
          this.source.observe(found);
          this.decideOn(found);
          // A change seen while the GET was on its way may be newer than its answer.
          if (this.changedWhileConfirming) this.check();
        }
      },
      () => {
        // The API server did not answer: the cache's word stands.
        this.confirming = false;
        this.decideGone();
      },
    );
  }

  private isGone(current: T | undefined): current is undefined {
    return !current || (this.options.uid !== undefined && current.metadata.uid !== this.options.uid);
  }

  private decideOn(current: T): void {
    let decision: Decision<R>;
    try {
      decision = this.options.decide(current);
    } catch (error) {
      decision = { error: error instanceof Error ? error : new Error(String(error)) };
    }
    if (decision) this.finish(decision);
  }

  private decideGone(): void {
    const decision = this.options.gone();
    if (decision) this.finish(decision);
  }

  private finish(decision: NonNullable<Decision<R>>): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.settle(decision);
  }
}

/**
 * The Kubernetes Events about Sessions in the namespace, for the progress streams: one informer,
 * field-selected on `involvedObject.kind=Session`, shared by every stream (no watch per stream).
 * Started by the first stream that subscribes, so a service nobody follows progress on never lists
 * Events; stopped with the other caches. Each Event is kept with only what a stream shows.
 */
export class SessionEventCache {
  readonly informer: Informer<k8s.CoreV1Event>;
  /** Listeners by the name of the session an Event is about. */
  private readonly subscribers = new Map<string, Set<(event: k8s.CoreV1Event) => void>>();
  private started = false;
  private stopped = false;

  constructor(
    kc: k8s.KubeConfig,
    namespace: string,
    options: { rewatchIntervalMs: number; onError: (error: unknown) => void },
  ) {
    this.informer = new Informer<k8s.CoreV1Event>(kc, {
      path: `/api/v1/namespaces/${namespace}/events`,
      apiVersion: 'v1',
      kind: 'Event',
      namespace,
      fieldSelector: 'involvedObject.kind=Session',
      rewatchIntervalMs: options.rewatchIntervalMs,
      onError: options.onError,
      transform: slimEvent,
    });
    this.informer.on((type, event) => {
      if (type === 'DELETED') return;
      const set = this.subscribers.get(event.involvedObject?.name ?? '');
      for (const listener of [...(set ?? [])]) listener(event);
    });
  }

  /** The cached Events about sessions of that name (of any uid), oldest first as they came. */
  of(sessionName: string): k8s.CoreV1Event[] {
    return this.informer.list().filter((event) => event.involvedObject?.name === sessionName);
  }

  /**
   * Calls `listener` with each Event about a session of that name that is added or changed from now
   * on (the first subscription starts the informer, whose first list reports the existing ones as
   * added). Answers the unsubscribe.
   */
  subscribe(sessionName: string, listener: (event: k8s.CoreV1Event) => void): () => void {
    if (!this.started && !this.stopped) {
      this.started = true;
      this.informer.start();
    }
    let set = this.subscribers.get(sessionName);
    if (!set) this.subscribers.set(sessionName, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.subscribers.get(sessionName) === set) this.subscribers.delete(sessionName);
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.subscribers.clear();
    await this.informer.stop();
  }
}

/** What the progress stream reads of an Event; the rest is not kept. */
function slimEvent(event: k8s.CoreV1Event): k8s.CoreV1Event {
  return {
    metadata: {
      name: event.metadata?.name,
      namespace: event.metadata?.namespace,
      uid: event.metadata?.uid,
      resourceVersion: event.metadata?.resourceVersion,
      creationTimestamp: event.metadata?.creationTimestamp,
    },
    involvedObject: {
      kind: event.involvedObject?.kind,
      name: event.involvedObject?.name,
      uid: event.involvedObject?.uid,
    },
    type: event.type,
    reason: event.reason,
    message: event.message,
    count: event.count,
    firstTimestamp: event.firstTimestamp,
    lastTimestamp: event.lastTimestamp,
    eventTime: event.eventTime,
  };
}

/**
 * The service's caches of its namespace: Sessions, AppDefinitions and Workspaces, started with the
 * service, which answers only after their first list (readiness); and the Events about Sessions,
 * started by the first progress stream. All stopped when the service closes.
 */
export class ServiceCaches {
  readonly sessions: CachedResource<Session>;
  readonly appDefinitions: CachedResource<AppDefinition>;
  readonly workspaces: CachedResource<Workspace>;
  readonly sessionEvents: SessionEventCache;

  constructor(
    kc: k8s.KubeConfig,
    readers: {
      sessions: ObjectReader<Session>;
      appDefinitions: ObjectReader<AppDefinition>;
      workspaces: ObjectReader<Workspace>;
    },
    options: { rewatchIntervalMs: number; onError: (kind: string, error: unknown) => void },
  ) {
    const cache = <T extends CachedObject>(reader: ObjectReader<T>, indexers?: Record<string, IndexFunc<T>>) =>
      new CachedResource<T>(kc, reader, {
        rewatchIntervalMs: options.rewatchIntervalMs,
        onError: (error) => options.onError(reader.kind, error),
        indexers,
      });
    // Indexed for the limits of a launch (model/limits.ts) and the lazy-start queue (model/admission.ts):
    // counted and placed without a look at every session.
    this.sessions = cache<Session>(readers.sessions, { ...limitIndexers, ...gateIndexers });
    this.appDefinitions = cache<AppDefinition>(readers.appDefinitions);
    this.workspaces = cache<Workspace>(readers.workspaces);
    this.sessionEvents = new SessionEventCache(kc, readers.sessions.namespace, {
      rewatchIntervalMs: options.rewatchIntervalMs,
      onError: (error) => options.onError('Event', error),
    });
  }

  private get all(): CachedResource<CachedObject>[] {
    return [this.sessions, this.appDefinitions, this.workspaces] as unknown as CachedResource<CachedObject>[];
  }

  start(): void {
    for (const cache of this.all) cache.start();
  }

  /** Resolves once every cache has listed once; rejects after `timeoutMs`. */
  async synced(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the service's caches did not sync within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([Promise.all(this.all.map((cache) => cache.informer.waitForSync())), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.all.map((cache) => cache.stop()), this.sessionEvents.stop()]);
  }
}

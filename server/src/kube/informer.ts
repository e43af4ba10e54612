import * as k8s from '@kubernetes/client-node';
import { watch } from './watch.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
/**
 * Hears each change of the cache. `ownWrite`: the watch brought the change of a write whose answer
 * this process passed to observe() (the event's own resourceVersion, not a newer cached one's), so
 * its writer knew what the change holds. `previous`: on a change of an object the cache held, what it
 * held (client-go's UpdateFunc(old, new)), so a listener can tell what changed: the same version when
 * a write's answer came before its event (then `ownWrite`); undefined when the cache held a newer
 * version than the event (what came between is not known).
 */
export type Listener<T> = (type: WatchEventType, object: T, ownWrite: boolean, previous?: T) => void;
/** The keys one object is found under in an index (client-go's IndexFunc); none leaves it out. */
export type IndexFunc<T> = (object: T) => readonly string[];

export type Obj = {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; managedFields?: unknown };
};
export interface InformerOptions<T extends Obj = Obj> {
  /** Collection path, e.g. /apis/apps/v1/namespaces/ns/deployments. */
  path: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  labelSelector?: string;
  /** Server-side field selector of list and watch, e.g. `involvedObject.kind=Session` for Events. */
  fieldSelector?: string;
  /**
   * The watch connection is renewed this often, from the last resourceVersion seen: a watch can
   * stall silently, and a new one resumes where the old one stopped without listing again.
   */
  rewatchIntervalMs: number;
  maxBackoffMs?: number;
  onError?: (error: unknown) => void;
  /**
   * What the cache keeps of each object (client-go's SetTransform): drop what no reader uses, so
   * memory follows what the cache is for, not the objects' size.
   */
  transform?: (object: T) => T;
  /**
   * Named indexes of the cache (client-go's Indexers), kept as objects come, change and go: readers
   * find what they look for by key (`byIndex`) instead of scanning the whole cache, so a lookup does
   * not grow with the collection. Computed on what the cache keeps (after `transform`).
   */
  indexers?: Record<string, IndexFunc<T>>;
}

/**
 * List + watch of one collection, in the shape of client-go's reflector and store: a cache of the
 * objects (without managedFields, which nobody reads and which are most of an object's size), an
 * event for each change, and restarts with backoff on any error. It lists only when it starts and
 * when a watch cannot resume (410 Gone or an error); that relist reports what changed while the
 * watch was down, deletions included, and nothing for objects that did not change.
 *
 * The cache is a view that can lag the API server by a watch event: readers act on it and write with
 * optimistic concurrency (resourceVersion, server-side apply), so a stale read costs a retry, never a
 * wrong write.
 */
export class Informer<T extends Obj = Obj> {
  private readonly cache = new Map<string, T>();
  /** Index name → key → the objects under it, by cache key. */
  private readonly indexes = new Map<string, Map<string, Map<string, T>>>();
  /**
   * Cache key → the keys its object was indexed under, per index, as computed when it was stored:
   * what it leaves on a change or its deletion, whatever the object held since.
   */
  private readonly indexedUnder = new Map<string, [string, readonly string[]][]>();
  /** uid → when its deletion was seen (insertion order is time order), so observe() cannot revive it. */
  private readonly deleted = new Map<string, number>();
  /** Cache key → the resourceVersions of write answers (observe) whose watch events are not seen yet. */
  private readonly written = new Map<string, string[]>();
  private readonly listeners: Listener<T>[] = [];
  private stopped = true;
  private abort?: AbortController;
  private rewatchTimer?: NodeJS.Timeout;
  private backoffMs = 0;
  private loop?: Promise<void>;
  private wakeLoop?: () => void;
  private readonly synced: Promise<void>;
  private markSynced!: () => void;
  private isSynced = false;
  private readonly objects: k8s.KubernetesObjectApi;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly options: InformerOptions<T>,
  ) {
    this.objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    for (const name of Object.keys(options.indexers ?? {})) this.indexes.set(name, new Map());
    this.synced = new Promise<void>((resolve) => (this.markSynced = resolve));
  }

  on(listener: Listener<T>): this {
    this.listeners.push(listener);
    return this;
  }

  /** The cached object of that name in the informer's namespace. */
  get(name: string): T | undefined {
    return this.cache.get(`${this.options.namespace}/${name}`);
  }

  /**
   * The cached object or, on a miss, what `read` answers (kept in the cache): a miss is not proof of
   * absence, since an object created an instant ago may still be on its way in the watch.
   */
  async find(name: string, read: (name: string) => Promise<T | undefined>): Promise<T | undefined> {
    const cached = this.get(name);
    if (cached) return cached;
    const found = await read(name);
    if (found) this.keep(found);
    return found;
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  /** The cached objects under `key` in the index `index` (one of the `indexers`). */
  byIndex(index: string, key: string): T[] {
    return [...(this.indexed(index).get(key)?.values() ?? [])];
  }

  /** How many cached objects are under `key` in the index `index`, without listing them. */
  countByIndex(index: string, key: string): number {
    return this.indexed(index).get(key)?.size ?? 0;
  }

  private indexed(index: string): Map<string, Map<string, T>> {
    const entries = this.indexes.get(index);
    if (!entries) throw new Error(`${this.options.kind} informer: no index ${index}`);
    return entries;
  }

  get hasSynced(): boolean {
    return this.isSynced;
  }

  /**
   * Read-your-writes, as client-go's mutation cache: the object a write answered replaces the cached
   * one unless the cache already holds a newer version, so the writer's next read does not go back in
   * time while the watch event is on its way. An object whose deletion was seen is not brought back.
   * No event is emitted: the watch brings that, as the listeners' `ownWrite`.
   */
  observe(object: T): void {
    if (this.wasDeleted(object)) return;
    const version = object.metadata?.resourceVersion;
    if (version) {
      const key = keyOf(object);
      const versions = this.written.get(key) ?? [];
      // A few at most: each goes when its event (or a later one) comes.
      this.written.set(key, [...versions.slice(-(MAX_WRITES_AWAITED - 1)), version]);
    }
    this.keep(object);
  }

  /**
   * Whether this process observed a write's answer at `version` of the object `name` that no later
   * event has passed yet: the change of its own write, when its watch event came before the answer.
   */
  observed(name: string, version: string | undefined): boolean {
    return !!version && !!this.written.get(`${this.options.namespace}/${name}`)?.includes(version);
  }

  /** Keeps an answer of the API server unless the cache holds a newer version or saw its deletion. */
  private keep(object: T): void {
    if (this.wasDeleted(object)) return;
    const cached = this.cache.get(keyOf(object));
    if (cached && compareVersions(object.metadata?.resourceVersion, cached.metadata?.resourceVersion) <= 0) return;
    this.store(object);
  }

  private wasDeleted(object: T): boolean {
    const uid = object.metadata?.uid;
    return !!uid && this.deleted.has(uid);
  }

  /** Resolves once the first list has filled the cache. */
  waitForSync(): Promise<void> {
    return this.synced;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.rewatchTimer);
    this.abort?.abort();
    this.wakeLoop?.();
    await this.loop;
  }

  /** Drops the current watch connection (as a network failure would); the informer lists and watches again. */
  dropConnection(): void {
    this.abort?.abort();
  }

  private emit(type: WatchEventType, object: T, ownWrite = false, previous?: T): void {
    for (const l of this.listeners) {
      try {
        l(type, object, ownWrite, previous);
      } catch (error) {
        this.options.onError?.(error);
      }
    }
  }

  private store(object: T): T {
    if (object.metadata?.managedFields) delete object.metadata.managedFields;
    const kept = this.options.transform ? this.options.transform(object) : object;
    const key = keyOf(kept);
    // Every index key first: an index function that throws leaves the cache as it was.
    const under = Object.entries(this.options.indexers ?? {}).map(
      ([name, keysOf]) => [name, keysOf(kept)] as [string, readonly string[]],
    );
    this.unindex(key);
    this.cache.set(key, kept);
    for (const [name, indexKeys] of under) {
      const entries = this.indexes.get(name)!;
      for (const indexKey of indexKeys) {
        const objects = entries.get(indexKey) ?? new Map<string, T>();
        objects.set(key, kept);
        entries.set(indexKey, objects);
      }
    }
    if (under.length > 0) this.indexedUnder.set(key, under);
    return kept;
  }

  /** Whether the watch event of `key` at `version` brings a write this process observed; forgets it and older ones. */
  private takeWritten(key: string, version: string | undefined): boolean {
    const versions = this.written.get(key);
    if (!versions || !version) return false;
    const later = versions.filter((v) => compareVersions(v, version) > 0);
    if (later.length > 0) this.written.set(key, later);
    else this.written.delete(key);
    return versions.includes(version);
  }

  private unindex(key: string): void {
    for (const [name, indexKeys] of this.indexedUnder.get(key) ?? []) {
      const entries = this.indexes.get(name)!;
      for (const indexKey of indexKeys) {
        const objects = entries.get(indexKey);
        objects?.delete(key);
        if (objects?.size === 0) entries.delete(indexKey);
      }
    }
    this.indexedUnder.delete(key);
  }

  /** Drops a deleted object and keeps its tombstone a while (TOMBSTONE_MS). */
  private remove(object: T): void {
    const key = keyOf(object);
    this.unindex(key);
    this.cache.delete(key);
    this.written.delete(key);
    const uid = object.metadata?.uid;
    if (uid) {
      const now = Date.now();
      this.deleted.delete(uid);
      this.deleted.set(uid, now);
      for (const [old, at] of this.deleted) {
        if (now - at < TOMBSTONE_MS) break;
        this.deleted.delete(old);
      }
    }
    this.emit('DELETED', object);
  }

  private async listOnce(): Promise<string> {
    const body = (await this.objects.list(
      this.options.apiVersion,
      this.options.kind,
      this.options.namespace,
      undefined,
      undefined,
      undefined,
      this.options.fieldSelector,
      this.options.labelSelector,
    )) as unknown as { metadata?: { resourceVersion?: string }; items?: T[] };
    const listed = body.metadata?.resourceVersion;
    const seen = new Set<string>();
    for (const item of body.items ?? []) {
      const key = keyOf(item);
      seen.add(key);
      const before = this.cache.get(key);
      // Unchanged, or a write's answer (observe) newer than the list: keep what the cache has.
      if (before && compareVersions(before.metadata?.resourceVersion, item.metadata?.resourceVersion) >= 0) continue;
      this.emit(before ? 'MODIFIED' : 'ADDED', this.store(item), false, before);
    }
    for (const [key, item] of this.cache) {
      // An object written after the list was taken is not missing from it.
      if (!seen.has(key) && !(compareVersions(item.metadata?.resourceVersion, listed) > 0)) this.remove(item);
    }
    if (!this.isSynced) {
      this.isSynced = true;
      this.markSynced();
    }
    return body.metadata?.resourceVersion ?? '';
  }

  private async run(): Promise<void> {
    let resourceVersion: string | undefined;
    while (!this.stopped) {
      try {
        resourceVersion ??= await this.listOnce();
        this.backoffMs = 0;
        // Resolves true when the watch may resume from the last resourceVersion (renewed on time or
        // closed by the server), false when it was dropped and missed events must be listed again.
        const resumable = await new Promise<boolean>((resolve, reject) => {
          let renewing = false;
          this.wakeLoop = () => resolve(false);
          watch(
            this.kc,
            this.options.path,
            {
              resourceVersion,
              allowWatchBookmarks: true,
              ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
              ...(this.options.fieldSelector ? { fieldSelector: this.options.fieldSelector } : {}),
            },
            (phase: string, object: T) => {
              if (phase === 'ERROR') {
                // Typically 410 Gone: history compacted past our resourceVersion.
                const reason = (object as { reason?: string })?.reason ?? 'error';
                reject(new Error(`watch ${this.options.path}: ${reason}`));
                return;
              }
              const rv = object?.metadata?.resourceVersion;
              if (rv) resourceVersion = rv;
              if (phase === 'BOOKMARK') return;
              if (phase === 'DELETED') {
                this.remove(object);
              } else {
                // A write's answer passed to observe() can be newer than this event: keep it.
                const key = keyOf(object);
                const cached = this.cache.get(key);
                const newer = cached && compareVersions(cached.metadata?.resourceVersion, rv) > 0;
                const ownWrite = this.takeWritten(key, rv);
                if (newer) this.emit(phase as WatchEventType, cached, ownWrite);
                else this.emit(phase as WatchEventType, this.store(object), ownWrite, cached);
              }
            },
            (error: unknown) => {
              if (renewing || !error) resolve(true);
              else if (this.stopped || isAbort(error)) resolve(false);
              else reject(error);
            },
          ).then((controller) => {
            this.abort = controller;
            if (this.stopped) {
              controller.abort();
              return;
            }
            clearTimeout(this.rewatchTimer);
            this.rewatchTimer = setTimeout(() => {
              renewing = true;
              controller.abort();
            }, this.options.rewatchIntervalMs);
          }, reject);
        });
        if (!resumable) resourceVersion = undefined;
      } catch (error) {
        resourceVersion = undefined;
        if (this.stopped) return;
        this.options.onError?.(error);
        this.backoffMs = Math.min(this.options.maxBackoffMs ?? 10_000, Math.max(200, this.backoffMs * 2));
        await new Promise<void>((resolve) => {
          this.wakeLoop = resolve;
          setTimeout(resolve, this.backoffMs).unref();
        });
      } finally {
        clearTimeout(this.rewatchTimer);
      }
    }
  }
}

/** Write answers remembered per object until their watch events come (observe, takeWritten). */
const MAX_WRITES_AWAITED = 4;

/** How long the uid of a deleted object is remembered, so a late write's answer cannot revive it. */
const TOMBSTONE_MS = 5 * 60_000;

function keyOf(o: Obj): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * Orders two resourceVersions: they are opaque, but etcd's are integers. Anything else compares as
 * NaN, so neither side wins: observe() then stores the write's answer and a watch event replaces it.
 */
function compareVersions(a: string | undefined, b: string | undefined): number {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return Number.NaN;
  const d = BigInt(a) - BigInt(b);
  return d > 0n ? 1 : d < 0n ? -1 : 0;
}

function isAbort(error: unknown): boolean {
  return (error as { name?: string })?.name === 'AbortError' || (error as { type?: string })?.type === 'aborted';
}

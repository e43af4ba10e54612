import * as k8s from '@kubernetes/client-node';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type Listener<T> = (type: WatchEventType, object: T) => void;

export interface WatchSourceOptions {
  /** Collection path, e.g. /apis/apps/v1/namespaces/ns/deployments. */
  path: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  labelSelector?: string;
  /** Full relist this often: watches can stall silently, and a relist notices what was missed. */
  resyncIntervalMs: number;
  maxBackoffMs?: number;
  onError?: (error: unknown) => void;
}

type Obj = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };

function keyOf(o: Obj): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * List + watch of one collection, the operator's informer: a cache of the objects, an event for each
 * change, restarts with backoff on any error (not only 410), and a full relist every resync interval
 * that also reports objects deleted while the watch was down. Events are triggers only; reconcilers
 * read the API server for the state they act on.
 */
export class WatchSource<T extends Obj = Obj> {
  private readonly cache = new Map<string, T>();
  private readonly listeners: Listener<T>[] = [];
  private stopped = true;
  private abort?: AbortController;
  private resyncTimer?: NodeJS.Timeout;
  private backoffMs = 0;
  private loop?: Promise<void>;
  private wakeLoop?: () => void;
  private synced = false;
  private readonly objects: k8s.KubernetesObjectApi;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly options: WatchSourceOptions,
  ) {
    this.objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  }

  on(listener: Listener<T>): this {
    this.listeners.push(listener);
    return this;
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.resyncTimer);
    this.abort?.abort();
    this.wakeLoop?.();
    await this.loop;
  }

  /** Drops the current watch connection (as a network failure would); the source relists and rewatches. */
  dropConnection(): void {
    this.abort?.abort();
  }

  private emit(type: WatchEventType, object: T): void {
    for (const l of this.listeners) {
      try {
        l(type, object);
      } catch (error) {
        this.options.onError?.(error);
      }
    }
  }

  private async listOnce(): Promise<string> {
    const body = (await this.objects.list(
      this.options.apiVersion,
      this.options.kind,
      this.options.namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      this.options.labelSelector,
    )) as unknown as { metadata?: { resourceVersion?: string }; items?: T[] };
    const seen = new Set<string>();
    for (const item of body.items ?? []) {
      const key = keyOf(item);
      seen.add(key);
      const before = this.cache.get(key);
      this.cache.set(key, item);
      this.emit(before ? 'MODIFIED' : 'ADDED', item);
    }
    for (const [key, item] of this.cache) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.emit('DELETED', item);
      }
    }
    this.synced = true;
    return body.metadata?.resourceVersion ?? '';
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        let resourceVersion = await this.listOnce();
        this.backoffMs = 0;
        await new Promise<void>((resolve, reject) => {
          this.wakeLoop = resolve;
          const watch = new k8s.Watch(this.kc);
          watch
            .watch(
              this.options.path,
              {
                resourceVersion,
                allowWatchBookmarks: true,
                ...(this.options.labelSelector ? { labelSelector: this.options.labelSelector } : {}),
              },
              (phase: string, object: T) => {
                const rv = object?.metadata?.resourceVersion;
                if (rv) resourceVersion = rv;
                if (phase === 'BOOKMARK') return;
                if (phase === 'ERROR') {
                  reject(new Error(`watch ${this.options.path}: ${JSON.stringify(object)}`));
                  return;
                }
                const key = keyOf(object);
                if (phase === 'DELETED') this.cache.delete(key);
                else this.cache.set(key, object);
                this.emit(phase as WatchEventType, object);
              },
              (error: unknown) => (error && !this.stopped && !isAbort(error) ? reject(error) : resolve()),
            )
            .then((controller) => {
              this.abort = controller;
              if (this.stopped) controller.abort();
              clearTimeout(this.resyncTimer);
              this.resyncTimer = setTimeout(() => controller.abort(), this.options.resyncIntervalMs);
            }, reject);
        });
      } catch (error) {
        if (this.stopped) return;
        this.options.onError?.(error);
        this.backoffMs = Math.min(this.options.maxBackoffMs ?? 10_000, Math.max(200, this.backoffMs * 2));
        await new Promise<void>((resolve) => {
          this.wakeLoop = resolve;
          setTimeout(resolve, this.backoffMs).unref();
        });
      } finally {
        clearTimeout(this.resyncTimer);
      }
    }
  }
}

function isAbort(error: unknown): boolean {
  return (error as { name?: string })?.name === 'AbortError' || (error as { type?: string })?.type === 'aborted';
}

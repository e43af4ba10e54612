import type * as k8s from '@kubernetes/client-node';
import type { IndexFunc } from '../../src/kube/informer.js';
import { labelIndexers, sessionIndexers } from '../../src/operator/runtime/cache.js';
import type { Session } from '../../src/model/session.js';

/** A cache over a list of objects, with the indexes the operator's informer of them has (runtime/cache.ts). */
export function indexedCache<T extends { metadata?: { name?: string } }>(
  objects: () => readonly T[],
  indexers: Record<string, IndexFunc<T>>,
) {
  const byIndex = (index: string, key: string): T[] => {
    const keysOf = indexers[index];
    if (!keysOf) throw new Error(`no index ${index}`);
    return objects().filter((o) => keysOf(o).includes(key));
  };
  return {
    get: (name: string): T | undefined => objects().find((o) => o.metadata?.name === name),
    list: (): T[] => [...objects()],
    byIndex,
    countByIndex: (index: string, key: string): number => byIndex(index, key).length,
  };
}

export const podsCache = (pods: () => readonly k8s.V1Pod[]) => indexedCache(pods, labelIndexers);
export const sessionsCache = (sessions: () => readonly Session[]) => indexedCache(sessions, sessionIndexers);

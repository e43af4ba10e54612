import { isConflict, isNotFound } from '../../kube/client.js';
import { sameStatus } from './objects.js';

/** What the end-of-pass status write came to. */
export type StatusWrite<T> =
  | { kind: 'written'; object: T }
  | { kind: 'unchanged' }
  /** The object is gone: its deletion's watch event ends its passes. */
  | { kind: 'gone' }
  /** The object changed since it was read (only with a resourceVersion): the change that won brings a new pass. */
  | { kind: 'conflict' };

/** The status subresource of one kind, and the cache its answers go into. */
export interface StatusTarget<T, S> {
  api: { patchStatus(name: string, status: S, preconditions?: { resourceVersion?: string }): Promise<T> };
  cache: { observe(object: T): void };
}

/**
 * The one status write of a pass: skipped when `next` says what `previous` says; else a merge patch
 * of the status subresource, with `resourceVersion` as its precondition when given, its answer put in
 * the cache at once. A 404 and a 409 are results, not errors; any other error is the caller's.
 */
export async function writeStatusOnce<T, S>(
  target: StatusTarget<T, S>,
  name: string,
  change: { previous: S | undefined; next: S; resourceVersion?: string },
): Promise<StatusWrite<T>> {
  if (sameStatus(change.previous, change.next)) return { kind: 'unchanged' };
  try {
    const preconditions = change.resourceVersion === undefined ? {} : { resourceVersion: change.resourceVersion };
    const object = await target.api.patchStatus(name, change.next, preconditions);
    target.cache.observe(object);
    return { kind: 'written', object };
  } catch (error) {
    if (isNotFound(error)) return { kind: 'gone' };
    if (isConflict(error)) return { kind: 'conflict' };
    throw error;
  }
}

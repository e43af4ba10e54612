import type * as k8s from '@kubernetes/client-node';

/**
 * The value of `metadata.managedFields` that has an update (a PUT or a patch) clear the API server's
 * record of who owns which field of the object (one empty entry: an empty list leaves it as it is).
 * While an object has a record, the API server converts the whole object and brings the record up to
 * date on every write, the status subresource's included: a Session's write cost it about 6.5 ms of
 * CPU with its record and 4 ms without, a warm instance's claim 8.5 and 4.3. Nobody reads it, and
 * nothing starts it again: later writes are updates, and only a create or an apply records. Cleared
 * only on objects IDE Cloud alone writes: an object someone applies needs the record to know which
 * fields are theirs.
 */
export const CLEARED_FIELD_RECORD: k8s.V1ManagedFieldsEntry[] = [{}];

export function clearFieldRecord(metadata: k8s.V1ObjectMeta): void {
  metadata.managedFields = structuredClone(CLEARED_FIELD_RECORD);
}

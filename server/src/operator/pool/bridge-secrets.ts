import type * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.js';

/**
 * The warm instances' bridge Secrets as this operator wrote them, so that a launch's injection takes
 * the tokens without a read of the API server. The leading operator is their only writer and the
 * chart grants it no watch on Secrets, so what it wrote is what the Secret holds; one it did not write
 * here (an earlier leader's, a create that found it there) is read once. Made anew for each time a
 * process leads: a Secret another leader rotated meanwhile is never taken from an old copy.
 */
export class BridgeSecrets {
  private readonly known = new Map<string, Record<string, string>>();
  /** Writes and removals so far: a read that a write overtook keeps its answer out of `known`. */
  private changes = 0;

  constructor(
    private readonly core: Pick<k8s.CoreV1Api, 'readNamespacedSecret'>,
    private readonly namespace: string,
  ) {}

  /** The Secret as written by this process (after its write was answered). */
  written(secret: k8s.V1Secret): void {
    const name = secret.metadata?.name;
    if (!name) return;
    this.changes++;
    this.known.set(name, decodedData(secret));
  }

  /** The Secret is gone, or its content is not known any more (a write whose outcome is unknown). */
  forget(name: string): void {
    this.changes++;
    this.known.delete(name);
  }

  /** Every key of the Secret, decoded; undefined when it is missing. */
  async read(name: string): Promise<Record<string, string> | undefined> {
    const known = this.known.get(name);
    if (known) return known;
    const before = this.changes;
    const read = await readBridgeSecret(this.core, this.namespace, name);
    if (read && before === this.changes) this.known.set(name, read);
    return read;
  }
}

/** Every key of one of the operator's bridge Secrets, decoded; undefined when the Secret is missing. */
export async function readBridgeSecret(
  core: Pick<k8s.CoreV1Api, 'readNamespacedSecret'>,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({ name, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  return decodedData(secret);
}

function decodedData(secret: k8s.V1Secret): Record<string, string> {
  const entries = Object.entries(secret.data ?? {}).filter(([, v]) => !!v);
  return Object.fromEntries(entries.map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

import * as k8s from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../model/api-group.js';

/** Loads the kubeconfig: an explicit file, then $KUBECONFIG, then the in-cluster service account. */
export function loadKubeConfig(file?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}

const CONFIGURED = Symbol('ide-cloud.configured');
type Hooks = {
  createAgent(cluster: unknown, options: Record<string, unknown>): unknown;
  applySecurityAuthentication(context: { setHeaderParam(key: string, value: string): void }): Promise<void>;
  applyToFetchOptions(options: unknown): Promise<{ headers: { set(key: string, value: string): void } }>;
};

/**
 * Makes a KubeConfig fit for a long-running client, once (later calls change nothing):
 * - one keep-alive agent: client-node 1.x builds a new https.Agent for every request, so every API
 *   call would pay a TCP and TLS handshake. The agent is made from the first request's options (the
 *   cluster's CA and client certificate; bearer tokens travel in headers, so a rotated token is
 *   still read per request);
 * - a User-Agent naming the component, as client-go's clients do, so the API server's audit log and
 *   request metrics tell IDE Cloud's requests from everyone else's.
 */
export function configureClient(kc: k8s.KubeConfig, userAgent: string): k8s.KubeConfig {
  const target = kc as unknown as Hooks & { [CONFIGURED]?: boolean };
  if (target[CONFIGURED]) return kc;
  target[CONFIGURED] = true;
  const createAgent = target.createAgent.bind(kc);
  let agent: unknown;
  // Idle sockets beyond a few are closed: a burst does not leave hundreds open.
  target.createAgent = (cluster, options) =>
    (agent ??= createAgent(cluster, { ...options, keepAlive: true, maxFreeSockets: 16 }));
  const authenticate = target.applySecurityAuthentication.bind(kc);
  target.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    context.setHeaderParam('User-Agent', userAgent);
  };
  const fetchOptions = target.applyToFetchOptions.bind(kc);
  target.applyToFetchOptions = async (options) => {
    const result = await fetchOptions(options);
    result.headers.set('User-Agent', userAgent);
    return result;
  };
  return kc;
}

/** Server-side apply of a whole object under IDE Cloud's one field manager. */
export async function applyObject<T extends k8s.KubernetesObject>(
  objects: k8s.KubernetesObjectApi,
  object: T,
  options: { force?: boolean; dryRun?: boolean } = {},
): Promise<T> {
  return objects.patch(
    object,
    undefined,
    options.dryRun ? 'All' : undefined,
    FIELD_MANAGER,
    options.force ?? true,
    k8s.PatchStrategy.ServerSideApply,
  );
}

const metadataOnly = k8s.setHeaderOptions('Accept', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');

/**
 * The metadata of a Secret or ConfigMap (undefined when there is none), read as PartialObjectMetadata:
 * a secret's data never reaches the reader. For the check of a session's env sources.
 */
export async function readMetadata(
  core: Pick<k8s.CoreV1Api, 'readNamespacedSecret' | 'readNamespacedConfigMap'>,
  namespace: string,
  kind: 'secret' | 'config map',
  name: string,
): Promise<{ labels?: Record<string, string> } | undefined> {
  try {
    const read =
      kind === 'secret'
        ? await core.readNamespacedSecret({ name, namespace }, metadataOnly)
        : await core.readNamespacedConfigMap({ name, namespace }, metadataOnly);
    return read.metadata ?? {};
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** HTTP status of a failed Kubernetes API call, or undefined for errors that are not API answers. */
export function apiStatus(error: unknown): number | undefined {
  if (error instanceof k8s.ApiException) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

export function isNotFound(error: unknown): boolean {
  return apiStatus(error) === 404;
}

export function isConflict(error: unknown): boolean {
  return apiStatus(error) === 409;
}

/**
 * What may be logged about any failure: a Kubernetes answer's status and reason, another error's name
 * and code; never a message, which can quote the object sent or the request's values.
 */
export function describeFailure(error: unknown): Record<string, unknown> {
  if (error instanceof k8s.ApiException) return describeKubernetesError(error);
  if (error instanceof Error) return { errorName: error.name, code: (error as { code?: unknown }).code };
  return { errorType: typeof error };
}

/**
 * What may be logged about a failed Kubernetes API call: its status and reason, never its message or
 * body, which can quote the object sent (env values, tokens).
 */
export function describeKubernetesError(error: k8s.ApiException<unknown>): Record<string, unknown> {
  let body: unknown = error.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  return { kubernetesStatus: error.code, kubernetesReason: (body as { reason?: unknown } | undefined)?.reason };
}

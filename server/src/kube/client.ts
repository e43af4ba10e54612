import * as k8s from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../model/api-group.js';

/** Loads the kubeconfig: an explicit file, then $KUBECONFIG, then the in-cluster service account. */
export function loadKubeConfig(file?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return reuseConnections(kc);
}

const SHARED = Symbol('ide-cloud.sharedAgent');
type AgentFactory = { createAgent(cluster: unknown, options: Record<string, unknown>): unknown };

/**
 * client-node 1.x builds a new https.Agent for every request, so every API call pays a TCP and TLS
 * handshake. This gives the KubeConfig one keep-alive agent, made from the first request's options
 * (the cluster's CA and client certificate; bearer tokens travel in headers, so a rotated token is
 * still read per request). Idempotent.
 */
export function reuseConnections(kc: k8s.KubeConfig): k8s.KubeConfig {
  const target = kc as unknown as AgentFactory & { [SHARED]?: boolean };
  if (target[SHARED]) return kc;
  target[SHARED] = true;
  const create = target.createAgent.bind(kc);
  let agent: unknown;
  target.createAgent = (cluster, options) => (agent ??= create(cluster, { ...options, keepAlive: true }));
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

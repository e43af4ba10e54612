// The service's boundary to the API server: every Kubernetes call the service makes goes through here,
// and a failed one is mapped once to the service's ApiError.
import * as k8s from '@kubernetes/client-node';
import { apiStatus, isApiUnavailable, readMetadata } from '../kube/client.js';
import { ErrorCode } from '../model/error-codes.js';
import { type EnvSourceKind } from '../model/session-env.js';
import {
  ideCloudResources,
  type CustomResourceClient,
  type JsonPatchOperation,
  type Kind,
  type MergePatchBody,
  type ResourceOf,
} from '../kube/resources.js';
import { ApiError, ApiServerUnavailable, Conflict } from './errors.js';
import type { ObjectReader } from './cache.js';
import type { PodMetrics } from './views.js';

/** What a failed call was doing, and what a 404 of its object answers (unset: a plain 404). */
interface Failure {
  action: string;
  notFound?: () => ApiError;
}

/**
 * The one mapping of a failed Kubernetes call to the service's ApiError:
 *
 * | API server | answer                                                                         |
 * |------------|--------------------------------------------------------------------------------|
 * | 404        | the object's own code: Session 474, Workspace 471, AppDefinition 473, config    |
 * |            | store 580, metrics 521; a create (no object yet): 404                          |
 * | 409        | `Conflict` (409), which the callers that expect a race recognise               |
 * | 429        | 429 with `Retry-After`                                                         |
 * | 400 / 422  | 400                                                                            |
 * | other      | 500                                                                            |
 * | no answer  | `ApiServerUnavailable`: 503 with `Retry-After`, when the call's deadline passed |
 * |            | (configureClient) or the API server could not be reached                       |
 *
 * Only the status code is read: the API server's message may quote the submitted object (env
 * values, the session secret), so no reason ever carries it.
 */
function mapped(error: unknown, { action, notFound }: Failure): ApiError {
  if (error instanceof ApiError) return error;
  const unavailable = isApiUnavailable(error);
  if (unavailable) return new ApiServerUnavailable(unavailable);
  const status = apiStatus(error);
  if (status !== undefined) {
    if (status === 422 || status === 400) return ApiError.badRequest(`${action} was refused by the API server`);
    if (status === 404) return notFound ? notFound() : new ApiError(ErrorCode.notFound, `${action} not found`);
    if (status === 409) return new Conflict(action);
    if (status === 429)
      return new ApiError(429, 'the API server is busy; retry later', undefined, { 'Retry-After': '1' });
  }
  return new ApiError(ErrorCode.internal, `${action} failed`);
}

async function call<T>(failure: Failure, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw mapped(error, failure);
  }
}

/** How each kind is named in reasons, and what a 404 of a named object of it answers. */
const KINDS: Record<Kind, { noun: string; unknown: () => ApiError }> = {
  session: { noun: 'the session', unknown: () => new ApiError(ErrorCode.unknownSession, 'unknown session') },
  workspace: { noun: 'the workspace', unknown: () => new ApiError(ErrorCode.unknownWorkspace, 'unknown workspace') },
  appDefinition: {
    noun: 'the app definition',
    unknown: () => new ApiError(ErrorCode.unknownAppDefinition, 'unknown app definition'),
  },
};

/**
 * One kind of IDE Cloud resource as the service uses it: `kube/resources.ts`'s client with its
 * errors mapped (above). `action` names what the caller does, for the reason of a 5xx or 400.
 */
export class ServiceResource<K extends Kind> implements ObjectReader<ResourceOf[K]> {
  private readonly noun: string;
  private readonly unknown: () => ApiError;

  constructor(
    private readonly client: CustomResourceClient<K>,
    kind: K,
  ) {
    this.noun = KINDS[kind].noun;
    this.unknown = KINDS[kind].unknown;
  }

  get path(): string {
    return this.client.path;
  }

  get namespace(): string {
    return this.client.namespace;
  }

  get kind(): string {
    return this.client.kind;
  }

  /** The object, or undefined when it does not exist (one GET). */
  find(name: string, action = `reading ${this.noun}`): Promise<ResourceOf[K] | undefined> {
    return call({ action }, () => this.client.find(name));
  }

  /** Creates the object; a 409 (the name is taken) is a `Conflict`. */
  create(
    object: Parameters<CustomResourceClient<K>['create']>[0],
    action = `creating ${this.noun}`,
  ): Promise<ResourceOf[K]> {
    return call({ action }, () => this.client.create(object));
  }

  /** Deletes the object; true when it was there, false when it was already gone. */
  delete(name: string, action = `deleting ${this.noun}`): Promise<boolean> {
    return call({ action }, () => this.client.delete(name));
  }

  /**
   * Deletes the object only as it was read: its uid and resourceVersion are the preconditions, so
   * one changed since (another object of the name, or a status written) is a `Conflict`, not deleted.
   */
  deleteAsRead(object: ResourceOf[K], action = `deleting ${this.noun}`): Promise<boolean> {
    const { name, uid, resourceVersion } = object.metadata;
    return call({ action }, () => this.client.delete(name, 'Background', { uid, resourceVersion }));
  }

  /** RFC 7386 merge patch of the object (`null` removes a key); 404 answers the kind's unknown code. */
  mergePatch(
    name: string,
    body: MergePatchBody,
    action = `updating ${this.noun}`,
    options: { ahead?: boolean } = {},
  ): Promise<ResourceOf[K]> {
    return call({ action, notFound: this.unknown }, () => this.client.mergePatch(name, body, options));
  }

  /** RFC 6902 JSON patch of the object; 404 answers the kind's unknown code. */
  jsonPatch(name: string, operations: JsonPatchOperation[], action = `updating ${this.noun}`): Promise<ResourceOf[K]> {
    return call({ action, notFound: this.unknown }, () => this.client.jsonPatch(name, operations));
  }

  /** Merge-patches status; 404 answers the kind's unknown code. */
  patchStatus(
    name: string,
    status: NonNullable<ResourceOf[K]['status']>,
    action = `updating the status of ${this.noun}`,
  ): Promise<ResourceOf[K]> {
    return call({ action, notFound: this.unknown }, () => this.client.patchStatus(name, status));
  }
}

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** Everything the service reads and writes in its namespace, errors mapped at this boundary. */
export interface ServiceResources {
  readonly namespace: string;
  readonly appDefinitions: ServiceResource<'appDefinition'>;
  readonly workspaces: ServiceResource<'workspace'>;
  readonly sessions: ServiceResource<'session'>;
  /** Merges keys into a session's config store (a ConfigMap); 580 when there is none. */
  mergeConfigStore(name: string, data: Record<string, string | null>): Promise<void>;
  /** The metrics API's pod metrics for a label selector; 521 when the metrics API is not there. */
  podMetrics(labelSelector: string): Promise<PodMetrics[]>;
  /**
   * The metadata of a Secret or ConfigMap a launch names for its environment, undefined when there is
   * none. Read as PartialObjectMetadata: a secret's data never reaches the service.
   */
  envSourceMetadata(kind: EnvSourceKind, name: string): Promise<{ labels?: Record<string, string> } | undefined>;
}

export function serviceResources(kc: k8s.KubeConfig, namespace: string): ServiceResources {
  const clients = ideCloudResources(kc, namespace);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const metricsUnavailable = () => new ApiError(ErrorCode.metricsUnavailable, 'the metrics API is not available');
  return {
    namespace,
    appDefinitions: new ServiceResource(clients.appDefinitions, 'appDefinition'),
    workspaces: new ServiceResource(clients.workspaces, 'workspace'),
    sessions: new ServiceResource(clients.sessions, 'session'),
    async mergeConfigStore(name, data) {
      await call(
        {
          action: 'writing the config store',
          notFound: () => new ApiError(ErrorCode.noConfigStore, 'the session has no config store'),
        },
        () => core.patchNamespacedConfigMap({ name, namespace, body: { data } }, mergePatch),
      );
    },
    envSourceMetadata(kind, name) {
      return call({ action: `reading the ${kind} named for the environment` }, () =>
        readMetadata(core, namespace, kind, name),
      );
    },
    async podMetrics(labelSelector) {
      try {
        const list = (await custom.listNamespacedCustomObject({
          group: 'metrics.k8s.io',
          version: 'v1beta1',
          namespace,
          plural: 'pods',
          labelSelector,
        })) as { items?: PodMetrics[] };
        return list.items ?? [];
      } catch (error) {
        // The metrics API answers 503 while its backend is not up.
        if (apiStatus(error) === 503) throw metricsUnavailable();
        throw mapped(error, { action: 'reading session metrics', notFound: metricsUnavailable });
      }
    },
  };
}

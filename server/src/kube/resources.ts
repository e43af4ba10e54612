import * as k8s from '@kubernetes/client-node';
import { API_VERSION, FIELD_MANAGER, GROUP, VERSION } from '../model/api-group.js';
import type { AppDefinition, AppDefinitionSpecInput } from '../model/app-definition.js';
import { RESOURCE_KINDS } from '../model/crd.js';
import type { Session, SessionSpec } from '../model/session.js';
import type { Workspace, WorkspaceSpec } from '../model/workspace.js';
import { callsAhead } from './client.js';
import { CLEARED_FIELD_RECORD } from './field-record.js';

export type Kind = keyof typeof RESOURCE_KINDS;
export type ResourceOf = { appDefinition: AppDefinition; workspace: Workspace; session: Session };
/** What a writer gives: fields with schema defaults may be left out (the API server fills them). */
export type SpecInputOf = { appDefinition: AppDefinitionSpecInput; workspace: WorkspaceSpec; session: SessionSpec };

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const applyPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);
const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);

/** An RFC 7386 merge patch of an object. */
export type MergePatchBody = { metadata?: object; [field: string]: unknown };

/** One RFC 6902 operation. */
export type JsonPatchOperation =
  { op: 'add' | 'replace' | 'test'; path: string; value: unknown } | { op: 'remove'; path: string };

/**
 * The kinds whose metadata writes also clear the API server's record of field ownership
 * (field-record.ts): Sessions, which only IDE Cloud writes (the service creates them; the service and
 * the operator update them), and whose status writes then cost the API server less too. App
 * definitions and workspaces may be applied by their admins, and keep theirs.
 */
const CLEARS_FIELD_RECORD: ReadonlySet<Kind> = new Set<Kind>(['session']);

/**
 * Typed access to one kind of IDE Cloud custom resource in one namespace. The one place that knows
 * the group, version and plural, so callers deal in AppDefinition/Workspace/Session objects.
 */
export class CustomResourceClient<K extends Kind> {
  private readonly api: k8s.CustomObjectsApi;
  readonly plural: string;
  readonly kind: string;
  private readonly clearsFieldRecord: boolean;

  constructor(
    kc: k8s.KubeConfig,
    readonly namespace: string,
    kind: K,
  ) {
    this.api = kc.makeApiClient(k8s.CustomObjectsApi);
    this.clearsFieldRecord = CLEARS_FIELD_RECORD.has(kind);
    this.plural = RESOURCE_KINDS[kind].plural;
    this.kind = RESOURCE_KINDS[kind].kind;
  }

  /** The collection's path, for watches and informers. */
  get path(): string {
    return `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${this.plural}`;
  }

  private get base() {
    return { group: GROUP, version: VERSION, namespace: this.namespace, plural: this.plural };
  }

  async get(name: string): Promise<ResourceOf[K]> {
    return (await this.api.getNamespacedCustomObject({ ...this.base, name })) as ResourceOf[K];
  }

  /** The object, or undefined when it does not exist. */
  async find(name: string): Promise<ResourceOf[K] | undefined> {
    try {
      return await this.get(name);
    } catch (error) {
      if (error instanceof k8s.ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  async list(labelSelector?: string): Promise<ResourceOf[K][]> {
    const list = (await this.api.listNamespacedCustomObject({ ...this.base, labelSelector })) as {
      items: ResourceOf[K][];
    };
    return list.items;
  }

  async create(object: { metadata: k8s.V1ObjectMeta; spec: SpecInputOf[K] }): Promise<ResourceOf[K]> {
    return (await this.api.createNamespacedCustomObject({
      ...this.base,
      body: {
        apiVersion: API_VERSION,
        kind: this.kind,
        ...object,
        metadata: { ...object.metadata, namespace: this.namespace },
      },
    })) as ResourceOf[K];
  }

  /** Server-side apply of the fields given, under IDE Cloud's field manager. */
  async apply(
    name: string,
    fields: { metadata?: k8s.V1ObjectMeta; spec?: Partial<SpecInputOf[K]> },
  ): Promise<ResourceOf[K]> {
    return (await this.api.patchNamespacedCustomObject(
      {
        ...this.base,
        name,
        fieldManager: FIELD_MANAGER,
        force: true,
        body: {
          apiVersion: API_VERSION,
          kind: this.kind,
          ...fields,
          metadata: { ...fields.metadata, name, namespace: this.namespace },
        },
      },
      applyPatch,
    )) as ResourceOf[K];
  }

  /** `ahead`: the patch waits for its slot before the other calls (`callsAhead`). */
  async mergePatch(name: string, body: MergePatchBody, { ahead = false } = {}): Promise<ResourceOf[K]> {
    const written = this.clearsFieldRecord
      ? { ...body, metadata: { ...body.metadata, managedFields: CLEARED_FIELD_RECORD } }
      : body;
    return (await this.api.patchNamespacedCustomObject(
      { ...this.base, name, body: written },
      ahead ? callsAhead(mergePatch) : mergePatch,
    )) as ResourceOf[K];
  }

  /**
   * RFC 6902 JSON patch: the way to set a field to `null` (a merge patch would remove it, and the
   * schema default would come back).
   */
  async jsonPatch(name: string, operations: JsonPatchOperation[]): Promise<ResourceOf[K]> {
    return (await this.api.patchNamespacedCustomObject(
      { ...this.base, name, body: operations },
      jsonPatch,
    )) as ResourceOf[K];
  }

  /**
   * Merge-patches status through the status subresource. Preconditions: the object of that `uid` (not
   * a later one of the same name), at that `resourceVersion`; the API server refuses the write otherwise.
   */
  async patchStatus(
    name: string,
    status: NonNullable<ResourceOf[K]['status']>,
    preconditions: { uid?: string; resourceVersion?: string } = {},
  ): Promise<ResourceOf[K]> {
    const metadata = Object.fromEntries(Object.entries(preconditions).filter(([, v]) => v !== undefined));
    const body = Object.keys(metadata).length > 0 ? { metadata, status } : { status };
    return (await this.api.patchNamespacedCustomObjectStatus(
      { ...this.base, name, body },
      mergePatch,
    )) as ResourceOf[K];
  }

  /**
   * Deletes the object; true when it was there, false when it was already gone. With `preconditions`
   * only the object as it was read (its uid, its resourceVersion) is deleted: any other answers 409.
   */
  async delete(
    name: string,
    propagationPolicy: 'Background' | 'Foreground' = 'Background',
    preconditions?: { uid?: string; resourceVersion?: string },
  ): Promise<boolean> {
    try {
      await this.api.deleteNamespacedCustomObject({
        ...this.base,
        name,
        propagationPolicy,
        ...(preconditions ? { body: { preconditions } } : {}),
      });
      return true;
    } catch (error) {
      if (error instanceof k8s.ApiException && error.code === 404) return false;
      throw error;
    }
  }
}

export interface IdeCloudResources {
  appDefinitions: CustomResourceClient<'appDefinition'>;
  workspaces: CustomResourceClient<'workspace'>;
  sessions: CustomResourceClient<'session'>;
}

export function ideCloudResources(kc: k8s.KubeConfig, namespace: string): IdeCloudResources {
  return {
    appDefinitions: new CustomResourceClient(kc, namespace, 'appDefinition'),
    workspaces: new CustomResourceClient(kc, namespace, 'workspace'),
    sessions: new CustomResourceClient(kc, namespace, 'session'),
  };
}

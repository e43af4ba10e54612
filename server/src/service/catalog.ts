import type { AppDefinition } from '../model/app-definition.js';
import { ErrorCode } from '../model/error-codes.js';
import { isDnsLabel } from '../model/names.js';
import type { AppDefinitionUpdateRequest } from '../model/requests.js';
import type { IdeCloudResources, JsonPatchOperation } from '../kube/resources.js';
import { ApiError, fromKubernetes } from './errors.js';

/** App definitions: what can be launched, and the admin's scaling knobs. */
export class AppDefinitionCatalog {
  constructor(private readonly resources: IdeCloudResources) {}

  async list(): Promise<AppDefinition[]> {
    try {
      const items = await this.resources.appDefinitions.list();
      return items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    } catch (error) {
      throw fromKubernetes(error, 'listing app definitions');
    }
  }

  /** The app definition, or 473 when there is none by that name. */
  async get(name: string): Promise<AppDefinition> {
    const unknown = new ApiError(ErrorCode.unknownAppDefinition, 'unknown app definition');
    if (!isDnsLabel(name)) throw unknown;
    let found: AppDefinition | undefined;
    try {
      found = await this.resources.appDefinitions.find(name);
    } catch (error) {
      throw fromKubernetes(error, 'reading the app definition');
    }
    if (!found || found.metadata.deletionTimestamp) throw unknown;
    return found;
  }

  /**
   * Applies a validated scaling update. The rule min <= max is checked against the stored value of
   * the field not given, and enforced once more by the API server (CRD validation) against races.
   */
  async updateScaling(name: string, update: AppDefinitionUpdateRequest): Promise<AppDefinition> {
    const current = await this.get(name);
    const min = update.minInstances ?? current.spec.minInstances ?? 0;
    const max = update.maxInstances !== undefined ? update.maxInstances : current.spec.maxInstances;
    if (max !== null && max !== undefined && min > max) {
      throw ApiError.badRequest('minInstances must be <= maxInstances', [
        { path: update.minInstances !== undefined ? 'minInstances' : 'maxInstances', message: `${min} > ${max}` },
      ]);
    }
    const operations: JsonPatchOperation[] = [];
    if (update.minInstances !== undefined) {
      operations.push({ op: 'add', path: '/spec/minInstances', value: update.minInstances });
    }
    if (update.maxInstances !== undefined) {
      operations.push({ op: 'add', path: '/spec/maxInstances', value: update.maxInstances });
    }
    try {
      return await this.resources.appDefinitions.jsonPatch(name, operations);
    } catch (error) {
      throw fromKubernetes(error, 'updating the app definition');
    }
  }
}

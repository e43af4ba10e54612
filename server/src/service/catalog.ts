import type { AppDefinition } from '../model/app-definition.js';
import { ErrorCode } from '../model/error-codes.js';
import { isDnsLabel } from '../model/names.js';
import type { AppDefinitionUpdateRequest } from '../model/requests.js';
import { countReservedInstances, type Session } from '../model/session.js';
import type { JsonPatchOperation } from '../kube/resources.js';
import type { CachedResource } from './cache.js';
import { ApiError } from './errors.js';
import type { ServiceResources } from './resources.js';

/**
 * App definitions: what can be launched, and the admin's scaling knobs. Reads come from the app
 * definition cache (a name it does not hold is looked up once); an admin update is reflected in it
 * before the answer.
 */
export class AppDefinitionCatalog {
  constructor(
    private readonly resources: ServiceResources,
    private readonly cache: CachedResource<AppDefinition>,
    private readonly sessions: Pick<CachedResource<Session>, 'list'>,
  ) {}

  /** The warm instances each app definition's active sessions hold, from the session cache. */
  reservedInstances(): Map<string, number> {
    return countReservedInstances(this.sessions.list());
  }

  list(): AppDefinition[] {
    return this.cache.list().sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }

  /** The app definition, or 473 when there is none by that name. */
  async get(name: string): Promise<AppDefinition> {
    // Made only when thrown: an error's stack costs more than the lookup.
    const unknown = () => new ApiError(ErrorCode.unknownAppDefinition, 'unknown app definition');
    if (!isDnsLabel(name)) throw unknown();
    const found = await this.cache.find(name);
    if (!found || found.metadata.deletionTimestamp) throw unknown();
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
    const updated = await this.resources.appDefinitions.jsonPatch(name, operations);
    this.cache.observe(updated);
    return updated;
  }
}

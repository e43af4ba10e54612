import { ErrorCode } from '../model/error-codes.js';
import { configStoreName, sessionPodSelector } from '../model/names.js';
import type { Performance, SessionItem } from '../model/requests.js';
import { neverServedWorkspace, type Session } from '../model/session.js';
import { LABELS } from '../model/api-group.js';
import { userLabelValue } from '../model/names.js';
import type { CachedResource } from './cache.js';
import { ApiError } from './errors.js';
import type { ServiceResources } from './resources.js';
import { toPerformance, toSessionItem } from './views.js';

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Running sessions: listing, stopping, activity, config store and performance. Reads come from the
 * session cache (a name it does not hold is looked up once); writes go to the API server and are
 * reflected in the cache before the answer, so a listing right after a stop does not show it as before.
 */
export class SessionService {
  constructor(
    private readonly resources: ServiceResources,
    private readonly cache: CachedResource<Session>,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The user's sessions (labelled with the user and naming them in spec), from the cache. */
  listOf(user: string): SessionItem[] {
    const label = userLabelValue(user);
    return this.cache
      .list()
      .filter((s) => s.metadata.labels?.[LABELS.user] === label && s.spec.user === user)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map(toSessionItem);
  }

  /** The session, or undefined; 474 for a name that cannot exist. */
  async find(name: string): Promise<Session | undefined> {
    if (name.length > 253 || !NAME.test(name)) throw new ApiError(ErrorCode.unknownSession, 'invalid session name');
    return this.cache.find(name);
  }

  async get(name: string): Promise<Session> {
    const session = await this.find(name);
    if (!session) throw new ApiError(ErrorCode.unknownSession, 'unknown session');
    return session;
  }

  /** Stops the user's session and answers it as last read; undefined when already gone. 403 for another user's. */
  async stop(user: string, name: string): Promise<Session | undefined> {
    let session = await this.find(name);
    if (!session) return undefined;
    if (session.spec.user !== user) throw new ApiError(ErrorCode.forbidden, 'the session belongs to another user');
    // Whether its workspace goes too must not rest on a status a watch event old (a URL just set).
    if (neverServedWorkspace(session)) session = (await this.resources.sessions.find(name)) ?? session;
    if (await this.resources.sessions.delete(name)) await this.cache.reflectsDeletion(name, session.metadata.uid);
    return session;
  }

  /** Records activity: status.lastActivity = now, through the status subresource. */
  async recordActivity(name: string): Promise<void> {
    const lastActivity = this.clock().toISOString();
    this.cache.observe(await this.resources.sessions.patchStatus(name, { lastActivity }, 'recording activity'));
  }

  /** Merges one key into the session's config store (a ConfigMap); 580 when the session has none. */
  async setConfig(session: Session, key: string, value: string | null): Promise<void> {
    await this.resources.mergeConfigStore(configStoreName(session.metadata.name), { [key]: value });
  }

  /**
   * CPU and memory of the IDE container (named after the app definition) from the metrics API
   * (metrics.k8s.io). 521 when the metrics API is not installed or has no sample for the session yet.
   */
  async performance(session: Session): Promise<Performance> {
    for (const pod of await this.resources.podMetrics(sessionPodSelector(session))) {
      const performance = toPerformance(pod, session.spec.appDefinition);
      if (performance) return performance;
    }
    throw new ApiError(ErrorCode.metricsUnavailable, 'no metrics for this session yet');
  }
}

import * as k8s from '@kubernetes/client-node';
import { ErrorCode } from '../model/error-codes.js';
import { configStoreName, sessionPodSelector } from '../model/names.js';
import type { Performance, SessionItem } from '../model/requests.js';
import type { Session } from '../model/session.js';
import { apiStatus, isNotFound } from '../kube/client.js';
import type { IdeCloudResources } from '../kube/resources.js';
import { LABELS } from '../model/api-group.js';
import { userLabelValue } from '../model/names.js';
import type { CachedResource } from './cache.js';
import { ApiError, fromKubernetes } from './errors.js';
import { toPerformance, toSessionItem, type PodMetrics } from './views.js';

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/**
 * Running sessions: listing, stopping, activity, config store and performance. Reads come from the
 * session cache (a name it does not hold is looked up once); writes go to the API server and are
 * reflected in the cache before the answer, so a listing right after a stop does not show it as before.
 */
export class SessionService {
  private readonly core: k8s.CoreV1Api;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(
    kc: k8s.KubeConfig,
    private readonly resources: IdeCloudResources,
    private readonly cache: CachedResource<Session>,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  private get namespace(): string {
    return this.resources.sessions.namespace;
  }

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
    try {
      return await this.cache.find(name);
    } catch (error) {
      throw fromKubernetes(error, 'reading the session');
    }
  }

  async get(name: string): Promise<Session> {
    const session = await this.find(name);
    if (!session) throw new ApiError(ErrorCode.unknownSession, 'unknown session');
    return session;
  }

  /** Stops the user's session; true also when it is already gone. 403 for another user's session. */
  async stop(user: string, name: string): Promise<boolean> {
    const session = await this.find(name);
    if (!session) return true;
    if (session.spec.user !== user) throw new ApiError(ErrorCode.forbidden, 'the session belongs to another user');
    let deleted: boolean;
    try {
      deleted = await this.resources.sessions.delete(name);
    } catch (error) {
      throw fromKubernetes(error, 'deleting the session');
    }
    if (deleted) await this.cache.reflectsDeletion(name, session.metadata.uid);
    return true;
  }

  /** Records activity: status.lastActivity = now, through the status subresource. */
  async recordActivity(name: string): Promise<void> {
    try {
      this.cache.observe(await this.resources.sessions.patchStatus(name, { lastActivity: this.clock().toISOString() }));
    } catch (error) {
      if (isNotFound(error)) throw new ApiError(ErrorCode.unknownSession, 'unknown session');
      throw fromKubernetes(error, 'recording activity');
    }
  }

  /** Merges one key into the session's config store (a ConfigMap); 580 when the session has none. */
  async setConfig(session: Session, key: string, value: string | null): Promise<void> {
    try {
      await this.core.patchNamespacedConfigMap(
        { name: configStoreName(session.metadata.name), namespace: this.namespace, body: { data: { [key]: value } } },
        mergePatch,
      );
    } catch (error) {
      if (isNotFound(error)) throw new ApiError(ErrorCode.noConfigStore, 'the session has no config store');
      throw fromKubernetes(error, 'writing the config store');
    }
  }

  /**
   * CPU and memory of the IDE container (named after the app definition) from the metrics API
   * (metrics.k8s.io). 521 when the metrics API is not installed or has no sample for the session yet.
   */
  async performance(session: Session): Promise<Performance> {
    const unavailable = (reason: string) => new ApiError(ErrorCode.metricsUnavailable, reason);
    const selector = sessionPodSelector(session);
    let list: { items?: PodMetrics[] };
    try {
      list = (await this.custom.listNamespacedCustomObject({
        group: 'metrics.k8s.io',
        version: 'v1beta1',
        namespace: this.namespace,
        plural: 'pods',
        labelSelector: selector,
      })) as { items?: PodMetrics[] };
    } catch (error) {
      const status = apiStatus(error);
      if (status === 404 || status === 503) throw unavailable('the metrics API is not available');
      throw fromKubernetes(error, 'reading session metrics');
    }
    for (const pod of list.items ?? []) {
      const performance = toPerformance(pod, session.spec.appDefinition);
      if (performance) return performance;
    }
    throw unavailable('no metrics for this session yet');
  }
}

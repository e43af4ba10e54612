import client from 'prom-client';
import { findCondition } from '../model/conditions.js';
import { SessionCondition, countReservedInstances, isSessionFailed, type Session } from '../model/session.js';
import type { ServiceCaches } from './cache.js';

export type LaunchOutcome = 'success' | 'reused' | 'timeout' | 'refused' | 'failed' | 'error';

/**
 * Prometheus metrics of the service (scraped at /q/metrics). Labels carry only bounded values: route
 * patterns (never raw paths, which may hold the auth token), status codes, app definition names that
 * exist in the cluster, phases and outcomes. Session and pool gauges are read from the service's
 * caches at scrape time (at most a watch event behind the API server), so a scrape lists nothing.
 *
 * Failed session starts (issue 17) are shown two ways, both by app definition and by the machine
 * reason of the session's Ready condition (`ImagePullFailed`, `CrashLooping`, `Unschedulable`,
 * `ContainerConfigError`, `StartDeadlineExceeded`, `PodRefused`; `Failed` for a refusal such as 553), a bounded set:
 * `ide_cloud_sessions_failed` counts the failed sessions present, read from the cache at scrape time,
 * so a restarted replica reports them at once; `ide_cloud_session_start_failures_total` counts the
 * sessions this replica saw fail, which includes those a failed launch removes right after (the
 * gauge no longer holds them). It counts only sessions the replica saw before they failed: a
 * restarted replica does not count again those it finds failed.
 */
export class ServiceMetrics {
  readonly registry = new client.Registry();
  readonly launchDuration: client.Histogram<'app_definition' | 'outcome' | 'start_strategy'>;
  readonly requests: client.Counter<'method' | 'route' | 'status'>;
  readonly requestDuration: client.Histogram<'method' | 'route' | 'status'>;

  constructor(caches: Pick<ServiceCaches, 'sessions' | 'appDefinitions'>) {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'ide_cloud_service_' });
    this.launchDuration = new client.Histogram({
      name: 'ide_cloud_launch_duration_seconds',
      help: 'Time from a launch request until its session URL (or the refusal), by app definition, outcome and start strategy',
      labelNames: ['app_definition', 'outcome', 'start_strategy'],
      buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 180, 300],
      registers: [this.registry],
    });
    this.requests = new client.Counter({
      name: 'ide_cloud_http_requests_total',
      help: 'HTTP requests by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.requestDuration = new client.Histogram({
      name: 'ide_cloud_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 180],
      registers: [this.registry],
    });
    this.registerSessionGauges(caches.sessions);
    this.countStartFailures(caches.sessions);
    this.registerPoolGauge(caches);
  }

  /** The sessions present, by phase, and the failed ones by reason: read from the cache at scrape time. */
  private registerSessionGauges(sessions: ServiceCaches['sessions']): void {
    new client.Gauge({
      name: 'ide_cloud_sessions',
      help: 'Sessions in the namespace by app definition and phase',
      labelNames: ['app_definition', 'phase'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const session of sessions.list()) {
          this.inc({ app_definition: session.spec.appDefinition, phase: session.status?.phase ?? 'Pending' });
        }
      },
    });
    new client.Gauge({
      name: 'ide_cloud_sessions_failed',
      help: 'Failed sessions in the namespace by app definition and machine reason (the Ready condition)',
      labelNames: ['app_definition', 'reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const session of sessions.list()) {
          if (session.metadata.deletionTimestamp || !isSessionFailed(session)) continue;
          this.inc({ app_definition: session.spec.appDefinition, reason: failureReason(session) });
        }
      },
    });
  }

  /** Counts the sessions this replica saw fail, from the session cache's events. */
  private countStartFailures(sessions: ServiceCaches['sessions']): void {
    const startFailures = new client.Counter({
      name: 'ide_cloud_session_start_failures_total',
      help: 'Sessions this replica saw fail, by app definition and machine reason (the Ready condition)',
      labelNames: ['app_definition', 'reason'],
      registers: [this.registry],
    });
    // The uids seen not failed (yet): bounded by the sessions present.
    const notFailed = new Set<string>();
    sessions.informer.on((type, session) => {
      const uid = session.metadata.uid;
      if (!uid) return;
      if (type === 'DELETED') {
        notFailed.delete(uid);
      } else if (!isSessionFailed(session)) {
        notFailed.add(uid);
      } else if (notFailed.delete(uid)) {
        startFailures.inc({ app_definition: session.spec.appDefinition, reason: failureReason(session) });
      }
    });
  }

  /**
   * The warm pools: desired and ready as the operator reports them in each AppDefinition's status,
   * reserved as the sessions hold them.
   */
  private registerPoolGauge({ appDefinitions, sessions }: Pick<ServiceCaches, 'sessions' | 'appDefinitions'>): void {
    new client.Gauge({
      name: 'ide_cloud_pool_instances',
      help: 'Warm pool instances by app definition and state (desired; ready, free or reserved; reserved)',
      labelNames: ['app_definition', 'state'],
      registers: [this.registry],
      collect() {
        this.reset();
        const reserved = countReservedInstances(sessions.list());
        for (const definition of appDefinitions.list()) {
          const pool = definition.status?.pool;
          const name = definition.metadata.name;
          this.set({ app_definition: name, state: 'desired' }, pool?.desired ?? definition.spec.minInstances ?? 0);
          this.set({ app_definition: name, state: 'ready' }, pool?.ready ?? 0);
          this.set({ app_definition: name, state: 'reserved' }, reserved.get(name) ?? 0);
        }
      },
    });
  }
}

/** The machine reason of a failed session: its Ready condition's (a bounded set), `Failed` without one. */
function failureReason(session: Pick<Session, 'status'>): string {
  return findCondition(session.status?.conditions, SessionCondition.ready)?.reason ?? 'Failed';
}

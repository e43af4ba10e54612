import client from 'prom-client';
import type { ServiceCaches } from './cache.js';

export type LaunchOutcome = 'success' | 'reused' | 'timeout' | 'refused' | 'failed' | 'error';

/**
 * Prometheus metrics of the service (scraped at /q/metrics). Labels carry only bounded values: route
 * patterns (never raw paths, which may hold the auth token), status codes, app definition names that
 * exist in the cluster, phases and outcomes. Session and pool gauges are read from the service's
 * caches at scrape time (at most a watch event behind the API server), so a scrape lists nothing.
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
    new client.Gauge({
      name: 'ide_cloud_sessions',
      help: 'Sessions in the namespace by app definition and phase',
      labelNames: ['app_definition', 'phase'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const session of caches.sessions.list()) {
          this.inc({ app_definition: session.spec.appDefinition, phase: session.status?.phase ?? 'Pending' });
        }
      },
    });
    new client.Gauge({
      name: 'ide_cloud_pool_instances',
      help: 'Warm pool instances by app definition and state (desired, ready, reserved), as the operator reports them',
      labelNames: ['app_definition', 'state'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const definition of caches.appDefinitions.list()) {
          const pool = definition.status?.pool;
          const name = definition.metadata.name;
          this.set({ app_definition: name, state: 'desired' }, pool?.desired ?? definition.spec.minInstances ?? 0);
          this.set({ app_definition: name, state: 'ready' }, pool?.ready ?? 0);
          this.set({ app_definition: name, state: 'reserved' }, pool?.reserved ?? 0);
        }
      },
    });
  }
}

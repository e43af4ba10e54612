import { describeFailure } from '../../kube/client.js';
import type { AppDefinition } from '../../model/app-definition.js';
import { isActiveSession, type Session } from '../../model/session.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import type { OperatorConfig } from '../config.js';
import type { EventSink } from '../runtime/events.js';
import type { Logger } from '../runtime/logger.js';
import { stopSession } from './stop.js';

/** Minutes of inactivity after which a session of this app definition stops; 0: never. */
export function idleTimeoutMinutes(appDefinition: AppDefinition): number {
  return appDefinition.spec.timeout ?? appDefinition.spec.monitor?.activityTracker?.timeoutAfter ?? 0;
}

/** Minutes from creation after which a session of this app definition stops however active; 0: never. */
export function lifetimeMinutes(appDefinition: AppDefinition | undefined, operatorDefault: number): number {
  return appDefinition?.spec.maxLifetimeMinutes ?? operatorDefault;
}

/**
 * Why a session should stop now, or undefined. Idle: lastActivity (set by PATCH /service/session),
 * or the creation time when no activity was reported, older than the timeout. Lifetime: created
 * longer ago than the hard lifetime.
 */
export function stopReason(input: {
  session: Pick<Session, 'metadata' | 'status'>;
  timeoutMinutes: number;
  maxLifetimeMinutes: number;
  idleCheck: boolean;
  now: Date;
}): string | undefined {
  const created = new Date(input.session.metadata.creationTimestamp ?? input.now).getTime();
  const last = input.session.status?.lastActivity ? new Date(input.session.status.lastActivity).getTime() : created;
  const now = input.now.getTime();
  if (input.idleCheck && input.timeoutMinutes > 0 && now - last > input.timeoutMinutes * 60_000) {
    return `Idle: no activity for more than ${input.timeoutMinutes} minute(s)`;
  }
  if (input.maxLifetimeMinutes > 0 && now - created > input.maxLifetimeMinutes * 60_000) {
    return `MaxLifetime: running for more than ${input.maxLifetimeMinutes} minute(s)`;
  }
  return undefined;
}

/**
 * Idle shutdown and lifetimes: every interval, sessions past their app definition's idle timeout (with
 * monitor.enable and monitor.activityTracker.enable on) or past its lifetime (the app definition's
 * maxLifetimeMinutes, else the operator's) are stopped: the reason is recorded in the stop-reason
 * annotation and an event, then the Session is deleted.
 */
export interface ActivityMonitorDeps {
  config: Pick<
    OperatorConfig,
    'monitorEnabled' | 'activityTrackerEnabled' | 'maxSessionLifetimeMinutes' | 'activityIntervalMs'
  >;
  appDefinitions: Pick<Informer<AppDefinition>, 'list'>;
  sessions: Pick<Informer<Session>, 'list'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'delete'>;
  events: EventSink;
  log: Logger;
}

export class ActivityMonitor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly deps: ActivityMonitorDeps,
    private readonly now: () => Date = () => new Date(),
  ) {}

  start(): void {
    const { config } = this.deps;
    // Runs even with the idle check off: an app definition may give its sessions a lifetime any time.
    const idleCheck = config.monitorEnabled && config.activityTrackerEnabled;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweep(idleCheck)
        .then(() => undefined)
        .catch((error: unknown) => this.deps.log.warn({ err: describeFailure(error) }, 'activity sweep failed'))
        .finally(() => (this.running = undefined));
    }, config.activityIntervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * One pass over the active sessions. Each stop is independent: a refused patch or delete is logged
   * (the session, the API's status and reason, never the error itself) and the sweep goes on with the
   * next session; the failed one is tried again next interval. Returns the sessions stopped.
   */
  async sweep(idleCheck: boolean): Promise<string[]> {
    const { deps } = this;
    const definitions = new Map<string, AppDefinition>();
    // A session names its app definition by resource name (spec.name equals it, a CRD rule).
    for (const a of deps.appDefinitions.list()) definitions.set(a.metadata.name, a);
    const stopped: string[] = [];
    for (const session of deps.sessions.list()) {
      if (!isActiveSession(session)) continue;
      const appDefinition = definitions.get(session.spec.appDefinition);
      const reason = stopReason({
        session,
        timeoutMinutes: appDefinition ? idleTimeoutMinutes(appDefinition) : 0,
        maxLifetimeMinutes: lifetimeMinutes(appDefinition, deps.config.maxSessionLifetimeMinutes),
        idleCheck,
        now: this.now(),
      });
      if (!reason) continue;
      const name = session.metadata.name;
      try {
        if (!(await stopSession(deps, session, reason))) continue;
      } catch (error) {
        deps.log.warn(
          { session: name, reason, err: describeFailure(error) },
          'could not stop session; next sweep retries',
        );
        continue;
      }
      deps.log.info({ session: name, reason }, 'session stopped');
      stopped.push(name);
    }
    return stopped;
  }
}

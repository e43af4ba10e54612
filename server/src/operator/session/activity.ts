import { describeFailure } from '../../kube/client.js';
import { ANNOTATIONS } from '../../model/api-group.js';
import { saveWorkOnStop, stopWarningSeconds, type AppDefinition } from '../../model/app-definition.js';
import { parseStopWarning, stopWarningValue, type SaveWorkResult, type StopKind } from '../../model/data-bridge.js';
import { isActiveSession, type Session } from '../../model/session.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import type { OperatorConfig } from '../config.js';
import type { EventSink } from '../runtime/events.js';
import type { Logger } from '../runtime/logger.js';
import type { BridgeTarget, SessionBridgeApi } from './session-bridge.js';
import { stopSession } from './stop.js';

/** Minutes of inactivity after which a session of this app definition stops; 0: never. */
export function idleTimeoutMinutes(appDefinition: AppDefinition): number {
  return appDefinition.spec.timeout ?? appDefinition.spec.monitor?.activityTracker?.timeoutAfter ?? 0;
}

/** Minutes from creation after which a session of this app definition stops however active; 0: never. */
export function lifetimeMinutes(appDefinition: AppDefinition | undefined, operatorDefault: number): number {
  return appDefinition?.spec.maxLifetimeMinutes ?? operatorDefault;
}

/** A stop ahead of a session: why, when (epoch ms; the session stops once past it), and the limit. */
export interface PlannedStop {
  kind: StopKind;
  reason: string;
  dueTime: number;
  limitMinutes: number;
}

export interface StopInput {
  session: Pick<Session, 'metadata' | 'status'>;
  timeoutMinutes: number;
  maxLifetimeMinutes: number;
  idleCheck: boolean;
  /** Activity the IDE reported to its bridge (epoch ms), counted with status.lastActivity. */
  bridgeActivity?: number;
}

/**
 * Whether the idle check applies to a session: only once it serves (has its URL). A start that never
 * serves is the start deadline's to end, and its idle clock would otherwise run while it queues.
 */
export function idleCheckApplies(session: Pick<Session, 'status'>, idleCheck: boolean): boolean {
  return idleCheck && !!session.status?.url;
}

/**
 * The earliest stop ahead of a session, or undefined. Idle: lastActivity (set by PATCH
 * /service/session, or what the IDE told its bridge, whichever is later), or the creation time
 * when no activity was reported, plus the timeout. Lifetime: the creation time plus the lifetime.
 */
export function nextStop(input: StopInput & { now: Date }): PlannedStop | undefined {
  const created = new Date(input.session.metadata.creationTimestamp ?? input.now).getTime();
  const reported = input.session.status?.lastActivity ? new Date(input.session.status.lastActivity).getTime() : created;
  const last = Math.max(reported, input.bridgeActivity ?? 0);
  const stops: PlannedStop[] = [];
  if (input.idleCheck && input.timeoutMinutes > 0) {
    stops.push({
      kind: 'Idle',
      reason: `Idle: no activity for more than ${input.timeoutMinutes} minute(s)`,
      dueTime: last + input.timeoutMinutes * 60_000,
      limitMinutes: input.timeoutMinutes,
    });
  }
  if (input.maxLifetimeMinutes > 0) {
    stops.push({
      kind: 'MaxLifetime',
      reason: `MaxLifetime: running for more than ${input.maxLifetimeMinutes} minute(s)`,
      dueTime: created + input.maxLifetimeMinutes * 60_000,
      limitMinutes: input.maxLifetimeMinutes,
    });
  }
  return stops.sort((a, b) => a.dueTime - b.dueTime)[0];
}

/** Why a session should stop now (past its idle timeout or its lifetime), or undefined. */
export function stopReason(input: StopInput & { now: Date }): string | undefined {
  const stop = nextStop(input);
  return stop && input.now.getTime() > stop.dueTime ? stop.reason : undefined;
}

/** A session's data bridge as a sweep found it: where to call it, or why it cannot be. */
interface LocatedBridge {
  /** The session's IDE runs a data bridge. */
  bridged: boolean;
  target?: BridgeTarget;
  /** Why the bridge cannot be called, told in the warning and the failed save. */
  problem: string;
}

/** What a pass decides for one session. */
export type StopStep =
  | { step: 'none' }
  | { step: 'warn'; secondsLeft: number }
  /** Warned: the stop waits for the later of its due time and the end of the window. */
  | { step: 'wait' }
  | { step: 'stop' };

/**
 * The warning rule. A warning (given at `warnedAt`) counts for a stop when it came within the stop's
 * window or later: activity after it moves an idle stop, and with it the window, past the warning,
 * so the next approach warns again. A counted warning holds the stop until the window has run out
 * after it, however late it came (an operator that was down, a sweep interval).
 */
export function stopStep(stop: PlannedStop, windowMs: number, warnedAt: number | undefined, now: number): StopStep {
  const windowStart = stop.dueTime - windowMs;
  if (now < windowStart) return { step: 'none' };
  if (windowMs > 0) {
    const counts = warnedAt !== undefined && warnedAt >= windowStart;
    if (!counts) return { step: 'warn', secondsLeft: Math.ceil(Math.max(stop.dueTime - now, windowMs) / 1000) };
    if (now < warnedAt + windowMs) return { step: 'wait' };
  }
  return now > stop.dueTime ? { step: 'stop' } : { step: 'wait' };
}

/** Sessions handled at once in a sweep: each may wait on its bridge (a save up to its bound). */
const SWEEP_CONCURRENCY = 8;

/**
 * Idle shutdown and lifetimes: every interval, sessions past their app definition's idle timeout (with
 * monitor.enable and monitor.activityTracker.enable on) or past its lifetime (the app definition's
 * maxLifetimeMinutes, else the operator's) are stopped: the reason is recorded in the stop-reason
 * annotation and an event, then the Session is deleted. A session whose IDE runs a data bridge is
 * warned first (stopWarningSeconds before), an idle one is kept by activity its IDE reports to the
 * bridge in that window, and with saveWorkOnStop its work is saved before it goes.
 */
export interface ActivityMonitorDeps {
  config: Pick<
    OperatorConfig,
    'monitorEnabled' | 'activityTrackerEnabled' | 'maxSessionLifetimeMinutes' | 'activityIntervalMs'
  >;
  appDefinitions: Pick<Informer<AppDefinition>, 'list'>;
  sessions: Pick<Informer<Session>, 'list' | 'get'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch' | 'patchStatus' | 'delete'>;
  bridges: SessionBridgeApi;
  events: EventSink;
  log: Logger;
}

export class ActivityMonitor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** Aborted at stop(): a sweep under way (e.g. of an operator that lost its lease) acts no further. */
  private readonly stopping = new AbortController();
  /** Warnings given, by session uid: the annotation's value before the cache shows it. */
  private readonly warned = new Map<string, { kind: StopKind; at: number }>();
  /**
   * The latest activity each session's IDE reported to its bridge (epoch ms). Activity only moves
   * later, so a session whose remembered activity keeps it before its window is not asked again
   * until the window could open: an active session costs no call per sweep.
   */
  private readonly bridgeActivity = new Map<string, number>();

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
      this.running = this.sweep(idleCheck, this.stopping.signal)
        .then(() => undefined)
        .catch((error: unknown) => this.deps.log.warn({ err: describeFailure(error) }, 'activity sweep failed'))
        .finally(() => (this.running = undefined));
    }, config.activityIntervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /**
   * One pass over the active sessions. Each session is handled on its own: a refused patch or delete,
   * or a bridge that does not answer, is logged (the session, the API's status and reason or the
   * bridge's short reason, never the error itself) and the sweep goes on with the next session; the
   * failed one is tried again next interval. Once `signal` is aborted (the operator stops leading)
   * it starts nothing more: no next session, warning, save or delete. Returns the sessions stopped.
   */
  async sweep(idleCheck: boolean, signal: AbortSignal = new AbortController().signal): Promise<string[]> {
    const { deps } = this;
    const definitions = new Map<string, AppDefinition>();
    // A session names its app definition by resource name (spec.name equals it, a CRD rule).
    for (const a of deps.appDefinitions.list()) definitions.set(a.metadata.name, a);
    const now = this.now();
    const candidates: { session: Session; appDefinition: AppDefinition | undefined }[] = [];
    const listed = new Set<string>();
    for (const session of deps.sessions.list()) {
      listed.add(uidOf(session));
      if (!isActiveSession(session)) continue;
      const appDefinition = definitions.get(session.spec.appDefinition);
      const bridgeActivity = this.bridgeActivity.get(uidOf(session));
      const stop = nextStop({ ...this.limits(session, appDefinition, idleCheck), bridgeActivity, now });
      if (!stop) continue;
      // The widest window it could have: nothing to do for the session before it opens.
      if (now.getTime() < stop.dueTime - this.windowMs(session, appDefinition, stop)) continue;
      candidates.push({ session, appDefinition });
    }
    for (const uid of this.warned.keys()) if (!listed.has(uid)) this.warned.delete(uid);
    for (const uid of this.bridgeActivity.keys()) if (!listed.has(uid)) this.bridgeActivity.delete(uid);
    deps.bridges.retain(listed);

    const stopped: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < candidates.length && !signal.aborted) {
        const { session, appDefinition } = candidates[next++]!;
        const name = session.metadata.name;
        try {
          if (await this.handle(session, appDefinition, idleCheck, signal)) stopped.push(name);
        } catch (error) {
          deps.log.warn({ session: name, err: describeFailure(error) }, 'could not stop session; next sweep retries');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SWEEP_CONCURRENCY, candidates.length) }, worker));
    return stopped;
  }

  private limits(session: Session, appDefinition: AppDefinition | undefined, idleCheck: boolean): StopInput {
    return {
      session,
      timeoutMinutes: appDefinition ? idleTimeoutMinutes(appDefinition) : 0,
      maxLifetimeMinutes: lifetimeMinutes(appDefinition, this.deps.config.maxSessionLifetimeMinutes),
      idleCheck: idleCheckApplies(session, idleCheck),
    };
  }

  /** The warning window of a stop: none for a session whose IDE runs no bridge to warn through. */
  private windowMs(session: Session, appDefinition: AppDefinition | undefined, stop: PlannedStop): number {
    if (!appDefinition || !this.deps.bridges.hasBridge(session, appDefinition)) return 0;
    return stopWarningSeconds(appDefinition.spec, stop.kind, stop.limitMinutes) * 1000;
  }

  /** One session in or past its window: warn, wait, or save and stop. Returns whether it was stopped. */
  private async handle(
    listed: Session,
    appDefinition: AppDefinition | undefined,
    idleCheck: boolean,
    signal: AbortSignal,
  ): Promise<boolean> {
    const { deps } = this;
    const name = listed.metadata.name;
    // The sweep's list may be minutes old when a worker gets here (saves take time): decide on the
    // cache as it is now, and never on a session that has since been replaced under the same name.
    const session = deps.sessions.get(name);
    if (!session || uidOf(session) !== uidOf(listed) || !isActiveSession(session)) return false;
    const limits = this.limits(session, appDefinition, idleCheck);
    const bridge = await this.locateBridge(session, appDefinition);
    const bridgeActivity =
      bridge.target && limits.idleCheck && limits.timeoutMinutes > 0
        ? await this.bridgeActivityOf(session, bridge.target)
        : this.bridgeActivity.get(uidOf(session)) || undefined;
    const now = this.now().getTime();
    const stop = nextStop({ ...limits, bridgeActivity, now: new Date(now) });
    if (!stop) return false;
    const windowMs = this.windowMs(session, appDefinition, stop);
    const step = stopStep(stop, windowMs, this.warnedAt(session, stop.kind), now);
    if (step.step === 'none' || step.step === 'wait' || signal.aborted) return false;

    const saveWork = !!appDefinition && saveWorkOnStop(appDefinition.spec);
    if (step.step === 'warn') {
      await this.warn(session, bridge, { stop, secondsLeft: step.secondsLeft, saveWork, now });
      return false;
    }
    const annotations: Record<string, string> = {};
    if (saveWork && session.metadata.annotations?.[ANNOTATIONS.workSaved] === undefined) {
      const saved = await this.save(session, bridge, signal);
      // A save cut short by the lost leadership records nothing: the next leader saves and stops.
      if (saved === undefined) return false;
      annotations[ANNOTATIONS.workSaved] = saved;
    }
    if (signal.aborted) return false;
    if (!(await stopSession(deps, session, stop.reason, annotations))) return false;
    deps.log.info({ session: name, reason: stop.reason }, 'session stopped');
    return true;
  }

  /** The session's bridge, or why it cannot be reached (no bridge: the problem is "no ready pod"). */
  private async locateBridge(session: Session, appDefinition: AppDefinition | undefined): Promise<LocatedBridge> {
    const bridged = !!appDefinition && this.deps.bridges.hasBridge(session, appDefinition);
    if (!bridged) return { bridged, problem: 'no ready pod' };
    let problem = 'no ready pod';
    const target = await this.deps.bridges.locate(session, appDefinition).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'BridgeCallError') {
        problem = error.message;
        return undefined;
      }
      const failure = describeFailure(error);
      problem = `its token could not be read (${String(failure.kubernetesStatus ?? failure.errorName ?? 'error')})`;
      return undefined;
    });
    return { bridged, target, problem };
  }

  /**
   * The latest activity the IDE reported (ms since the epoch), asked of its bridge and remembered: it
   * moves the idle stop; status.lastActivity stays the service's.
   */
  private async bridgeActivityOf(session: Session, target: BridgeTarget): Promise<number | undefined> {
    const uid = uidOf(session);
    const seconds = await this.deps.bridges.secondsSinceActivity(target).catch((error: unknown) => {
      this.deps.log.warn(
        { session: session.metadata.name, reason: bridgeReason(error) },
        'activity of the IDE could not be read',
      );
      return null;
    });
    if (seconds !== null) {
      const reported = this.now().getTime() - seconds * 1000;
      this.bridgeActivity.set(uid, Math.max(reported, this.bridgeActivity.get(uid) ?? 0));
    }
    return this.bridgeActivity.get(uid) || undefined;
  }

  /** Warns the IDE of the stop, or records that it could not be: the window runs from now either way. */
  private async warn(
    session: Session,
    bridge: LocatedBridge,
    warning: { stop: PlannedStop; secondsLeft: number; saveWork: boolean; now: number },
  ): Promise<void> {
    const { deps } = this;
    const { stop, secondsLeft, saveWork, now } = warning;
    const name = session.metadata.name;
    let delivered: string | undefined;
    if (bridge.target) {
      const notice = { reason: stop.kind, secondsLeft, saveWork };
      delivered = await deps.bridges.notice(bridge.target, notice).then(
        () => undefined,
        (error: unknown) => bridgeReason(error),
      );
    } else delivered = bridge.problem;
    // Given or attempted, the window runs from now: recorded once, so a restarted operator keeps it.
    await deps.sessionsApi.mergePatch(name, {
      metadata: { annotations: { [ANNOTATIONS.stopWarning]: stopWarningValue(stop.kind, now) } },
    });
    this.warned.set(uidOf(session), { kind: stop.kind, at: now });
    deps.events.record(
      session,
      delivered ? 'Warning' : 'Normal',
      'StopWarning',
      delivered
        ? `the IDE could not be warned (${delivered}); ${stop.kind} stop in ${secondsLeft} s`
        : `the IDE was warned: ${stop.kind} stop in ${secondsLeft} s`,
    );
    deps.log.info({ session: name, kind: stop.kind, secondsLeft, delivered: !delivered }, 'stop warning');
  }

  /**
   * Saves the student's work through the bridge and tells the result as an Event; returns the
   * work-saved annotation's value, or undefined when the save was cut short by the lost leadership.
   */
  private async save(session: Session, bridge: LocatedBridge, signal: AbortSignal): Promise<string | undefined> {
    const { deps } = this;
    const result: SaveWorkResult = bridge.target
      ? await deps.bridges.save(bridge.target, signal).catch((error: unknown) => ({
          outcome: 'failed' as const,
          code: 'BridgeUnavailable',
          message: bridgeReason(error),
        }))
      : {
          outcome: 'failed',
          code: 'BridgeUnavailable',
          message: bridge.bridged ? bridge.problem : 'the session runs no data bridge',
        };
    if (signal.aborted) return undefined;
    if (result.outcome === 'saved') {
      deps.events.record(
        session,
        'Normal',
        'WorkSaved',
        `work saved to branch ${result.branch} of ${result.repository}`,
      );
    } else if (result.outcome === 'nothing-to-save') {
      deps.events.record(session, 'Normal', 'WorkSaved', 'nothing to save: no uncommitted change, no unpushed commit');
    } else {
      deps.events.record(session, 'Warning', 'WorkNotSaved', `work not saved: ${result.code}: ${result.message}`);
    }
    return result.outcome === 'saved' ? result.branch : result.outcome;
  }

  /** When the session was last warned of a stop of this kind: the annotation, or a warning given since. */
  private warnedAt(session: Session, kind: StopKind): number | undefined {
    const times = [
      parseStopWarning(session.metadata.annotations?.[ANNOTATIONS.stopWarning]),
      this.warned.get(uidOf(session)),
    ]
      .filter((w) => w?.kind === kind)
      .map((w) => w!.at);
    return times.length > 0 ? Math.max(...times) : undefined;
  }
}

function uidOf(session: Session): string {
  return session.metadata.uid ?? session.metadata.name;
}

/** A bridge call's failure as a short reason: its own message, never a body. */
function bridgeReason(error: unknown): string {
  return error instanceof Error && error.name === 'BridgeCallError' ? error.message : 'the bridge call failed';
}

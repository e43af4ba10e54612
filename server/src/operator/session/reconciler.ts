import { isSessionFailed, SessionCondition, SessionReadyReason } from '../../model/session.js';
import type { EventSink } from '../runtime/events.js';
import type { Logger } from '../runtime/logger.js';
import { Delay, settle, type Outcome, type Reconciled } from '../runtime/outcome.js';
import { finalizeSession, type FinalizeDeps } from './finalize.js';
import { releaseFailedSession, type ReleaseDeps } from './release.js';
import { Pass, writeStatus, type StatusWriterDeps } from './status.js';
import type { GuardedStep, SessionStepDeps, StepContext } from './steps/context.js';
import { annotateDecision, chooseStrategy, ensureFinalizer } from './steps/decision.js';
import { injectionEnded, recordEnvironment, startInjection } from './steps/environment.js';
import { guards } from './steps/guards.js';
import { admitsThroughBridge, readiness } from './steps/readiness.js';
import { route } from './steps/route.js';
import { applyConfigStore, provision } from './steps/workload.js';

/** Settles Delay.injectionGrace from now, keeping no process alive for it. */
function graceAfterRoute(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Delay.injectionGrace).unref());
}

export type SessionReconcilerDeps = SessionStepDeps &
  FinalizeDeps &
  ReleaseDeps &
  StatusWriterDeps & {
    injector: SessionStepDeps['injector'] & FinalizeDeps['injector'];
    events: EventSink;
    log: Logger;
  };

/**
 * Reconciles a Session into a running IDE: fetch → gone? → deleting? finalize → guards (app
 * definition, workspace, limits) → 1 start strategy (reserve a warm instance, or lazy), and the
 * finalizer if the session came without it → 2 config store → 3 resources (lazy) or attached instance
 * (eager) → 4 environment → 5 route → 6 readiness and URL (or a failed start:
 * session/start-failure.ts). Status is gathered in memory and written once (the decision, the story
 * of the launch and its URL), then the pass's Events, which a launch that goes well does not have:
 * failures, warnings and a lost pod's return only, then 7 the decision's annotations (unless the
 * service writes them with its answer: steps/decision.ts). What the steps throw is mapped by the outcome
 * policy. A Failed session's passes release what it still holds (session/release.ts).
 */
export class SessionReconciler {
  constructor(private readonly deps: SessionReconcilerDeps) {}

  async reconcile(name: string): Promise<Reconciled> {
    const { deps } = this;
    const cached = deps.sessions.get(name);
    if (!cached) {
      deps.limitsPassed.delete(name);
      return;
    }
    // The pass changes its copy as it writes; the cache stays what the API server said.
    const session = structuredClone(cached);
    if (session.metadata.deletionTimestamp) {
      try {
        return await finalizeSession(deps, session);
      } catch (error) {
        return settle(error, { warn: (warning) => this.logWarning(name, warning) });
      }
    }
    if (isSessionFailed(session)) {
      try {
        return await releaseFailedSession(deps, session);
      } catch (error) {
        return settle(error, { warn: (warning) => this.logWarning(name, warning) });
      }
    }

    const pass = new Pass(session);
    let reconciled: Reconciled = undefined;
    let stepsDone = false;
    try {
      await this.steps(pass);
      stepsDone = true;
    } catch (error) {
      reconciled = settle(error, {
        fail: ({ code, reason, failureReason }) => {
          pass.status.error = { code, reason };
          // A start that failed says why in its machine reason (ImagePullFailed, …); a refusal is Failed.
          pass.condition({
            type: SessionCondition.ready,
            status: 'False',
            reason: failureReason ?? SessionReadyReason.failed,
            message: reason,
          });
          if (failureReason) pass.event('Warning', failureReason, reason);
          else pass.event('Warning', 'Failed', `${code}: ${reason}`);
        },
        warn: (warning) => {
          if (warning.event) pass.event('Warning', warning.event, warning.message);
          else this.logWarning(name, warning);
        },
      });
    } finally {
      const written = await writeStatus(deps, session, pass.status);
      // The cache shows the decision now (status.startStrategy): the limits need no reminder of it.
      if (pass.status.startStrategy) deps.limitsPassed.delete(name);
      // After the status, in the background: the write carrying the URL never waits for an Event.
      // A status write that failed takes the pass's Events with it; the next pass tells them again.
      for (const [type, reason, message] of pass.events) deps.events.record(session, type, reason, message);
      // 7. After the status, off the path to the URL: the decision's annotations the spec asks for.
      await annotateDecision({ deps, session, pass });
      // The watch's copy of the pass's own write wakes no pass (session/watches.ts): a pass cut short
      // (a failure, a warning) whose status changed looks again at once, as a Failed session's release needs.
      if (!stepsDone && written && !reconciled) reconciled = { requeueAfterMs: 0 };
    }
    return reconciled;
  }

  private async steps(pass: Pass): Promise<void> {
    const context: StepContext = { deps: this.deps, session: pass.session, pass };
    const step: GuardedStep = { ...context, ...(await guards(context)) };
    pass.ingressName = step.appDefinition.spec.ingressname;
    // 1. Start strategy, and the finalizer if the session came without it, before anything is created.
    await chooseStrategy(step);
    await ensureFinalizer(step);
    // 2. Config store.
    await applyConfigStore(step);
    // 3. Resources.
    const served = { ...step, workload: await provision(step) };
    // 4. Environment: into a ready warm instance, its first try beside the route's write; when it
    // ends by then (or shortly after: Delay.injectionGrace) the values' arrival goes in the status
    // that carries the URL, else in a later one. The URL waits for the bridge only where the proxy
    // admits the user through it (6.).
    const injecting = startInjection(served);
    try {
      // 5. Route.
      const routed = route(served);
      const waitForBridge = admitsThroughBridge(this.deps.config, served.workload);
      const firstTry = injecting?.firstTry;
      await Promise.all([
        routed,
        firstTry && (waitForBridge ? firstTry : Promise.race([firstTry, routed.then(() => graceAfterRoute())])),
      ]);
      recordEnvironment(served, injecting !== undefined);
    } finally {
      injecting?.unfollow(injectionEnded(pass.status.conditions));
    }
    // 6. Readiness and URL.
    await readiness(served);
  }

  private logWarning(name: string, warning: Extract<Outcome, { kind: 'warn' }>): void {
    this.deps.log.warn({ session: name, warning: warning.message }, 'session warning');
  }
}

/**
 * 6. Readiness and URL: the URL once the IDE pod is ready, the route served and the user admitted; a
 * start that cannot succeed fails (session/start-failure.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../../model/api-group.js';
import { findCondition } from '../../../model/conditions.js';
import { startDeadlineSeconds } from '../../../model/app-definition.js';
import { SessionCondition, SessionReadyReason, type Session } from '../../../model/session.js';
import { checksIdentity } from '../../auth-proxy.js';
import type { OperatorConfig } from '../../config.js';
import { routePath, sessionUrl } from '../../manifests.js';
import { INDEX, labelKey } from '../../runtime/cache.js';
import { deploymentReady, podReady } from '../../runtime/objects.js';
import { Delay, FailObject, RetryLater } from '../../runtime/outcome.js';
import { startDeadlineOf } from '../admission.js';
import { liveSessionPods } from '../own-workload.js';
import { podVerdict } from '../start-failure.js';
import type { ServedStep, SessionStepDeps, Workload } from './context.js';
import { injectionEnded } from './environment.js';

/**
 * 6. Readiness and URL. While the pod starts, its state is looked at (session/start-failure.ts): an
 * unrecoverable one fails the session at once; else the pass looks again at the start deadline, or
 * sooner at a pull error's bound. Every change of the pods or the workload wakes the session
 * before that (session/watches.ts). Once the pod is Ready, a starting session's URL waits for the ingress to
 * serve its route (routes/served.ts, when configured): the ingress has no event to wait for, so the
 * pass asks it every few milliseconds for a moment (Delay.routeGrace), then, if it still does not
 * serve it, the session is visited again shortly.
 */
export async function readiness(step: ServedStep): Promise<void> {
  const { deps, session, pass, appDefinition, workload } = step;
  const starting = !session.status?.url;
  if (workloadReady(deps, session, workload)) {
    if (starting && admitsThroughBridge(deps.config, workload) && !injectionEnded(pass.status.conditions)) {
      pass.condition({
        type: SessionCondition.ready,
        status: 'False',
        reason: SessionReadyReason.userNotAdmitted,
        message: "the IDE pod is ready; waiting for its proxy to admit the session's user (the injection)",
      });
      // The injection's end wakes the session (session/injection.ts): this bound is a fallback only.
      throw new RetryLater("waiting for the proxy to admit the session's user", Delay.podStarting);
    }
    if (starting && !(await routeServed(deps, session))) {
      pass.condition({
        type: SessionCondition.ready,
        status: 'False',
        reason: SessionReadyReason.routeNotServed,
        message: 'the IDE pod is ready; waiting for the ingress to serve the route',
      });
      throw new RetryLater('waiting for the ingress to serve the route', Delay.routeServed);
    }
    pass.status.url = sessionUrl(deps.config, session);
    // A launch's Ready tells its strategy, its time in lastTransitionTime: the launch records no
    // Event. A pod back after a loss (NotReady) is told as an Event, as the loss was.
    pass.condition(
      {
        type: SessionCondition.ready,
        status: 'True',
        reason: SessionReadyReason.podReady,
        message: `the IDE pod is ready (${pass.status.startStrategy ?? 'unknown'} start)`,
      },
      starting ? undefined : { reason: 'Ready', message: 'the IDE pod is ready: the session serves its URL' },
    );
    return;
  }
  // A session that has served is past its start: a pod of its that restarts is not a failed start.
  pass.condition(
    {
      type: SessionCondition.ready,
      status: 'False',
      reason: SessionReadyReason.podNotReady,
      message: 'waiting for the IDE pod',
    },
    // A start waits for its pod as planned; a session that served has lost it.
    starting ? undefined : { type: 'Warning', reason: 'NotReady', message: 'the IDE pod is not ready: waiting for it' },
  );
  const now = (deps.now ?? Date.now)();
  const verdict = starting ? podVerdict(sessionPods(deps, session, workload), now, deps.config) : {};
  if (verdict.failure) throw new FailObject(verdict.failure.code, verdict.failure.message, verdict.failure.reason);
  const deadline = starting
    ? startDeadlineOf({ ...session, status: pass.status }, startDeadlineSeconds(appDefinition.spec))
    : undefined;
  const next = Math.min(deadline ?? Infinity, verdict.recheckAtMs ?? Infinity);
  const afterMs = Number.isFinite(next) ? Math.max(next - now, Delay.conflict) : Delay.podStarting;
  throw new RetryLater('waiting for the IDE pod', afterMs);
}

/**
 * Whether the ingress serves the session's route. The pass that first finds the pod Ready asks every
 * Delay.routeCheckEvery for up to Delay.routeGrace, each check bounded by the time left; a pass after
 * a grace that ran out asks once, so a route the ingress does not take up never keeps a worker busy.
 * Real time: the waits in between are real.
 */
async function routeServed(deps: SessionStepDeps, session: Session): Promise<boolean> {
  const path = routePath(session);
  const graceSpent =
    findCondition(session.status?.conditions, SessionCondition.ready)?.reason === SessionReadyReason.routeNotServed;
  if (graceSpent) return deps.routes.served(deps.config.sessionHost, path);
  const deadline = Date.now() + Delay.routeGrace;
  for (;;) {
    const left = Math.max(deadline - Date.now(), Delay.routeCheckEvery);
    if (await deps.routes.served(deps.config.sessionHost, path, left)) return true;
    if (deadline - Date.now() < Delay.routeCheckEvery) return false;
    await sleep(Delay.routeCheckEvery);
  }
}

/**
 * Whether the session's proxy admits its user only once the data bridge wrote them in: a warm
 * instance's, with an identity provider (auth-proxy.ts). Its URL waits for the injection to end, so
 * the student never meets the proxy's 403 in the moment between the two.
 */
export function admitsThroughBridge(config: Pick<OperatorConfig, 'sessionIssuer'>, workload: Workload): boolean {
  return workload.eager && checksIdentity(config);
}

/**
 * Whether the IDE pod serves. A warm instance's Deployment says so for its current pod (a returned
 * instance can still show its previous user's pod). A lazy session's own pod says so itself (an
 * earlier operator's ReplicaSet or Deployment would say so only after a write of the controller
 * manager, whose queues are long in a burst).
 */
function workloadReady(deps: SessionStepDeps, session: Session, workload: Workload): boolean {
  if (workload.eager) return deploymentReady(workload.deployment);
  return sessionPods(deps, session, workload).some((pod) => !pod.metadata?.deletionTimestamp && podReady(pod));
}

/**
 * The IDE pods of a session, from the cache: a lazy session's own live ones (own-workload.ts: one
 * that ended is replaced, its state no verdict on the start), or its warm instance's.
 */
function sessionPods(deps: SessionStepDeps, session: Session, workload: Workload): k8s.V1Pod[] {
  if (workload.eager) return deps.pods.byIndex(INDEX.label, labelKey(LABELS.poolInstance, workload.backend));
  return liveSessionPods(deps.pods, session);
}

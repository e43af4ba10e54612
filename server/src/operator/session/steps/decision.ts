/**
 * 1. The start strategy: a warm instance or a lazy start, told as the Reserved condition and in the
 * status only; a decision a crashed pass made is taken up; the finalizer of a session created without it.
 */
import { isConflict, isNotFound } from '../../../kube/client.js';
import { ANNOTATIONS, SESSION_FINALIZER } from '../../../model/api-group.js';
import { effectiveMinInstances, type AppDefinition } from '../../../model/app-definition.js';
import { findCondition } from '../../../model/conditions.js';
import {
  decidedStartStrategy,
  decisionAnnotatedByService,
  missingDecisionAnnotations,
  SessionCondition,
  SessionReservedReason,
} from '../../../model/session.js';
import type { PoolInstance } from '../../pool/instances.js';
import { finalizersOf } from '../../runtime/objects.js';
import { hasOwnWorkload } from '../own-workload.js';
import { Delay, RetryLater } from '../../runtime/outcome.js';
import type { Pass } from '../status.js';
import { takeStandbyClaim } from '../../standby/claims.js';
import type { GuardedStep, StepContext } from './context.js';

/**
 * A decision made by a pass whose status was not written (a crash, a failed write): from the
 * annotations of a session an older operator decided, else from the world. The instance reserved for the session (its
 * reservation names the session and its uid: pool/instances.ts) says eager and which; a workload of the session's own
 * (own-workload.ts) says lazy (a fallback when eager start is on). Nothing found: not decided, the pass decides.
 */
export function takeUpDecision({ deps, session, pass }: StepContext, appDefinition: AppDefinition): void {
  const annotations = session.metadata.annotations ?? {};
  // Called with no strategy in the status: a decided one is the annotation's.
  const annotated = decidedStartStrategy(session);
  if (annotated) {
    pass.status.startStrategy = annotated;
    if (annotations[ANNOTATIONS.instanceId]) pass.status.instanceId = annotations[ANNOTATIONS.instanceId];
    return;
  }
  const reserved = deps.pool.findReservation(appDefinition.metadata.name, session);
  if (reserved) {
    pass.status.startStrategy = 'eager';
    pass.status.instanceId = String(reserved.id);
    return;
  }
  if (hasOwnWorkload(deps, session)) pass.status.startStrategy = deps.config.eagerStart ? 'lazy-fallback' : 'lazy';
}

/**
 * 1. Start strategy: a warm instance when eager start is on, one is free and the session's workspace,
 * if any, holds no work yet (a new one, whose claim the instance's becomes); else lazy: a workspace
 * that may hold work gets a pod of its own, mounting its claim, and a new one takes a bound standby
 * claim if there is one (`step.claimName`). The reservation is written on the instance (the
 * claim), a standby claim's taking on the claim, both before the decision is told; the decision goes
 * into the status only, written once at the end of the pass.
 */
export async function chooseStrategy(step: GuardedStep): Promise<void> {
  const { deps, session, pass, appDefinition, claimName, newWorkspace } = step;
  let instance: PoolInstance | undefined;
  const holdsWork = deps.config.eagerStart && !!claimName && !newWorkspace;
  if (!pass.status.startStrategy) {
    if (!deps.config.eagerStart || holdsWork) pass.status.startStrategy = 'lazy';
    else {
      const minInstances = effectiveMinInstances(deps.config, appDefinition);
      instance =
        deps.pool.findReservation(appDefinition.metadata.name, session) ??
        (await deps.pool.reserve(appDefinition, minInstances, session, newWorkspace?.metadata.name));
      if (instance) {
        pass.status.startStrategy = 'eager';
        pass.status.instanceId = String(instance.id);
      } else pass.status.startStrategy = 'lazy-fallback';
    }
    // Decided on this pass, so no pod mounts the workspace's own claim yet: a standby one can be it.
    if (newWorkspace && pass.status.startStrategy !== 'eager') {
      step.claimName = (await takeStandbyClaim(deps, newWorkspace)) ?? claimName;
    }
  }
  tellStrategy(pass, holdsWork);
  step.reserved = instance;
}

/**
 * The Reserved condition of the decision (a lazy start on a workspace that may hold work says so),
 * once: on the pass that decides, or on the one that takes up a decision whose status was never
 * written. No Event: the condition tells it, in the status write the launch makes anyway.
 */
function tellStrategy(pass: Pass, workspaceHoldsWork: boolean): void {
  const current = findCondition(pass.status.conditions, SessionCondition.reserved);
  if (current && current.status !== 'Unknown') return;
  const id = pass.status.instanceId;
  switch (pass.status.startStrategy) {
    case 'eager':
      pass.condition({
        type: SessionCondition.reserved,
        status: 'True',
        reason: SessionReservedReason.instanceReserved,
        message: `warm instance ${id}`,
      });
      return;
    case 'lazy-fallback':
      pass.condition({
        type: SessionCondition.reserved,
        status: 'False',
        reason: SessionReservedReason.poolExhausted,
        message: 'no free warm instance; lazy start',
      });
      return;
    case 'lazy':
      pass.condition(
        workspaceHoldsWork
          ? {
              type: SessionCondition.reserved,
              status: 'False',
              reason: SessionReservedReason.workspaceHoldsWork,
              message: 'the workspace may hold work: a pod of its own mounts its claim',
            }
          : {
              type: SessionCondition.reserved,
              status: 'False',
              reason: SessionReservedReason.eagerStartDisabled,
              message: 'lazy start',
            },
      );
  }
}

/**
 * The finalizer, when the session came without it (the service sets it; kubectl does not): one write
 * before anything the session cleans up exists, against the version read so no one's finalizer is
 * lost, and only on the session read (its uid). The decision, made by then, rides along as its
 * annotations (else they come after the status, `annotateDecision`): one write, however long the
 * session then waits in the queue.
 */
export async function ensureFinalizer({ deps, session, pass }: StepContext): Promise<void> {
  const finalizers = finalizersOf(session);
  if (finalizers.includes(SESSION_FINALIZER)) return;
  const annotations = decisionAnnotatedByService(session.metadata)
    ? {}
    : missingDecisionAnnotations(session.metadata, pass.status);
  try {
    const updated = await deps.sessionsApi.mergePatch(session.metadata.name, {
      metadata: {
        uid: session.metadata.uid,
        finalizers: [...finalizers, SESSION_FINALIZER],
        resourceVersion: session.metadata.resourceVersion,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
    });
    deps.sessions.observe(updated);
    session.metadata = { ...session.metadata, ...updated.metadata };
  } catch (error) {
    if (isConflict(error)) throw new RetryLater('session changed while its finalizer was written', Delay.conflict);
    throw error;
  }
}

/**
 * After the pass's status: the decision's annotations the spec asks for (`missingDecisionAnnotations`),
 * one write off the path to the URL, when the session lacks them and the service does not write them
 * with its answer (an ephemeral launch not answered yet). Only on the session read (its uid); a session
 * gone or replaced meanwhile is left alone.
 */
export async function annotateDecision({ deps, session, pass }: StepContext): Promise<void> {
  if (decisionAnnotatedByService(session.metadata)) return;
  const annotations = missingDecisionAnnotations(session.metadata, pass.status);
  if (Object.keys(annotations).length === 0) return;
  try {
    const updated = await deps.sessionsApi.mergePatch(session.metadata.name, {
      metadata: { uid: session.metadata.uid, annotations },
    });
    deps.sessions.observe(updated);
  } catch (error) {
    if (isNotFound(error) || isConflict(error)) return;
    throw error;
  }
}

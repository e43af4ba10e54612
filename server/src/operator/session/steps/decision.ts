/**
 * 1. The start strategy: a warm instance or a lazy start, told as the Reserved condition, and what the
 * session's metadata must carry of it (writeMetadata); a decision a crashed pass made is taken up.
 */
import { isConflict, isNotFound } from '../../../kube/client.js';
import { ANNOTATIONS, SESSION_FINALIZER } from '../../../model/api-group.js';
import { effectiveMinInstances, type AppDefinition } from '../../../model/app-definition.js';
import { findCondition } from '../../../model/conditions.js';
import { decidedStartStrategy, SessionCondition, SessionReservedReason } from '../../../model/session.js';
import type { PoolInstance } from '../../pool/instances.js';
import { finalizersOf } from '../../runtime/objects.js';
import { Delay, RetryLater } from '../../runtime/outcome.js';
import { ROUTE_ANNOTATION } from '../finalize.js';
import type { Pass } from '../status.js';
import { takeStandbyClaim } from '../../standby/claims.js';
import type { GuardedStep, StepContext } from './context.js';

/**
 * A decision made by a pass whose status was not written (a crash, a failed write): from the
 * annotations, else from the world, as a warm launch writes its annotations only after the status
 * that carries its URL. The instance reserved for the session (its label and the ownerReference with
 * the session's uid: pool/instances.ts) says eager and which; a Deployment of the session's own says
 * lazy (a fallback when eager start is on). Nothing found: not decided, the pass decides.
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
  const own = deps.deployments.get(session.metadata.name);
  if (own && (own.metadata?.ownerReferences ?? []).some((o) => o.uid === session.metadata.uid)) {
    pass.status.startStrategy = deps.config.eagerStart ? 'lazy-fallback' : 'lazy';
  }
}

/**
 * 1. Start strategy: a warm instance when eager start is on, one is free and the session's workspace,
 * if any, holds no work yet (a new one, whose claim the instance's becomes); else lazy: a workspace
 * that may hold work gets a pod of its own, mounting its claim, and a new one takes a bound standby
 * claim if there is one (`step.claimName`). The reservation is written on the instance (the
 * claim), a standby claim's taking on the claim, both before the decision is told; the decision goes
 * into the status and, as annotations, into the session's metadata (`writeMetadata`): before
 * anything is created on the lazy path, after the status that carries the URL on a warm launch.
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
        deps.poolChanged(appDefinition.metadata.name);
      } else pass.status.startStrategy = 'lazy-fallback';
    }
    // Decided on this pass, so no pod mounts the workspace's own claim yet: a standby one can be it.
    if (newWorkspace && pass.status.startStrategy !== 'eager') {
      step.claimName = (await takeStandbyClaim(deps, newWorkspace)) ?? claimName;
    }
  }
  tellStrategy(pass, holdsWork);
  step.reserved = instance?.deployment;
}

/**
 * The Reserved condition of the decision (a lazy start on a workspace that may hold work says so),
 * and its Event, once: on the pass that decides, or on the
 * one that takes up a decision whose status was never written.
 */
function tellStrategy(pass: Pass, workspaceHoldsWork: boolean): void {
  const current = findCondition(pass.status.conditions, SessionCondition.reserved);
  if (current && current.status !== 'Unknown') return;
  const id = pass.status.instanceId;
  switch (pass.status.startStrategy) {
    case 'eager':
      pass.condition(
        {
          type: SessionCondition.reserved,
          status: 'True',
          reason: SessionReservedReason.instanceReserved,
          message: `warm instance ${id}`,
        },
        { reason: 'Reserved', message: `warm instance ${id} reserved` },
      );
      return;
    case 'lazy-fallback':
      pass.condition(
        {
          type: SessionCondition.reserved,
          status: 'False',
          reason: SessionReservedReason.poolExhausted,
          message: 'no free warm instance; lazy start',
        },
        { reason: 'LazyStart', message: 'no free warm instance: starting lazily' },
      );
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
        { reason: 'LazyStart', message: workspaceHoldsWork ? "starting on the workspace's claim" : 'starting lazily' },
      );
  }
}

/**
 * When `writeMetadata` writes: `beforeResources` (step 1) only what must be there before anything
 * the session cleans up or counts on exists: the finalizer when the session came without it (the
 * service sets it; kubectl does not), and a lazy decision, before its resources; `afterStatus`
 * (after the pass's status write) a decision not yet annotated: a warm launch's, off the path to
 * its URL.
 */
export type MetadataMoment = 'beforeResources' | 'afterStatus';

/**
 * One write of what the session's metadata must carry: the finalizer (before its route exists),
 * the start-strategy annotations and the Ingress its route goes to. Nothing when all is there, or
 * when it is not time for it yet. Only on the session read (its uid): never on a new one of its name.
 */
export async function writeMetadata({ deps, session, pass }: StepContext, moment: MetadataMoment): Promise<void> {
  const strategy = pass.status.startStrategy;
  const { ingressName } = pass;
  if (!strategy || !ingressName) return;
  const finalizers = finalizersOf(session);
  const needsFinalizer = moment === 'beforeResources' && !finalizers.includes(SESSION_FINALIZER);
  const wanted: Record<string, string> = {
    [ANNOTATIONS.startStrategy]: strategy,
    [ROUTE_ANNOTATION]: ingressName,
    ...(pass.status.instanceId ? { [ANNOTATIONS.instanceId]: pass.status.instanceId } : {}),
  };
  const annotations = session.metadata.annotations ?? {};
  const changed = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => annotations[k] !== v));
  if (!needsFinalizer && Object.keys(changed).length === 0) {
    deps.limitsPassed.delete(session.metadata.name);
    return;
  }
  // A warm launch's claim and status tell its decision: the annotations wait for the status.
  if (moment === 'beforeResources' && !needsFinalizer && strategy === 'eager') return;
  try {
    const updated = await deps.sessionsApi.mergePatch(session.metadata.name, {
      metadata: {
        uid: session.metadata.uid,
        annotations: changed,
        // The finalizer list is replaced whole: only against the version read, so no one's is lost.
        ...(needsFinalizer
          ? { finalizers: [...finalizers, SESSION_FINALIZER], resourceVersion: session.metadata.resourceVersion }
          : {}),
      },
    });
    deps.sessions.observe(updated);
    deps.limitsPassed.delete(session.metadata.name);
    session.metadata = { ...session.metadata, ...updated.metadata };
  } catch (error) {
    if (moment === 'afterStatus' && (isNotFound(error) || isConflict(error))) return; // gone, or replaced
    if (isConflict(error)) throw new RetryLater('session changed while its metadata was written', Delay.conflict);
    throw error;
  }
}

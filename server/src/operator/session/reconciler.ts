import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound } from '../../kube/client.js';
import { ANNOTATIONS, LABELS } from '../../model/api-group.js';
import { dataBridgeEnabled, dataBridgePort, type AppDefinition } from '../../model/app-definition.js';
import { findCondition, setCondition, type ConditionInput } from '../../model/conditions.js';
import { ErrorCode } from '../../model/error-codes.js';
import { checkSessionLimits } from '../../model/limits.js';
import { configStoreName } from '../../model/names.js';
import {
  SessionCondition,
  StartStrategySchema,
  type Session,
  type SessionStatus,
  type StartStrategy,
} from '../../model/session.js';
import { workspaceClaimName } from '../../model/workspace.js';
import { deploymentReady, finalizersOf, findAppDefinition, sameStatus, type OperatorContext } from '../context.js';
import { FailObject, RetryLater, outcomeOf } from '../runtime/outcome.js';
import { setRoute } from '../routes/ingress.js';
import type { DataInjector } from './injection.js';
import {
  deployment,
  lazyEnv,
  lazyEnvFrom,
  ownerReference,
  poolInstanceName,
  routePath,
  service,
  sessionLabels,
  sessionPodApp,
  sessionPodTemplate,
  sessionUrl,
} from '../manifests.js';
import { applySidecars, findReservation, reserveInstance, type PoolInstance } from '../pool/instances.js';

/** Finalizer of a Session: its path in the shared Ingress (not owned by the session) is removed first. */
export const SESSION_FINALIZER = 'ide-cloud.io/session-route';
/** Annotation recording the shared Ingress the session's path was added to, for clean-up. */
export const ROUTE_ANNOTATION = 'ide-cloud.io/route';

export type Reconciled = { requeueAfterMs?: number } | void;

const isStartStrategy = (value: unknown): value is StartStrategy => StartStrategySchema.safeParse(value).success;

/** What a pass learnt, written once at the end. */
class Pass {
  readonly status: SessionStatus;
  requeueAfterMs?: number;
  readonly events: [
    type: 'Normal' | 'Warning',
    reason: Parameters<OperatorContext['events']['record']>[2],
    message: string,
  ][] = [];

  constructor(readonly session: Session) {
    this.status = structuredClone(session.status ?? {});
    this.status.observedGeneration = session.metadata.generation;
  }

  condition(next: Omit<ConditionInput, 'observedGeneration'>): void {
    this.status.conditions = setCondition(this.status.conditions, {
      ...next,
      observedGeneration: this.session.metadata.generation,
    });
  }

  requeue(ms: number): void {
    this.requeueAfterMs = Math.min(this.requeueAfterMs ?? ms, ms);
  }
}

/**
 * Reconciles a Session into a running IDE: fetch → gone? → deleting? finalize → guards (app
 * definition, workspace, limits, finalizer) → 1 start strategy (reserve a warm instance, or lazy) →
 * 2 config store → 3 resources (lazy) or attached instance (eager) → 4 route → 5 environment →
 * 6 readiness and URL. Status is gathered in memory and written once.
 */
export class SessionReconciler {
  constructor(
    private readonly ctx: OperatorContext,
    private readonly injector: DataInjector,
    /** Tells the pool its counts changed (a reservation); the app definition's pass follows shortly. */
    private readonly poolChanged: (name: string) => void,
  ) {}

  async reconcile(name: string): Promise<Reconciled> {
    const cached = this.ctx.cache.sessions.get(name);
    if (!cached) return;
    // The pass changes its copy as it writes; the cache stays what the API server said.
    const session = structuredClone(cached);
    if (session.metadata.deletionTimestamp) return this.finalize(session);
    if (session.status?.phase === 'Failed') return;

    const pass = new Pass(session);
    try {
      await this.steps(session, pass);
      return pass.requeueAfterMs !== undefined ? { requeueAfterMs: pass.requeueAfterMs } : undefined;
    } catch (error) {
      const outcome = outcomeOf(error);
      if (outcome.kind === 'requeue') return { requeueAfterMs: outcome.afterMs };
      if (outcome.kind === 'fail') {
        pass.status.phase = 'Failed';
        pass.status.error = { code: outcome.code, reason: outcome.reason };
        pass.condition({ type: SessionCondition.ready, status: 'False', reason: 'Failed', message: outcome.reason });
        pass.events.push(['Warning', 'Failed', `${outcome.code}: ${outcome.reason}`]);
        return;
      }
      throw outcome.error;
    } finally {
      await this.writeStatus(session, pass.status);
      for (const [type, reason, message] of pass.events) this.ctx.events.record(session, type, reason, message);
    }
  }

  private async steps(session: Session, pass: Pass): Promise<void> {
    const { ctx } = this;
    const name = session.metadata.name;

    // Guards.
    const appDefinition = await findAppDefinition(ctx, session.spec.appDefinition);
    if (!appDefinition) {
      throw new FailObject(ErrorCode.unknownAppDefinition, `unknown app definition ${session.spec.appDefinition}`);
    }
    let claimName: string | undefined;
    if (session.spec.workspace) {
      // The service creates the workspace just before the session, and the two come by different
      // watches: a cache miss is confirmed with the API server before the session fails on it.
      const workspace = await ctx.cache.workspaces.find(session.spec.workspace, (n) =>
        ctx.resources.workspaces.find(n),
      );
      if (!workspace || workspace.metadata.deletionTimestamp) {
        throw new FailObject(ErrorCode.unknownWorkspace, `unknown workspace ${session.spec.workspace}`);
      }
      claimName = workspaceClaimName(workspace);
    }
    // A decision already made is in the status or, if the pass that made it ended before writing the
    // status, in the annotations written with the finalizer.
    const annotations = session.metadata.annotations ?? {};
    if (!pass.status.startStrategy && isStartStrategy(annotations[ANNOTATIONS.startStrategy])) {
      pass.status.startStrategy = annotations[ANNOTATIONS.startStrategy] as StartStrategy;
      if (annotations[ANNOTATIONS.instanceId]) pass.status.instanceId = annotations[ANNOTATIONS.instanceId];
    }
    if (!pass.status.startStrategy) this.checkLimits(session, appDefinition);
    if (!pass.status.phase) {
      pass.status.phase = 'Pending';
      for (const type of Object.values(SessionCondition)) {
        if (!findCondition(pass.status.conditions, type))
          pass.condition({ type, status: 'Unknown', reason: 'Pending' });
      }
    }

    // 1. Start strategy: a warm instance when eager start is on and one is free, else lazy. The
    // reservation is written on the instance; the decision, the finalizer and the route's Ingress go
    // to the session in one write, before anything is created for the lazy path.
    let reserved: k8s.V1Deployment | undefined;
    if (!pass.status.startStrategy) reserved = await this.chooseStrategy(session, appDefinition, claimName, pass);
    const ingressName = appDefinition.spec.ingressname;
    await this.writeMetadata(session, pass, ingressName);

    // 2. Config store, when the app definition asks for one.
    const configStore = appDefinition.spec.options?.configStore === 'true' ? configStoreName(name) : undefined;
    if (configStore) {
      await applyObject(ctx.objects, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: configStore,
          namespace: ctx.namespace,
          labels: sessionLabels(session),
          ownerReferences: [ownerReference(session as Parameters<typeof ownerReference>[0])],
        },
      } as k8s.V1ConfigMap);
    }

    // 3. Resources of the session.
    const eager = pass.status.startStrategy === 'eager';
    let backend: string;
    let workload: k8s.V1Deployment | undefined;
    if (eager) {
      const instanceName = poolInstanceName(appDefinition.metadata.name, Number(pass.status.instanceId));
      workload = reserved ?? ctx.cache.deployments.get(instanceName);
      if (!workload || workload.metadata?.labels?.[LABELS.session] !== name) {
        throw new FailObject(
          ErrorCode.internal,
          `warm instance ${instanceName} is no longer reserved for this session`,
        );
      }
      backend = instanceName;
    } else {
      workload = await this.applyLazyResources(session, appDefinition, claimName, configStore);
      backend = name;
    }

    // 4. Environment: in the pod spec (lazy) or pushed to the data bridge (eager, in the background,
    // started before the route so that it usually ends within this pass). Eager: only once the
    // reserved instance's current pod serves. A recycled instance can still show its previous pod,
    // another user's, which must never receive these values.
    const injectNow = eager && deploymentReady(workload);
    if (injectNow) this.startInjection(session, appDefinition, backend, claimName);

    // 5. Route in the shared Ingress.
    await setRoute(
      ctx,
      ingressName,
      { host: ctx.config.sessionHost, path: routePath(name), serviceName: backend },
      true,
    );
    pass.condition({
      type: SessionCondition.routed,
      status: 'True',
      reason: 'RouteAdded',
      message: `path ${routePath(name)} in ingress ${ingressName}`,
    });

    if (injectNow) this.recordInjection(session, pass);
    else if (eager)
      pass.condition({
        type: SessionCondition.envInjected,
        status: 'Unknown',
        reason: 'WaitingForInstance',
        message: 'the reserved instance is not ready yet',
      });
    else
      pass.condition({
        type: SessionCondition.envInjected,
        status: 'True',
        reason: 'PodEnvironment',
        message: 'values set in the pod specification',
      });

    // 6. Readiness and URL.
    if (deploymentReady(workload)) {
      pass.status.url = sessionUrl(ctx.config, name);
      pass.status.phase = 'Running';
      pass.condition({
        type: SessionCondition.ready,
        status: 'True',
        reason: 'PodReady',
        message: 'the IDE pod is ready',
      });
    } else {
      pass.status.phase = 'Starting';
      pass.condition({
        type: SessionCondition.ready,
        status: 'False',
        reason: 'PodNotReady',
        message: 'waiting for the IDE pod',
      });
      pass.requeue(5000);
    }
  }

  private checkLimits(session: Session, appDefinition: AppDefinition): void {
    const all = this.ctx.cache.sessions.list();
    const created = (s: Session) => new Date(s.metadata.creationTimestamp ?? 0).getTime();
    // Only sessions created before this one count: the decision is the same whichever is reconciled first.
    const earlier = all.filter(
      (s) =>
        s.metadata.name !== session.metadata.name &&
        (created(s) < created(session) || (created(s) === created(session) && s.metadata.name < session.metadata.name)),
    );
    const refusal = checkSessionLimits({
      appDefinition: { name: session.spec.appDefinition, maxInstances: appDefinition.spec.maxInstances },
      user: session.spec.user,
      sessions: earlier,
      sessionsPerUser: this.ctx.config.sessionsPerUser,
    });
    if (refusal) throw new FailObject(refusal.code, refusal.reason);
  }

  /**
   * One write of what the session's metadata must carry: the finalizer (before its route exists),
   * the start-strategy annotations and the Ingress its route goes to. Nothing when all is there.
   */
  private async writeMetadata(session: Session, pass: Pass, ingressName: string): Promise<void> {
    const finalizers = finalizersOf(session);
    const wanted: Record<string, string> = {
      [ANNOTATIONS.startStrategy]: pass.status.startStrategy ?? '',
      [ROUTE_ANNOTATION]: ingressName,
      ...(pass.status.instanceId ? { [ANNOTATIONS.instanceId]: pass.status.instanceId } : {}),
    };
    const annotations = session.metadata.annotations ?? {};
    const changed = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => annotations[k] !== v));
    const needsFinalizer = !finalizers.includes(SESSION_FINALIZER);
    if (!needsFinalizer && Object.keys(changed).length === 0) return;
    try {
      const updated = await this.ctx.resources.sessions.mergePatch(session.metadata.name, {
        metadata: {
          annotations: changed,
          // The finalizer list is replaced whole: only against the version read, so no one's is lost.
          ...(needsFinalizer
            ? { finalizers: [...finalizers, SESSION_FINALIZER], resourceVersion: session.metadata.resourceVersion }
            : {}),
        },
      });
      this.ctx.cache.sessions.observe(updated);
      session.metadata = { ...session.metadata, ...updated.metadata };
    } catch (error) {
      if (isConflict(error)) throw new RetryLater('session changed while its metadata was written', 50);
      throw error;
    }
  }

  private async chooseStrategy(
    session: Session,
    appDefinition: AppDefinition,
    claimName: string | undefined,
    pass: Pass,
  ): Promise<k8s.V1Deployment | undefined> {
    const { ctx } = this;
    let instance: PoolInstance | undefined;
    if (ctx.config.eagerStart) {
      const minInstances = dataBridgeEnabled(appDefinition.spec) ? appDefinition.spec.minInstances : 0;
      instance =
        findReservation(ctx, appDefinition.metadata.name, session) ??
        (await reserveInstance(ctx, appDefinition, minInstances, session, claimName));
      if (instance) {
        pass.status.startStrategy = 'eager';
        pass.status.instanceId = String(instance.id);
        pass.condition({
          type: SessionCondition.reserved,
          status: 'True',
          reason: 'InstanceReserved',
          message: `warm instance ${instance.id}`,
        });
        this.poolChanged(appDefinition.metadata.name);
      } else {
        pass.status.startStrategy = 'lazy-fallback';
        pass.condition({
          type: SessionCondition.reserved,
          status: 'False',
          reason: 'PoolExhausted',
          message: 'no free warm instance; lazy start',
        });
        pass.events.push(['Normal', 'LazyStart', 'no free warm instance: starting lazily']);
      }
    } else {
      pass.status.startStrategy = 'lazy';
      pass.condition({
        type: SessionCondition.reserved,
        status: 'False',
        reason: 'EagerStartDisabled',
        message: 'lazy start',
      });
      pass.events.push(['Normal', 'LazyStart', 'starting lazily']);
    }
    pass.status.phase = 'Starting';
    return instance?.deployment;
  }

  /** Sidecars first (their Service names resolve at IDE start), then the IDE Deployment and Service. */
  private async applyLazyResources(
    session: Session,
    appDefinition: AppDefinition,
    claimName: string | undefined,
    configStore: string | undefined,
  ): Promise<k8s.V1Deployment> {
    const { ctx } = this;
    const name = session.metadata.name;
    const owners = [ownerReference(session as Parameters<typeof ownerReference>[0])];
    const labels = sessionLabels(session);
    const podApp = sessionPodApp(session);
    const ideService = service({
      name,
      namespace: ctx.namespace,
      labels,
      owners,
      podApp,
      targetPort: ctx.config.authProxyPort,
    });
    // A running session keeps its pods: once its Deployment exists it is not rebuilt from a newer
    // app definition generation (the Deployment is applied in one call, so it exists only whole).
    const existing = ctx.cache.deployments.get(name);
    if (existing && !existing.metadata?.deletionTimestamp) {
      // Level-triggered, but not a write per pass: the Service is applied again only when it is gone.
      if (!ctx.cache.services.get(name)) ctx.cache.services.observe(await applyObject(ctx.objects, ideService));
      return existing;
    }
    await applySidecars(ctx, appDefinition, { ownerName: name, labels, owners, claimName });
    const applied = await applyObject(
      ctx.objects,
      deployment({
        name,
        namespace: ctx.namespace,
        labels,
        annotations: { [ANNOTATIONS.appDefinitionGeneration]: String(appDefinition.metadata.generation ?? 0) },
        owners,
        template: sessionPodTemplate({
          appDefinition,
          config: ctx.config,
          podApp,
          env: lazyEnv(session),
          envFrom: lazyEnvFrom(session),
          claimName,
          configStore,
          sessionSecret: session.spec.sessionSecret,
          templateLabels: { [LABELS.session]: name },
        }),
      }),
    );
    ctx.cache.services.observe(await applyObject(ctx.objects, ideService));
    return applied;
  }

  private startInjection(
    session: Session,
    appDefinition: AppDefinition,
    instanceName: string,
    claimName: string | undefined,
  ): void {
    const current = findCondition(session.status?.conditions, SessionCondition.envInjected);
    if (current?.status === 'True' || (current?.status === 'False' && current.reason === 'InjectionFailed')) return;
    const selector = `${LABELS.poolInstance}=${instanceName}${claimName ? `,${LABELS.session}=${session.metadata.name}` : ''}`;
    this.injector.ensure(session, { podSelector: selector, port: dataBridgePort(appDefinition.spec) });
  }

  /** The injection's state as the EnvInjected condition; counts only in final states, so waiting writes nothing. */
  private recordInjection(session: Session, pass: Pass): void {
    const current = findCondition(pass.status.conditions, SessionCondition.envInjected);
    if (current?.status === 'True' || (current?.status === 'False' && current.reason === 'InjectionFailed')) return;
    const state = this.injector.state(session.metadata.uid ?? session.metadata.name);
    if (!state) return;
    const max = this.ctx.config.bridgeHealthAttempts;
    const detail = `health checks ${state.attempts}/${max}, posts ${state.postAttempts}${state.lastError ? `, last error: ${state.lastError}` : ''}`;
    if (state.phase === 'Injected') {
      pass.condition({ type: SessionCondition.envInjected, status: 'True', reason: 'Injected', message: detail });
    } else if (state.phase === 'Failed') {
      pass.condition({
        type: SessionCondition.envInjected,
        status: 'False',
        reason: 'InjectionFailed',
        message: detail,
      });
      pass.events.push(['Warning', 'InjectionFailed', `data injection failed (${detail})`]);
    } else {
      // One condition for every step before the end, so the steps cost no status write.
      pass.condition({
        type: SessionCondition.envInjected,
        status: 'Unknown',
        reason: 'Injecting',
        message: 'sending the values to the data bridge',
      });
    }
  }

  private async finalize(session: Session): Promise<Reconciled> {
    const { ctx } = this;
    const name = session.metadata.name;
    if (!finalizersOf(session).includes(SESSION_FINALIZER)) return;
    if (session.status?.phase !== 'Stopping' && session.status?.phase !== 'Failed') {
      // The answer's resourceVersion is the one the finalizer's removal below must carry.
      const stopping = await ctx.resources.sessions.patchStatus(name, { phase: 'Stopping' }).catch(() => undefined);
      if (stopping) {
        ctx.cache.sessions.observe(stopping);
        session.metadata.resourceVersion = stopping.metadata.resourceVersion;
      }
    }
    const ingressName = session.metadata.annotations?.[ROUTE_ANNOTATION];
    if (ingressName) {
      await setRoute(ctx, ingressName, { host: ctx.config.sessionHost, path: routePath(name), serviceName: '' }, false);
    }
    this.injector.forget(session.metadata.uid ?? name);
    try {
      await ctx.resources.sessions.mergePatch(name, {
        metadata: {
          finalizers: finalizersOf(session).filter((f) => f !== SESSION_FINALIZER),
          resourceVersion: session.metadata.resourceVersion,
        },
      });
    } catch (error) {
      if (isConflict(error)) return { requeueAfterMs: 50 };
      if (!isNotFound(error)) throw error;
    }
    this.poolChanged(session.spec.appDefinition);
  }

  /** Writes what changed; lastActivity belongs to the service and is never written here. */
  private async writeStatus(session: Session, status: SessionStatus): Promise<void> {
    const { lastActivity: _ignored, ...next } = status;
    const { lastActivity: _before, ...previous } = session.status ?? {};
    void _ignored;
    void _before;
    if (sameStatus(previous, next)) return;
    try {
      this.ctx.cache.sessions.observe(await this.ctx.resources.sessions.patchStatus(session.metadata.name, next));
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
  }
}

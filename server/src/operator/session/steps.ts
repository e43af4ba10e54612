/**
 * The numbered steps of a Session's pass, one function each, in the order the reconciler calls them.
 * Each reads what it needs from the caches, writes with optimistic concurrency and records what it
 * learnt in the pass; a step whose part is not ready throws RetryLater, one that cannot serve the
 * session throws FailObject.
 */
import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { CustomResourceClient } from '../../kube/resources.js';
import { ANNOTATIONS, LABELS, OPERATOR_MANAGER, SESSION_FINALIZER } from '../../model/api-group.js';
import {
  dataBridgeEnabled,
  dataBridgePort,
  effectiveMinInstances,
  startDeadlineSeconds,
  type AppDefinition,
} from '../../model/app-definition.js';
import { findCondition, type Condition } from '../../model/conditions.js';
import { ErrorCode } from '../../model/error-codes.js';
import { checkSessionLimits } from '../../model/limits.js';
import { configStoreName } from '../../model/names.js';
import { envSourcesRefusal, type EnvSourceKind } from '../../model/session-env.js';
import {
  decidedStartStrategy,
  isSessionFailed,
  SessionCondition,
  SessionReadyReason,
  type Session,
} from '../../model/session.js';
import { ownClaimName, takesWarmClaim, type Workspace } from '../../model/workspace.js';
import { AUTH_PROXY_ADMISSION_PORT_NAME, AUTH_PROXY_CONTAINER, checksIdentity } from '../auth-proxy.js';
import type { OperatorConfig } from '../config.js';
import {
  bridgeTokenSecretName,
  COMPONENT,
  deployment,
  lazyAllowedUsers,
  lazyEnv,
  lazyEnvFrom,
  newBridgeToken,
  ownerReference,
  poolInstanceName,
  routePath,
  service,
  sessionLabels,
  sessionPodApp,
  SESSION_BRIDGE_TOKEN_KEY,
  sessionEnvSecret,
  sessionPodTemplate,
  sessionUrl,
} from '../manifests.js';
import { claimOfAnotherUser, type ClaimDeps } from '../pool/claims.js';
import { applySidecars, type PoolInstance, type PoolInstances } from '../pool/instances.js';
import type { RouteTable } from '../routes/routes.js';
import { deploymentReady, finalizersOf } from '../runtime/objects.js';
import { Delay, FailObject, RetryLater } from '../runtime/outcome.js';
import { byCreation } from '../../model/admission.js';
import { admitLazyStart, startDeadlineOf, type LazyStartGate } from './admission.js';
import { ROUTE_ANNOTATION } from './finalize.js';
import type { DataInjector } from './injection.js';
import { podVerdict, startDeadlineFailure } from './start-failure.js';
import type { Pass } from './status.js';
import { claimTakenBy, takeStandbyClaim } from '../standby/claims.js';

/** What the steps use: the caches they read, the clients they write with, and their collaborators. */
export interface SessionStepDeps {
  config: OperatorConfig;
  namespace: string;
  sessions: Informer<Session>;
  appDefinitions: Pick<Informer<AppDefinition>, 'find'>;
  workspaces: Pick<Informer<Workspace>, 'find'>;
  deployments: Pick<Informer<k8s.V1Deployment>, 'get' | 'observe'>;
  /** The pods IDE Cloud manages: what a starting session's pods are in (session/start-failure.ts). */
  pods: Pick<Informer<k8s.V1Pod>, 'list'>;
  services: Pick<Informer<k8s.V1Service>, 'get' | 'observe'>;
  /** The sessions' config stores: one gone is made again. */
  configStores: Pick<Informer<k8s.V1ConfigMap>, 'get' | 'observe'>;
  /** Confirm a cache miss: the service creates a workspace an instant before its session. */
  appDefinitionsApi: Pick<CustomResourceClient<'appDefinition'>, 'find'>;
  workspacesApi: Pick<CustomResourceClient<'workspace'>, 'find'>;
  sessionsApi: Pick<CustomResourceClient<'session'>, 'mergePatch'>;
  /** Applies config stores and a lazy session's objects. */
  objects: k8s.KubernetesObjectApi;
  pool: Pick<PoolInstances, 'findReservation' | 'reserve' | 'reservedFor'>;
  /** The claims IDE Cloud manages: the standby claims a new workspace's lazy start takes. */
  claims: ClaimDeps['claims'];
  core: Pick<k8s.CoreV1Api, 'patchNamespacedPersistentVolumeClaim'>;
  routes: RouteTable;
  injector: Pick<DataInjector, 'ensure' | 'state' | 'attempted'>;
  /** Tells the pool its counts changed (a reservation); the app definition's pass follows shortly. */
  poolChanged: (appDefinitionName: string) => void;
  /** The metadata of a Secret or ConfigMap a session names for its environment (undefined: none such). */
  envSource: (kind: EnvSourceKind, name: string) => Promise<{ labels?: Record<string, string> } | undefined>;
  /**
   * Sessions this process let past the limits whose decision its cache does not show yet (until
   * their status or metadata write): counted by every later check, so two passes at once cannot both pass.
   */
  limitsPassed: Set<string>;
  /**
   * The session (uid) this process let claim a warm instance for each new workspace, until the
   * instance's reservation is in the cache: two passes at once never reserve two for one workspace.
   */
  newWorkspaceClaimants: Map<string, string>;
  /** The lazy-start gate (session/admission.ts); absent: lazy starts go at once. */
  admission?: LazyStartGate;
  /** The clock of the start deadline and the pull bound (ms since the epoch). */
  now?: () => number;
}

/** What the guards found. */
export interface Guarded {
  appDefinition: AppDefinition;
  /** The claim the session's pod mounts; a new workspace's lazy start may take a standby claim (step 1). */
  claimName?: string;
  /**
   * The session's workspace is new (a launch made it, no claim yet, no other session): a warm
   * instance serves it as it is, and the instance's claim becomes the workspace's; or, started
   * lazily, a standby claim becomes it.
   */
  newWorkspace?: Workspace;
}

/**
 * Guards: the app definition and the workspace exist, a session that has not served is within its
 * start deadline, a decision already made is taken up, limits hold (checked once, before a start
 * strategy), conditions are Unknown on the first visit.
 */
export async function guards(deps: SessionStepDeps, session: Session, pass: Pass): Promise<Guarded> {
  const appDefinition = await deps.appDefinitions.find(session.spec.appDefinition, (n) =>
    deps.appDefinitionsApi.find(n),
  );
  if (!appDefinition) {
    throw new FailObject(ErrorCode.unknownAppDefinition, `unknown app definition ${session.spec.appDefinition}`);
  }
  checkStartDeadline(deps, session, appDefinition);
  let claimName: string | undefined;
  let newWorkspace: Workspace | undefined;
  if (session.spec.workspace) {
    // The service creates the workspace just before the session, and the two come by different
    // watches: a cache miss is confirmed with the API server before the session fails on it.
    const workspace = await deps.workspaces.find(session.spec.workspace, (n) => deps.workspacesApi.find(n));
    if (!workspace || workspace.metadata.deletionTimestamp) {
      throw new FailObject(ErrorCode.unknownWorkspace, `unknown workspace ${session.spec.workspace}`);
    }
    // The status names the claim once the workspace's pass has; until then a standby claim it took
    // (a lazy start's, before a crash) is its claim.
    claimName = workspace.status?.claimName ?? claimTakenBy(deps.claims, workspace) ?? ownClaimName(workspace);
    if (claimOfAnotherUser(deps.claims, claimName, workspace)) {
      throw new FailObject(
        ErrorCode.forbidden,
        `the claim of workspace ${workspace.metadata.name} holds another user's work`,
      );
    }
    if (takesWarmClaim(workspace)) {
      // One warm claim per new workspace: a later session waits until the workspace has its claim
      // (another session's instance's, taken over, or its own), then mounts it on a pod of its own.
      const other = claimingSessionOf(deps, session, workspace.metadata.name);
      if (other) throw new RetryLater(`workspace ${workspace.metadata.name} is getting its claim (${other})`);
      deps.newWorkspaceClaimants.set(workspace.metadata.name, session.metadata.uid ?? '');
      newWorkspace = workspace;
    } else deps.newWorkspaceClaimants.delete(workspace.metadata.name);
  }
  // A decision already made is in the status or, if the pass that made it ended before its status was
  // written, in the annotations or the world (takeUpDecision): it is not checked against the limits again.
  if (!pass.status.startStrategy) takeUpDecision(deps, session, appDefinition, pass);
  if (!pass.status.startStrategy) {
    checkLimits(deps, session, appDefinition);
    await checkEnvSources(deps, session);
  }
  // First visit (no Ready condition yet): every condition Unknown, phase Pending.
  if (!findCondition(pass.status.conditions, SessionCondition.ready)) {
    pass.status.phase = 'Pending';
    for (const type of Object.values(SessionCondition)) {
      if (!findCondition(pass.status.conditions, type))
        pass.condition({ type, status: 'Unknown', reason: SessionReadyReason.pending });
    }
  }
  return { appDefinition, claimName, ...(newWorkspace ? { newWorkspace } : {}) };
}

/**
 * What makes a new workspace's claim for it, other than this session: a warm instance another session
 * reserved for it (its claim awaits the takeover), a live session of it created before this one, or
 * one this process let claim a warm instance for it a moment ago (its reservation not cached yet).
 */
function claimingSessionOf(deps: SessionStepDeps, session: Session, workspace: string): string | undefined {
  const instance = deps.pool
    .reservedFor(workspace)
    // Not this session's own reservation (by uid: a session of the same name before it is another).
    .find((i) => i.reservedBy?.uid !== session.metadata.uid);
  if (instance) return `warm instance ${instance.name}`;
  const claimant = deps.newWorkspaceClaimants.get(workspace);
  const live = (s: Session) =>
    s.spec.workspace === workspace &&
    s.metadata.uid !== session.metadata.uid &&
    !s.metadata.deletionTimestamp &&
    !isSessionFailed(s);
  return deps.sessions.list().find((s) => live(s) && (byCreation(s, session) < 0 || s.metadata.uid === claimant))
    ?.metadata.name;
}

/**
 * A decision made by a pass whose status was not written (a crash, a failed write): from the
 * annotations, else from the world, as a warm launch writes its annotations only after the status
 * that carries its URL. The instance reserved for the session (its label and the ownerReference with
 * the session's uid: pool/instances.ts) says eager and which; a Deployment of the session's own says
 * lazy (a fallback when eager start is on). Nothing found: not decided, the pass decides.
 */
function takeUpDecision(deps: SessionStepDeps, session: Session, appDefinition: AppDefinition, pass: Pass): void {
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
 * Whatever keeps a session from serving (a pod that never gets ready, a step that retries), it fails
 * at its start deadline; one that has served (has its URL) is past its start.
 */
function checkStartDeadline(deps: SessionStepDeps, session: Session, appDefinition: AppDefinition): void {
  if (session.status?.url) return;
  const seconds = startDeadlineSeconds(appDefinition.spec);
  const at = startDeadlineOf(session, seconds);
  if (at !== undefined && (deps.now ?? Date.now)() >= at) {
    const failure = startDeadlineFailure(seconds);
    throw new FailObject(failure.code, failure.message, failure.reason);
  }
}

/**
 * Counts the active sessions that come before this one: those created earlier (by creation time, then
 * name: the same order whichever is reconciled first) and those already past this check, which a
 * later-named session of the same second must count too (timestamps have one-second resolution).
 */
function checkLimits(deps: SessionStepDeps, session: Session, appDefinition: AppDefinition): void {
  const decided = (s: Session) => !!decidedStartStrategy(s) || deps.limitsPassed.has(s.metadata.name);
  const earlier = deps.sessions
    .list()
    .filter((s) => s.metadata.name !== session.metadata.name && (decided(s) || byCreation(s, session) < 0));
  const refusal = checkSessionLimits({
    appDefinition: { name: session.spec.appDefinition, maxInstances: appDefinition.spec.maxInstances },
    user: session.spec.user,
    sessions: earlier,
    sessionsPerUser: deps.config.sessionsPerUser,
  });
  if (refusal) throw new FailObject(refusal.code, refusal.reason);
  deps.limitsPassed.add(session.metadata.name);
}

/** Every Secret and ConfigMap the session names must be marked for session use (model/session-env.ts). */
async function checkEnvSources(deps: SessionStepDeps, session: Session): Promise<void> {
  const refusal = await envSourcesRefusal(
    { configMaps: session.spec.envVarsFromConfigMaps, secrets: session.spec.envVarsFromSecrets },
    deps.envSource,
  );
  if (refusal) throw new FailObject(refusal.code, refusal.reason);
}

/**
 * 1. Start strategy: a warm instance when eager start is on, one is free and the session's workspace,
 * if any, holds no work yet (a new one, whose claim the instance's becomes); else lazy: a workspace
 * that may hold work gets a pod of its own, mounting its claim, and a new one takes a bound standby
 * claim if there is one (`guarded.claimName`). The reservation is written on the instance (the
 * claim), a standby claim's taking on the claim, both before the decision is told; the decision goes
 * into the status and, as annotations, into the session's metadata (`writeMetadata`): before
 * anything is created on the lazy path, after the status that carries the URL on a warm launch.
 */
export async function chooseStrategy(
  deps: SessionStepDeps,
  session: Session,
  guarded: Guarded,
  pass: Pass,
): Promise<k8s.V1Deployment | undefined> {
  const { appDefinition, claimName, newWorkspace } = guarded;
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
      guarded.claimName = (await takeStandbyClaim(deps, newWorkspace)) ?? claimName;
    }
    pass.status.phase = 'Starting';
  }
  tellStrategy(pass, holdsWork);
  return instance?.deployment;
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
        { type: SessionCondition.reserved, status: 'True', reason: 'InstanceReserved', message: `warm instance ${id}` },
        { reason: 'Reserved', message: `warm instance ${id} reserved` },
      );
      return;
    case 'lazy-fallback':
      pass.condition(
        {
          type: SessionCondition.reserved,
          status: 'False',
          reason: 'PoolExhausted',
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
              reason: 'WorkspaceHoldsWork',
              message: 'the workspace may hold work: a pod of its own mounts its claim',
            }
          : { type: SessionCondition.reserved, status: 'False', reason: 'EagerStartDisabled', message: 'lazy start' },
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
export async function writeMetadata(
  deps: SessionStepDeps,
  session: Session,
  pass: Pass,
  ingressName: string,
  moment: MetadataMoment,
): Promise<void> {
  const strategy = pass.status.startStrategy;
  if (!strategy) return;
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

/** 2. Config store, when the app definition asks for one; its name, or undefined. */
export async function applyConfigStore(
  deps: SessionStepDeps,
  session: Session,
  appDefinition: AppDefinition,
): Promise<string | undefined> {
  if (appDefinition.spec.options?.configStore !== 'true') return undefined;
  const configStore = configStoreName(session.metadata.name);
  // Routed means a pass got past this step (it comes before the route): not a write per pass, unless
  // the store is gone since (its deletion wakes the session: operator.ts).
  const routed = findCondition(session.status?.conditions, SessionCondition.routed)?.status === 'True';
  if (routed && deps.configStores.get(configStore)) return configStore;
  const applied = await applyObject(deps.objects, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: configStore,
      namespace: deps.namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...sessionLabels(session) },
      ownerReferences: [ownerReference(session as Parameters<typeof ownerReference>[0])],
    },
  } as k8s.V1ConfigMap);
  deps.configStores.observe(applied);
  return configStore;
}

/** What serves the session: the Service its route points to and the Deployment behind it. */
export interface Workload {
  eager: boolean;
  backend: string;
  deployment?: k8s.V1Deployment;
}

/**
 * 3. Resources of the session: the reserved warm instance (eager), or its own objects (lazy), once
 * past the lazy-start gate (session/admission.ts).
 */
export async function provision(
  deps: SessionStepDeps,
  session: Session,
  { appDefinition, claimName }: Guarded,
  pass: Pass,
  reserved: k8s.V1Deployment | undefined,
  configStore: string | undefined,
): Promise<Workload> {
  const name = session.metadata.name;
  if (pass.status.startStrategy === 'eager') {
    const instanceName = poolInstanceName(appDefinition.metadata.name, Number(pass.status.instanceId));
    const workload = reserved ?? deps.deployments.get(instanceName);
    if (!workload || workload.metadata?.labels?.[LABELS.session] !== name) {
      throw new FailObject(ErrorCode.internal, `warm instance ${instanceName} is no longer reserved for this session`);
    }
    return { eager: true, backend: instanceName, deployment: workload };
  }
  admitLazyStart(deps, session, pass);
  const workload = await applyLazyResources(deps, session, appDefinition, claimName, configStore);
  return { eager: false, backend: name, deployment: workload };
}

/**
 * The session's Secret first (its values, referenced from the pod: never in the pod spec in plain
 * text), then the sidecars (their Service names resolve at IDE start), then the IDE Deployment and
 * Service. The Secret is applied once, with the Deployment: a running session's pods keep theirs.
 */
async function applyLazyResources(
  deps: SessionStepDeps,
  session: Session,
  appDefinition: AppDefinition,
  claimName: string | undefined,
  configStore: string | undefined,
): Promise<k8s.V1Deployment> {
  const name = session.metadata.name;
  const owners = [ownerReference(session as Parameters<typeof ownerReference>[0])];
  const labels = sessionLabels(session);
  const podApp = sessionPodApp(session);
  const ideService = service({
    name,
    namespace: deps.namespace,
    labels,
    owners,
    podApp,
    targetPort: deps.config.authProxyPort,
  });
  // A running session keeps its pods: once its Deployment exists it is not rebuilt from a newer
  // app definition generation (the Deployment is applied in one call, so it exists only whole).
  const existing = deps.deployments.get(name);
  if (existing && !existing.metadata?.deletionTimestamp) {
    // Level-triggered, but not a write per pass: the Service is applied again only when it is gone.
    if (!deps.services.get(name)) deps.services.observe(await applyObject(deps.objects, ideService));
    return existing;
  }
  await applySessionSecret(deps, session, dataBridgeEnabled(appDefinition.spec));
  await applySidecars(deps, appDefinition, { ownerName: name, labels, owners, claimName });
  const applied = await applyObject(
    deps.objects,
    deployment({
      name,
      namespace: deps.namespace,
      labels,
      annotations: { [ANNOTATIONS.appDefinitionGeneration]: String(appDefinition.metadata.generation ?? 0) },
      owners,
      template: sessionPodTemplate({
        appDefinition,
        config: deps.config,
        podApp,
        env: lazyEnv(session, appDefinition),
        envFrom: lazyEnvFrom(session),
        claimName,
        configStore,
        allowedUsers: lazyAllowedUsers(session),
        templateLabels: { [LABELS.session]: name },
      }),
    }),
  );
  // Into the cache at once: a pass that comes before the Deployment's watch event must not apply it all again.
  deps.deployments.observe(applied);
  deps.services.observe(await applyObject(deps.objects, ideService));
  return applied;
}

/**
 * The session's Secret, written only when it is missing or differs. Its bridge token is the session's
 * for good: a pass that comes again before the Deployment is seen (or after a restart between the two
 * writes) keeps the token the Secret holds, since a pod may already have started with it and the
 * operator reaches that pod's bridge with the Secret's token. A new one only for a Secret that is not
 * this session's (a namesake's left to the garbage collector).
 */
async function applySessionSecret(deps: SessionStepDeps, session: Session, bridge: boolean): Promise<void> {
  const wanted = sessionEnvSecret(session, deps.namespace);
  const current = await readObject<k8s.V1Secret>(deps.objects, wanted);
  const own = current?.metadata?.ownerReferences?.some((o) => o.uid === session.metadata.uid) ?? false;
  const kept = own ? current?.data?.[SESSION_BRIDGE_TOKEN_KEY] : undefined;
  if (bridge) {
    wanted.data![SESSION_BRIDGE_TOKEN_KEY] = kept ?? Buffer.from(newBridgeToken()).toString('base64');
  }
  if (own && sameData(current?.data, wanted.data)) return;
  await applyObject(deps.objects, wanted);
}

async function readObject<T extends k8s.KubernetesObject>(
  objects: k8s.KubernetesObjectApi,
  spec: T,
): Promise<T | undefined> {
  try {
    return (await objects.read(spec as k8s.KubernetesObject & { metadata: { name: string } })) as T;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

function sameData(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const left = Object.entries(a ?? {});
  return left.length === Object.keys(b ?? {}).length && left.every(([k, v]) => b?.[k] === v);
}

/**
 * 4. Environment, eager path: pushed to the data bridge in the background, started before the
 * route, only once the reserved instance's current pod serves (a recycled instance can still show its
 * previous pod, another user's, which must never receive these values). Returns undefined when no
 * injection runs, else its first try, which the reconciler waits for no longer than the route's write
 * (the URL never waits for a bridge): when it ends first, the status that carries the URL carries
 * EnvInjected too, in one status write.
 */
export function startInjection(
  deps: SessionStepDeps,
  session: Session,
  { appDefinition }: Guarded,
  workload: Workload,
): Promise<void> | undefined {
  if (!workload.eager || !deploymentReady(workload.deployment)) return undefined;
  if (injectionEnded(session.status?.conditions)) return Promise.resolve();
  const admissionPort = admissionPortOf(workload.deployment);
  deps.injector.ensure(session, {
    podSelector: `${LABELS.poolInstance}=${workload.backend}`,
    port: dataBridgePort(appDefinition.spec),
    tokenSecret: bridgeTokenSecretName(workload.backend),
    ...(admissionPort === undefined ? {} : { admissionPort }),
  });
  return deps.injector.attempted(session.metadata.uid ?? session.metadata.name);
}

/**
 * The port of the proxy's admission in the instance's pod template: present with an identity provider
 * on instances of this shape (auth-proxy.ts); an older instance's bridge writes the proxy's file.
 */
function admissionPortOf(deployment: k8s.V1Deployment | undefined): number | undefined {
  const proxy = deployment?.spec?.template.spec?.containers.find((c) => c.name === AUTH_PROXY_CONTAINER);
  return proxy?.ports?.find((p) => p.name === AUTH_PROXY_ADMISSION_PORT_NAME)?.containerPort;
}

/** 5. Route in the shared Ingress. */
export async function route(
  deps: SessionStepDeps,
  session: Session,
  { appDefinition }: Guarded,
  workload: Workload,
  pass: Pass,
): Promise<void> {
  const ingressName = appDefinition.spec.ingressname;
  const path = routePath(session);
  await deps.routes.set(ingressName, { host: deps.config.sessionHost, path, serviceName: workload.backend }, true);
  pass.condition(
    {
      type: SessionCondition.routed,
      status: 'True',
      reason: 'RouteAdded',
      message: `path ${path} in ingress ${ingressName}`,
    },
    // The path carries the session's key: the Event names the Ingress only.
    { reason: 'Routed', message: `route added to ingress ${ingressName}` },
  );
}

/** 4 (cont.). The environment's state as the EnvInjected condition. */
export function recordEnvironment(
  deps: SessionStepDeps,
  session: Session,
  workload: Workload,
  injecting: boolean,
  pass: Pass,
): void {
  if (injecting) recordInjection(deps, session, pass);
  else if (workload.eager)
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'Unknown',
      reason: 'WaitingForInstance',
      message: 'the reserved instance is not ready yet',
    });
  else
    pass.condition(
      {
        type: SessionCondition.envInjected,
        status: 'True',
        reason: 'PodEnvironment',
        message: "values in the session's Secret, referenced from the pod",
      },
      { reason: 'Injected', message: "values in the session's Secret, referenced from the pod" },
    );
}

/** The injection's state as the EnvInjected condition; counts only in final states, so waiting writes nothing. */
function recordInjection(deps: SessionStepDeps, session: Session, pass: Pass): void {
  if (injectionEnded(pass.status.conditions)) return;
  const state = deps.injector.state(session.metadata.uid ?? session.metadata.name);
  if (!state) return;
  const max = deps.config.bridgeHealthAttempts;
  const detail = `health checks ${state.attempts}/${max}, posts ${state.postAttempts}${state.lastError ? `, last error: ${state.lastError}` : ''}`;
  if (state.phase === 'Injected') {
    pass.condition(
      { type: SessionCondition.envInjected, status: 'True', reason: 'Injected', message: detail },
      { reason: 'Injected', message: `values delivered to the data bridge (posts ${state.postAttempts})` },
    );
  } else if (state.phase === 'Failed') {
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'False',
      reason: 'InjectionFailed',
      message: detail,
    });
    // Warn and continue: the session serves without its values.
    pass.event('Warning', 'InjectionFailed', `data injection failed (${detail})`);
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

/**
 * 6. Readiness and URL. While the pod starts, its state is looked at (session/start-failure.ts): an
 * unrecoverable one fails the session at once; else the pass looks again at the start deadline, or
 * sooner at a pull error's bound. Every change of the pods or the Deployment wakes the session
 * before that (operator.ts). Once the pod is Ready, a starting session's URL waits for the ingress to
 * serve its route (routes/served.ts, when configured): the ingress has no event to wait for, so the
 * pass asks it again shortly, a few times at most.
 */
export async function readiness(
  deps: SessionStepDeps,
  session: Session,
  { appDefinition }: Guarded,
  workload: Workload,
  pass: Pass,
): Promise<void> {
  const starting = !session.status?.url;
  if (deploymentReady(workload.deployment)) {
    if (starting && admitsThroughBridge(deps.config, workload) && !injectionEnded(pass.status.conditions)) {
      pass.status.phase = 'Starting';
      pass.condition({
        type: SessionCondition.ready,
        status: 'False',
        reason: SessionReadyReason.userNotAdmitted,
        message: "the IDE pod is ready; waiting for its proxy to admit the session's user (the injection)",
      });
      // The injection's end wakes the session (session/injection.ts): this bound is a fallback only.
      throw new RetryLater("waiting for the proxy to admit the session's user", Delay.podStarting);
    }
    if (starting && !(await deps.routes.served(deps.config.sessionHost, routePath(session)))) {
      pass.status.phase = 'Starting';
      pass.condition({
        type: SessionCondition.ready,
        status: 'False',
        reason: SessionReadyReason.routeNotServed,
        message: 'the IDE pod is ready; waiting for the ingress to serve the route',
      });
      throw new RetryLater('waiting for the ingress to serve the route', Delay.routeServed);
    }
    pass.status.url = sessionUrl(deps.config, session);
    pass.status.phase = 'Running';
    pass.condition(
      {
        type: SessionCondition.ready,
        status: 'True',
        reason: SessionReadyReason.podReady,
        message: 'the IDE pod is ready',
      },
      { reason: 'Ready', message: 'the IDE pod is ready: the session serves its URL' },
    );
    return;
  }
  // A session that has served is past its start: a pod of its that restarts is not a failed start.
  pass.status.phase = 'Starting';
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
 * Whether the session's proxy admits its user only once the data bridge wrote them in: a warm
 * instance's, with an identity provider (auth-proxy.ts). Its URL waits for the injection to end, so
 * the student never meets the proxy's 403 in the moment between the two.
 */
export function admitsThroughBridge(config: Pick<OperatorConfig, 'sessionIssuer'>, workload: Workload): boolean {
  return workload.eager && checksIdentity(config);
}

/** The injection ended (the values delivered, or given up on): EnvInjected True, or False for a failure. */
function injectionEnded(conditions: readonly Condition[] | undefined): boolean {
  const injected = findCondition(conditions, SessionCondition.envInjected);
  return injected?.status === 'True' || (injected?.status === 'False' && injected.reason === 'InjectionFailed');
}

/**
 * The IDE pods of a session, from the cache: a lazy session's own (its `session` label; its
 * sidecars' pods carry none), or its warm instance's.
 */
function sessionPods(deps: SessionStepDeps, session: Session, workload: Workload): k8s.V1Pod[] {
  const name = session.metadata.name;
  return deps.pods.list().filter((pod) => {
    const labels = pod.metadata?.labels ?? {};
    if (!workload.eager) return labels[LABELS.session] === name && labels[LABELS.component] === COMPONENT.session;
    return labels[LABELS.poolInstance] === workload.backend;
  });
}

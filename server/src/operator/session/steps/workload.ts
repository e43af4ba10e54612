/**
 * 2. The config store and 3. the workload that serves the session: its reserved warm instance (eager),
 * or its own Secret, sidecars, pod and Service (lazy), once past the lazy-start gate.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  apiAnswer,
  apiStatus,
  applyObject,
  isConflict,
  isNotFound,
  undefinedIfNotFound,
} from '../../../kube/client.js';
import { ANNOTATIONS, FIELD_MANAGER, LABELS, OPERATOR_MANAGER } from '../../../model/api-group.js';
import { dataBridgeEnabled } from '../../../model/app-definition.js';
import { findCondition } from '../../../model/conditions.js';
import { ErrorCode } from '../../../model/error-codes.js';
import { configStoreName } from '../../../model/names.js';
import { SessionCondition, SessionFailureReason, type Session } from '../../../model/session.js';
import {
  lazyAllowedUsers,
  lazyEnv,
  lazyEnvFrom,
  newBridgeToken,
  ownerReference,
  poolInstanceName,
  service,
  sessionLabels,
  sessionPod,
  sessionPodApp,
  SESSION_BRIDGE_TOKEN_KEY,
  sessionEnvSecret,
  sessionPodTemplate,
  sidecarName,
} from '../../manifests.js';
import { applySidecars } from '../../pool/instances.js';
import { Delay, FailObject, RetryLater } from '../../runtime/outcome.js';
import { admitLazyStart } from '../admission.js';
import { lazySessionPods, liveOwnWorkload, livePod, liveSessionPods } from '../own-workload.js';
import type { GuardedStep, SessionStepDeps, Workload } from './context.js';

/** 2. Config store, when the app definition asks for one: its name in `step.configStore`. */
export async function applyConfigStore(step: GuardedStep): Promise<void> {
  const { deps, session, appDefinition } = step;
  if (appDefinition.spec.options?.configStore !== 'true') return;
  const configStore = configStoreName(session.metadata.name);
  // Routed means a pass got past this step (it comes before the route): not a write per pass, unless
  // the store is gone since (its deletion wakes the session: session/watches.ts).
  const routed = findCondition(session.status?.conditions, SessionCondition.routed)?.status === 'True';
  if (routed && deps.configStores.get(configStore)) {
    step.configStore = configStore;
    return;
  }
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
  step.configStore = configStore;
}

/**
 * 3. Resources of the session: the reserved warm instance (eager), or its own objects (lazy), once
 * past the lazy-start gate (session/admission.ts).
 */
export async function provision(step: GuardedStep): Promise<Workload> {
  const { deps, session, pass, appDefinition, reserved } = step;
  const name = session.metadata.name;
  if (pass.status.startStrategy === 'eager') {
    const instanceName = poolInstanceName(appDefinition.metadata.name, Number(pass.status.instanceId));
    const instance = reserved ?? deps.pool.findReservation(appDefinition.metadata.name, session);
    if (!instance || instance.name !== instanceName) {
      throw new FailObject(ErrorCode.internal, `warm instance ${instanceName} is no longer reserved for this session`);
    }
    return { eager: true, backend: instanceName, deployment: instance.deployment };
  }
  admitLazyStart(deps, session, pass);
  await applyLazyResources(step);
  return { eager: false, backend: name };
}

/**
 * The session's Secret first (its values, referenced from the pod: never in the pod spec in plain
 * text), then the sidecars (their Service names resolve at IDE start), then the IDE pod and Service.
 * A live pod is kept as it is (a running session is not rebuilt from a newer app definition
 * generation); a pod lost (deleted, evicted, its node gone) is made again, as a ReplicaSet would,
 * from the app definition as it is then, with the session's Secret as it was.
 */
async function applyLazyResources(step: GuardedStep): Promise<void> {
  const { deps, session, appDefinition, claimName, configStore } = step;
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
  await deleteSpentPods(deps, session);
  if (liveOwnWorkload(deps, session)) {
    // Level-triggered, but not a write per pass: the Service is applied again only when it is gone.
    if (!deps.services.get(name)) deps.services.observe(await applyObject(deps.objects, ideService));
    return;
  }
  await applySessionSecret(deps, session, dataBridgeEnabled(appDefinition.spec));
  // A lost pod's sidecars run on: applied again only when one is missing (a newer app definition
  // would roll them out, and a sidecar's data would go).
  const sidecars = appDefinition.spec.sidecars ?? [];
  if (sidecars.some((sidecar) => !deps.deployments.get(sidecarName(name, sidecar)))) {
    await applySidecars(deps, appDefinition, { ownerName: name, labels, owners, claimName });
  }
  const pod = sessionPod({
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
  });
  // The pod and its Service side by side: neither needs the other, and each round trip of a lazy
  // start's first pass holds its launch (its status, then its URL) in a burst.
  const [created, appliedService] = await Promise.allSettled([
    deps.objects.create(pod, undefined, undefined, FIELD_MANAGER),
    deps.services.get(name) ? undefined : applyObject(deps.objects, ideService),
  ]);
  // Into the cache at once, whatever the Service's write did: a pass that comes before the pod's
  // watch event must not make another.
  if (created.status === 'fulfilled') deps.pods.observe(created.value);
  if (appliedService.status === 'fulfilled' && appliedService.value) deps.services.observe(appliedService.value);
  if (created.status === 'rejected') throw podRefusal(created.reason, !!session.status?.url) ?? created.reason;
  if (appliedService.status === 'rejected') throw appliedService.reason;
}

/** A Pod Security verdict as the API server words a refusal (it names rules and containers, never a value). */
const POD_SECURITY_VERDICT = /^pods? "[^"]*" is forbidden: (violates PodSecurity "[^"]*": .{1,600})/;

/**
 * What a pod create the API server refused means for the session. A refusal for good (422 invalid;
 * 403 of an admission policy: Pod Security, a webhook) fails a start, telling the API server's reason
 * and, of its message, only a Pod Security verdict (any other message can quote the object sent); a
 * session that has served waits instead, as a ReplicaSet would. A quota full waits too (the start
 * deadline bounds a start). Anything else (RBAC, a namespace being deleted) is no verdict on the pod:
 * undefined, the error goes on as it is.
 */
function podRefusal(error: unknown, served: boolean): FailObject | RetryLater | undefined {
  const status = apiStatus(error);
  if (status !== 403 && status !== 422) return undefined;
  const answer = apiAnswer(error);
  const message = typeof answer.message === 'string' ? answer.message : '';
  if (status === 403 && /exceeded quota/.test(message)) {
    return new RetryLater("the namespace's quota has no room for the IDE pod yet", Delay.podStarting);
  }
  const verdict = POD_SECURITY_VERDICT.exec(message)?.[1];
  if (status === 403 && !verdict && !/admission webhook "[^"]*" denied the request/.test(message)) return undefined;
  const why = typeof answer.reason === 'string' ? answer.reason : String(status);
  const reason = `the cluster refused the IDE pod (${why})${verdict ? `: ${verdict}` : ''}`;
  return served
    ? new RetryLater(reason, Delay.podStarting)
    : new FailObject(ErrorCode.internal, reason, SessionFailureReason.podRefused);
}

/**
 * Deletes the session's pods that will never serve it: ended ones (a pod evicted or whose node went
 * stays Failed), and live ones beyond the oldest (a create whose answer was lost, made again by a
 * later pass). Nothing to delete, no call.
 */
async function deleteSpentPods(deps: SessionStepDeps, session: Session): Promise<void> {
  const ended = lazySessionPods(deps.pods, session).filter((pod) => !pod.metadata?.deletionTimestamp && !livePod(pod));
  const spent = [...ended, ...liveSessionPods(deps.pods, session).slice(1)];
  await Promise.all(
    spent.map((pod) =>
      deps.objects
        .delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod.metadata!.name!, namespace: deps.namespace } })
        .catch(undefinedIfNotFound),
    ),
  );
}

/**
 * The session's Secret, written only when it is missing or differs: created, the first time, without
 * a read. Its bridge token is the session's for good: a pass that comes again before the pod
 * is seen (or after a restart between the two writes) finds it there and keeps the token it holds,
 * since a pod may already have started with it and the operator reaches that pod's bridge with the
 * Secret's token. A new one only for a Secret that is not this session's (a namesake's left to the
 * garbage collector).
 */
async function applySessionSecret(deps: SessionStepDeps, session: Session, bridge: boolean): Promise<void> {
  const wanted = sessionEnvSecret(session, deps.namespace);
  try {
    const fresh = sessionEnvSecret(session, deps.namespace, bridge ? newBridgeToken() : undefined);
    await deps.objects.create(fresh, undefined, undefined, FIELD_MANAGER);
    return;
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
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

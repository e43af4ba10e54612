import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound, undefinedIfNotFound } from '../../kube/client.js';
import { clearFieldRecord } from '../../kube/field-record.js';
import { ANNOTATIONS, LABELS } from '../../model/api-group.js';
import { workFolder, type AppDefinition } from '../../model/app-definition.js';
import { dnsLabel } from '../../model/names.js';
import type { Session } from '../../model/session.js';
import type { Informer } from '../../kube/informer.js';
import type { DeploymentClient } from '../../kube/plain-answers.js';
import type { OperatorConfig } from '../config.js';
import { INDEX, isFreeInstance, isLiveInstance, labelKey } from '../runtime/cache.js';
import { deploymentReady } from '../runtime/objects.js';
import { Delay, RetryLater } from '../runtime/outcome.js';
import {
  RECYCLED_ANNOTATION,
  bridgeTokenSecret,
  bridgeTokenSecretName,
  newBridgeToken,
  generationOf,
  instanceClaimName,
  ownerReference,
  poolClaimName,
  poolInstanceDeployment,
  poolInstanceName,
  poolInstanceTemplate,
  service,
  sidecarName,
  sidecarObjects,
  poolInstanceLabels,
  INSTANCE_TEMPLATE,
  INSTANCE_TEMPLATE_ANNOTATION,
} from '../manifests.js';
import type { BridgeSecrets } from './bridge-secrets.js';
import { createInstanceClaim, type ClaimDeps } from './claims.js';
import { reservationCandidates, type CandidateState } from './plan.js';

/** One warm instance as read from its Deployment. */
export interface PoolInstance {
  id: number;
  name: string;
  generation: number;
  ready: boolean;
  reservedBy?: { name: string; uid?: string };
  /** The new workspace its session serves, whose claim the instance's becomes (pool/claims.ts). */
  workspace?: string;
  /** The claim its pod template mounts at the work folder. */
  claimName?: string;
  deployment: k8s.V1Deployment;
}

/** The id of a warm instance (its label); 0 when it has none. */
function instanceIdOf(d: k8s.V1Deployment): number {
  return Number(d.metadata?.labels?.[LABELS.instanceId] ?? '0');
}

/** A warm instance of `appDefinition` that no session holds and whose pod is ready: a launch claims it as it is. */
export function isFreeReadyInstance(d: k8s.V1Deployment, appDefinition: string): boolean {
  return isFreeInstance(d) && d.metadata?.labels?.[LABELS.appDefinition] === appDefinition && deploymentReady(d);
}

/** Tells `aiming` of a candidate (PoolInstances.reserve); what it throws is dropped, never the process's. */
function aimAt(aiming: (candidate: PoolInstance) => void, candidate: PoolInstance): void {
  try {
    aiming(candidate);
  } catch {
    // Beside the claim only: the claim and the pass go on without it.
  }
}

/** The generation of the app definition a warm instance was built from; -1 when an older operator built it. */
function instanceGeneration(d: k8s.V1Deployment): number {
  // Built by an older operator (another instance template): as outdated as an older generation.
  return d.metadata?.annotations?.[INSTANCE_TEMPLATE_ANNOTATION] === INSTANCE_TEMPLATE
    ? Number(d.metadata?.annotations?.[ANNOTATIONS.appDefinitionGeneration] ?? '0')
    : -1;
}

export function instanceOf(d: k8s.V1Deployment): PoolInstance {
  const labels = d.metadata?.labels ?? {};
  const session = labels[LABELS.session];
  return {
    id: instanceIdOf(d),
    name: d.metadata?.name ?? '',
    generation: instanceGeneration(d),
    ready: deploymentReady(d),
    // The session's uid is in its ownerReference: an annotation would bump the Deployment's generation
    // (its annotations are copied to ReplicaSets), and the instance would look not ready until the
    // deployment controller caught up.
    ...(session
      ? {
          reservedBy: {
            name: session,
            uid: d.metadata?.ownerReferences?.find((o) => o.kind === 'Session' && o.name === session)?.uid,
          },
        }
      : {}),
    ...(labels[LABELS.workspace] ? { workspace: labels[LABELS.workspace] } : {}),
    ...(instanceClaimName(d) ? { claimName: instanceClaimName(d) } : {}),
    deployment: d,
  };
}

/** What the pool's instances are made with: the apps and core APIs, the applier and the Deployment cache. */
export interface PoolDeps extends SidecarDeps, Omit<ClaimDeps, 'core' | 'config'> {
  apps: DeploymentClient;
  core: Pick<
    k8s.CoreV1Api,
    | 'deleteNamespacedService'
    | 'createNamespacedSecret'
    | 'deleteNamespacedSecret'
    | 'deleteNamespacedPersistentVolumeClaim'
  > &
    ClaimDeps['core'];
  /** The cache of the Deployments IDE Cloud manages; every write's answer goes into it. */
  deployments: Informer<k8s.V1Deployment>;
  /** The instances' bridge Secrets as written: each write and removal of one is told to it. */
  secrets: Pick<BridgeSecrets, 'written' | 'forget'>;
}

/** What applying sidecars takes. */
export interface SidecarDeps {
  namespace: string;
  config: OperatorConfig;
  objects: k8s.KubernetesObjectApi;
}

/** The warm instances of the app definitions: read from the cache, reserved, created, deleted, returned. */
export class PoolInstances {
  /**
   * The reservations of this process being written, per instance: the cache shows an instance free
   * until its write's answer.
   */
  private readonly claiming = new Map<string, number>();

  constructor(private readonly deps: PoolDeps) {}

  /** The app definition's warm instances in the cache, optionally only those `matching`, none being deleted. */
  list(appDefinitionName: string, matching: (labels: Record<string, string>) => boolean = () => true): PoolInstance[] {
    return this.cached(labelKey(LABELS.appDefinition, dnsLabel([appDefinitionName])), matching);
  }

  /**
   * The warm instances whose reservations name this new workspace, of any app definition: the claim of
   * such an instance is the workspace's to take over (workspace/reconciler.ts).
   */
  reservedFor(workspace: string): PoolInstance[] {
    return this.cached(labelKey(LABELS.workspace, workspace), (labels) => !!labels[LABELS.session]);
  }

  /** Warm instances in the cache with the label `label` (`labelKey`) whose labels match, none being deleted. */
  private cached(label: string, matching: (labels: Record<string, string>) => boolean): PoolInstance[] {
    return this.deps.deployments
      .byIndex(INDEX.label, label)
      .filter((d) => isLiveInstance(d) && matching(d.metadata?.labels ?? {}))
      .map(instanceOf);
  }

  /** The instance reserved for this session, if a reservation was made before (e.g. before a crash). */
  findReservation(appDefinitionName: string, session: Session): PoolInstance | undefined {
    const app = dnsLabel([appDefinitionName]);
    return this.cached(labelKey(LABELS.session, session.metadata.name), (l) => l[LABELS.appDefinition] === app).find(
      (i) => i.reservedBy?.uid === session.metadata.uid,
    );
  }

  /**
   * Reserves a free instance for the session, chosen from the cache. The reservation is one update of
   * the instance Deployment carrying the resourceVersion that was read: when another worker, replica
   * or operator generation changed it first (or the cache was behind), the API server answers 409 and
   * the next candidate is tried. Two sessions can therefore never hold one instance. Candidates are
   * rotated by the session's name, and those this process is claiming already come last, so
   * concurrent reservations rarely aim at the same instance. Returns undefined when no instance is
   * free. A new workspace (`workspace`) is named in the same write: the instance's claim becomes that
   * workspace's (workspace/reconciler.ts), and the pod, which mounts it already, is not touched.
   * `aiming` hears of each candidate once its write is on its way (the next turn of the event loop,
   * so nothing the caller does delays the claim), maybe after the answer: what it starts for that
   * instance goes beside the claim, and must give the instance nothing of the session's.
   */
  async reserve(
    appDefinition: AppDefinition,
    minInstances: number,
    session: Session,
    workspace: string | undefined,
    aiming?: (candidate: PoolInstance) => void,
  ): Promise<PoolInstance | undefined> {
    const generation = Number(generationOf(appDefinition));
    const app = dnsLabel([appDefinition.metadata.name]);
    // Read off each instance only as it comes up: a launch mostly takes the first candidate.
    const state = (d: k8s.V1Deployment): CandidateState => {
      const id = instanceIdOf(d);
      if (id < 1 || id > minInstances || instanceGeneration(d) !== generation) return undefined;
      return deploymentReady(d) ? 'ready' : 'starting';
    };
    const claiming = (d: k8s.V1Deployment) => this.claiming.has(d.metadata?.name ?? '');
    for (let round = 0; round < 8; round++) {
      const free = this.deps.deployments.byIndex(INDEX.freeInstance, app);
      let tried = 0;
      for (const cached of reservationCandidates(free, session.metadata.name, state, claiming)) {
        tried++;
        const name = cached.metadata?.name ?? '';
        // The cached object with new metadata: its spec and status go out as they are, read only (a
        // deep copy of the whole Deployment was most of a reservation's CPU).
        const metadata: k8s.V1ObjectMeta = {
          ...cached.metadata,
          labels: {
            ...cached.metadata?.labels,
            [LABELS.session]: session.metadata.name,
            ...(workspace ? { [LABELS.workspace]: workspace } : {}),
          },
          ownerReferences: [
            ...(cached.metadata?.ownerReferences ?? []),
            ownerReference(session as Parameters<typeof ownerReference>[0], false),
          ],
        };
        clearFieldRecord(metadata);
        const d: k8s.V1Deployment = { ...cached, apiVersion: 'apps/v1', kind: 'Deployment', metadata };
        this.claiming.set(name, (this.claiming.get(name) ?? 0) + 1);
        try {
          const claim = this.deps.apps.replaceNamespacedDeployment({
            name,
            namespace: this.deps.namespace,
            body: d,
          });
          if (aiming) setImmediate(aimAt, aiming, instanceOf(cached));
          const updated = await claim;
          this.deps.deployments.observe(updated);
          return instanceOf(updated);
        } catch (error) {
          if (isConflict(error) || isNotFound(error)) continue;
          throw error;
        } finally {
          const left = this.claiming.get(name)! - 1;
          if (left > 0) this.claiming.set(name, left);
          else this.claiming.delete(name);
        }
      }
      if (tried === 0) return undefined;
    }
    throw new RetryLater(
      'warm pool: every free instance was taken concurrently, trying again',
      Delay.instanceContention,
    );
  }

  /**
   * Creates the warm instance `id`: sidecars first (their DNS names exist at IDE start), Service, the
   * data-bridge token's Secret (created only when absent: a token already read by a running pod is
   * never changed under it), Deployment, then its claim (owned by the Deployment, so it goes with it).
   */
  async create(appDefinition: AppDefinition, id: number): Promise<void> {
    const name = poolInstanceName(appDefinition.metadata.name, id);
    const owners = [ownerReference(appDefinition as Parameters<typeof ownerReference>[0])];
    const labels = poolInstanceLabels(appDefinition, id);
    const claimName = poolClaimName(name);
    await applySidecars(this.deps, appDefinition, { ownerName: name, labels, owners, claimName });
    await applyObject(
      this.deps.objects,
      service({
        name,
        namespace: this.deps.namespace,
        labels,
        owners,
        podApp: name,
        targetPort: this.deps.config.authProxyPort,
      }),
    );
    const secret = bridgeTokenSecret(appDefinition, id, this.deps.namespace, newBridgeToken());
    try {
      await this.deps.core.createNamespacedSecret({ namespace: this.deps.namespace, body: secret });
      this.deps.secrets.written(secret);
    } catch (error) {
      if (!isConflict(error)) throw error;
      // There already, with tokens this process may not know (a copy it holds can be older).
      this.deps.secrets.forget(secret.metadata!.name!);
    }
    try {
      const created = await this.deps.apps.createNamespacedDeployment({
        namespace: this.deps.namespace,
        body: poolInstanceDeployment(appDefinition, id, this.deps.namespace, this.deps.config, claimName),
      });
      this.deps.deployments.observe(created);
      await createInstanceClaim(this.deps, appDefinition, id, claimName, created);
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }

  /**
   * Deletes the claims of these instances that their pod templates no longer mount and no workspace
   * took (the handover drops the pool's labels): the files of a session that ended. One look at the
   * claims cache per pass.
   */
  async removeStaleClaims(instances: readonly PoolInstance[]): Promise<void> {
    const mounted = new Map(instances.map((i) => [i.name, i.claimName]));
    for (const claim of this.deps.claims.list()) {
      const name = claim.metadata?.name;
      const holder = claim.metadata?.labels?.[LABELS.poolInstance];
      if (!name || !holder || !mounted.has(holder) || mounted.get(holder) === name) continue;
      if (!claim.metadata?.deletionTimestamp)
        await this.deps.core
          .deleteNamespacedPersistentVolumeClaim({ name, namespace: this.deps.namespace })
          .catch(undefinedIfNotFound);
    }
  }

  /**
   * Makes the claim an instance's pod waits for when it is missing: the pass that made or returned
   * the Deployment ended before the claim (a crash, a failed call). A claim its new workspace awaits
   * is that workspace's to make (claims.ts, handOverClaim).
   */
  async ensureClaim(appDefinition: AppDefinition, instance: PoolInstance): Promise<void> {
    if (!instance.claimName || instance.workspace || this.deps.claims.get(instance.claimName)) return;
    await createInstanceClaim(this.deps, appDefinition, instance.id, instance.claimName, instance.deployment);
  }

  /**
   * Deletes the instance Deployment (only if unchanged since read), its data-bridge token and, unless
   * it is recreated, its Service and sidecars.
   */
  async delete(appDefinition: AppDefinition, instance: PoolInstance, keepService: boolean): Promise<void> {
    try {
      await this.deps.apps.deleteNamespacedDeployment({
        name: instance.name,
        namespace: this.deps.namespace,
        propagationPolicy: 'Background',
        body: { preconditions: { resourceVersion: instance.deployment.metadata?.resourceVersion } },
      });
    } catch (error) {
      if (isConflict(error))
        throw new RetryLater(`instance ${instance.name} changed while being deleted`, Delay.instanceContention);
      if (!isNotFound(error)) throw error;
    }
    for (const sidecar of appDefinition.spec.sidecars ?? []) {
      const name = sidecarName(instance.name, sidecar);
      await this.deps.apps
        .deleteNamespacedDeployment({ name, namespace: this.deps.namespace })
        .catch(undefinedIfNotFound);
      if (!keepService)
        await this.deps.core
          .deleteNamespacedService({ name, namespace: this.deps.namespace })
          .catch(undefinedIfNotFound);
    }
    // The token goes too, also when the instance is recreated: its last user could read it.
    const secretName = bridgeTokenSecretName(instance.name);
    this.deps.secrets.forget(secretName);
    await this.deps.core
      .deleteNamespacedSecret({ name: secretName, namespace: this.deps.namespace })
      .catch(undefinedIfNotFound);
    if (!keepService) {
      await this.deps.core
        .deleteNamespacedService({ name: instance.name, namespace: this.deps.namespace })
        .catch(undefinedIfNotFound);
    }
  }

  /**
   * Returns an instance whose session ended to the pool: reservation and session ownership dropped,
   * pod template reset onto a fresh claim and stamped, so the pod, and the sidecars, restart clean:
   * no value of the last session survives in memory, in the IDE's secret storage or in the work
   * folder. The data-bridge token is replaced first: the last session's user could read it in their
   * IDE, and the restarted bridge (which takes one injection) must take the next reservation's from
   * the operator only. The last claim, unless a workspace took it, is left to `removeStaleClaims`.
   */
  async returnToPool(appDefinition: AppDefinition, instance: PoolInstance, now: Date): Promise<void> {
    const secret = bridgeTokenSecret(appDefinition, instance.id, this.deps.namespace, newBridgeToken());
    // Unknown until the write is answered: a failed one may have changed it or not.
    this.deps.secrets.forget(secret.metadata!.name!);
    await applyObject(this.deps.objects, secret);
    this.deps.secrets.written(secret);
    const d = structuredClone(instance.deployment);
    d.apiVersion = 'apps/v1';
    d.kind = 'Deployment';
    const meta = (d.metadata ??= {});
    const labels = { ...meta.labels };
    delete labels[LABELS.session];
    delete labels[LABELS.workspace];
    meta.labels = labels;
    meta.ownerReferences = (meta.ownerReferences ?? []).filter((o) => o.kind !== 'Session');
    clearFieldRecord(meta);
    const claimName = poolClaimName(instance.name);
    d.spec!.template = poolInstanceTemplate(appDefinition, instance.id, this.deps.config, claimName, now.toISOString());
    try {
      const updated = await this.deps.apps.replaceNamespacedDeployment({
        name: instance.name,
        namespace: this.deps.namespace,
        body: d,
      });
      this.deps.deployments.observe(updated);
      await createInstanceClaim(this.deps, appDefinition, instance.id, claimName, updated);
    } catch (error) {
      if (isConflict(error))
        throw new RetryLater(`instance ${instance.name} changed while being returned`, Delay.instanceContention);
      throw error;
    }
    const owners = [ownerReference(appDefinition as Parameters<typeof ownerReference>[0])];
    for (const sidecar of appDefinition.spec.sidecars ?? []) {
      const objects = sidecarObjects({
        sidecar,
        ownerName: instance.name,
        namespace: this.deps.namespace,
        labels: poolInstanceLabels(appDefinition, instance.id),
        owners,
        claimName,
        workFolder: workFolder(appDefinition.spec),
        config: this.deps.config,
        templateAnnotations: { [RECYCLED_ANNOTATION]: now.toISOString() },
      });
      await applyObject(this.deps.objects, objects.deployment);
    }
  }
}

/** Applies the app definition's sidecars of one owner (a lazy session or a warm instance): Service, then Deployment. */
export async function applySidecars(
  deps: SidecarDeps,
  appDefinition: AppDefinition,
  owner: Pick<Parameters<typeof sidecarObjects>[0], 'ownerName' | 'labels' | 'owners' | 'claimName'>,
): Promise<void> {
  for (const sidecar of appDefinition.spec.sidecars ?? []) {
    const objects = sidecarObjects({
      sidecar,
      namespace: deps.namespace,
      config: deps.config,
      workFolder: workFolder(appDefinition.spec),
      ...owner,
    });
    if (objects.service) await applyObject(deps.objects, objects.service);
    await applyObject(deps.objects, objects.deployment);
  }
}

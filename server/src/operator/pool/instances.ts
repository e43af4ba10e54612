import type * as k8s from '@kubernetes/client-node';
import { applyObject, isConflict, isNotFound, undefinedIfNotFound } from '../../kube/client.js';
import { clearFieldRecord } from '../../kube/field-record.js';
import { ANNOTATIONS, LABELS } from '../../model/api-group.js';
import { workFolder, type AppDefinition } from '../../model/app-definition.js';
import { dnsLabel } from '../../model/names.js';
import type { Session } from '../../model/session.js';
import type { Informer } from '../../kube/informer.js';
import type { DeploymentClient, LeaseClient } from '../../kube/plain-answers.js';
import type { OperatorConfig } from '../config.js';
import { INDEX, isFreeReservation, isLiveInstance, labelKey } from '../runtime/cache.js';
import { deploymentReady } from '../runtime/objects.js';
import { Delay, RetryLater } from '../runtime/outcome.js';
import {
  FREED_GENERATION_ANNOTATION,
  RECYCLED_ANNOTATION,
  bridgeTokenSecret,
  bridgeTokenSecretName,
  newBridgeToken,
  generationOf,
  instanceClaimName,
  instanceReservation,
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

/** One warm instance as read from its Deployment and its reservation. */
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
  /** Its reservation (a Lease named after it). */
  reservation?: k8s.V1Lease;
  /**
   * Neither a reservation nor an older operator's reservation on the Deployment: whom its pod served
   * is unknown (its Lease was deleted, or a pass ended between the Deployment and its Lease), so it is
   * reset, as a returned instance, before it is free.
   */
  lost?: boolean;
}

/** The id of a warm instance (its label); 0 when it has none. */
function instanceIdOf(d: k8s.V1Deployment): number {
  return Number(d.metadata?.labels?.[LABELS.instanceId] ?? '0');
}

/** Whether `lease` is the reservation of this Deployment: one left by an earlier Deployment of the name is not. */
function reserves(lease: k8s.V1Lease, d: k8s.V1Deployment): boolean {
  const uid = d.metadata?.uid;
  return !!uid && (lease.metadata?.ownerReferences ?? []).some((o) => o.uid === uid);
}

/** The reservation of a warm instance's Deployment in `reservations`, if it has one. */
export function reservationOf(
  reservations: Pick<Informer<k8s.V1Lease>, 'get'>,
  d: k8s.V1Deployment,
): k8s.V1Lease | undefined {
  const lease = reservations.get(d.metadata?.name ?? '');
  return lease && reserves(lease, d) ? lease : undefined;
}

/** A warm instance of `appDefinition` that no session holds and whose pod is ready: a launch claims it as it is. */
export function isFreeReadyInstance(
  d: k8s.V1Deployment,
  reservation: k8s.V1Lease | undefined,
  appDefinition: string,
): boolean {
  return (
    isLiveInstance(d) &&
    // An older operator's claim on the Deployment wins over a free Lease (instanceOf).
    !d.metadata?.labels?.[LABELS.session] &&
    !!reservation &&
    reserves(reservation, d) &&
    isFreeReservation(reservation) &&
    d.metadata?.labels?.[LABELS.appDefinition] === appDefinition &&
    deploymentReady(d)
  );
}

/** The generation of the app definition a warm instance was built from; -1 when an older operator built it. */
function instanceGeneration(d: k8s.V1Deployment): number {
  // Built by an older operator (another instance template): as outdated as an older generation.
  return d.metadata?.annotations?.[INSTANCE_TEMPLATE_ANNOTATION] === INSTANCE_TEMPLATE
    ? Number(d.metadata?.annotations?.[ANNOTATIONS.appDefinitionGeneration] ?? '0')
    : -1;
}

/**
 * The warm instance of a Deployment and its reservation. An older operator wrote its reservations on
 * the Deployment (the session label and an ownerReference with the session's uid): one there holds,
 * with or without a Lease, until the instance is returned; without a Lease the pool makes one from it.
 */
export function instanceOf(d: k8s.V1Deployment, reservation: k8s.V1Lease | undefined): PoolInstance {
  const older = d.metadata?.labels?.[LABELS.session];
  const labels = (older || !reservation ? d : reservation).metadata?.labels ?? {};
  const session = labels[LABELS.session];
  const uid =
    reservation && !older
      ? reservation.spec?.holderIdentity
      : d.metadata?.ownerReferences?.find((o) => o.kind === 'Session' && o.name === session)?.uid;
  return {
    id: instanceIdOf(d),
    name: d.metadata?.name ?? '',
    generation: instanceGeneration(d),
    ready: deploymentReady(d),
    ...(session ? { reservedBy: { name: session, uid } } : {}),
    ...(labels[LABELS.workspace] ? { workspace: labels[LABELS.workspace] } : {}),
    ...(instanceClaimName(d) ? { claimName: instanceClaimName(d) } : {}),
    deployment: d,
    ...(reservation ? { reservation } : {}),
    ...(!reservation && !older ? { lost: true } : {}),
  };
}

/** What the pool's instances are made with: the apps and core APIs, the applier and the caches. */
export interface PoolDeps extends SidecarDeps, Omit<ClaimDeps, 'core' | 'config'> {
  apps: DeploymentClient;
  leases: LeaseClient;
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
  /** The cache of the warm instances' reservations; every write's answer goes into it. */
  reservations: Informer<k8s.V1Lease>;
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

  /** The app definition's warm instances in the cache, none being deleted. */
  list(appDefinitionName: string): PoolInstance[] {
    return this.deps.deployments
      .byIndex(INDEX.label, labelKey(LABELS.appDefinition, dnsLabel([appDefinitionName])))
      .filter(isLiveInstance)
      .map((d) => instanceOf(d, reservationOf(this.deps.reservations, d)));
  }

  /**
   * The warm instances whose reservations name this new workspace, of any app definition: the claim of
   * such an instance is the workspace's to take over (workspace/reconciler.ts).
   */
  reservedFor(workspace: string): PoolInstance[] {
    return this.held(labelKey(LABELS.workspace, workspace), (labels) => !!labels[LABELS.session]);
  }

  /** The instance reserved for this session, if a reservation was made before (e.g. before a crash). */
  findReservation(appDefinitionName: string, session: Session): PoolInstance | undefined {
    const app = dnsLabel([appDefinitionName]);
    return this.held(labelKey(LABELS.session, session.metadata.name), (l) => l[LABELS.appDefinition] === app).find(
      (i) => i.reservedBy?.uid === session.metadata.uid,
    );
  }

  /** The live warm instance's Deployment whose reservation `lease` is, if the cache has it. */
  private instanceReservedBy(lease: k8s.V1Lease): k8s.V1Deployment | undefined {
    const d = this.deps.deployments.get(lease.metadata?.name ?? '');
    return d && isLiveInstance(d) && reserves(lease, d) ? d : undefined;
  }

  /**
   * Live warm instances whose reservation has the label `label` (`labelKey`) and labels that match.
   * An older operator's reservation on the Deployment wins over its Lease, made or not, free or not
   * (`instanceOf`): such an instance is held as its Deployment says.
   */
  private held(label: string, matching: (labels: Record<string, string>) => boolean): PoolInstance[] {
    const { deployments, reservations } = this.deps;
    const reserved = reservations.byIndex(INDEX.label, label).flatMap((lease) => {
      const d = this.instanceReservedBy(lease);
      return d && !d.metadata?.labels?.[LABELS.session] && matching(lease.metadata?.labels ?? {})
        ? [instanceOf(d, lease)]
        : [];
    });
    const older = deployments
      .byIndex(INDEX.label, label)
      .filter((d) => isLiveInstance(d) && matching(d.metadata?.labels ?? {}))
      .map((d) => instanceOf(d, reservationOf(reservations, d)));
    return [...reserved, ...older];
  }

  /**
   * Reserves a free instance for the session, chosen from the cache. The reservation is one update of
   * the instance's Lease carrying the resourceVersion that was read: when another worker, replica or
   * operator generation changed it first (or the cache was behind), the API server answers 409 and
   * the next candidate is tried. Two sessions can therefore never hold one instance. Candidates are
   * rotated by the session's name, and those this process is claiming already come last, so
   * concurrent reservations rarely aim at the same instance. Returns undefined when no instance is
   * free. A new workspace (`workspace`) is named in the same write: the instance's claim becomes that
   * workspace's (workspace/reconciler.ts). The Deployment and its pod are not touched.
   */
  async reserve(
    appDefinition: AppDefinition,
    minInstances: number,
    session: Session,
    workspace: string | undefined,
  ): Promise<PoolInstance | undefined> {
    const { reservations } = this.deps;
    const generation = Number(generationOf(appDefinition));
    const app = dnsLabel([appDefinition.metadata.name]);
    // Read off each instance only as it comes up: a launch mostly takes the first candidate. Not one
    // an older operator reserved on the Deployment, nor one whose cached Deployment predates its reset.
    const state = (lease: k8s.V1Lease): CandidateState => {
      const d = this.instanceReservedBy(lease);
      if (!d || d.metadata?.labels?.[LABELS.session]) return undefined;
      const freedAt = Number(lease.metadata?.annotations?.[FREED_GENERATION_ANNOTATION] ?? 0);
      if ((d.metadata?.generation ?? 0) < freedAt) return undefined;
      const id = instanceIdOf(d);
      if (id < 1 || id > minInstances || instanceGeneration(d) !== generation) return undefined;
      return deploymentReady(d) ? 'ready' : 'starting';
    };
    const claiming = (lease: k8s.V1Lease) => this.claiming.has(lease.metadata?.name ?? '');
    for (let round = 0; round < 8; round++) {
      const free = reservations.byIndex(INDEX.freeInstance, app);
      let tried = 0;
      for (const cached of reservationCandidates(free, session.metadata.name, state, claiming)) {
        const d = this.instanceReservedBy(cached);
        if (!d) continue;
        tried++;
        const name = cached.metadata?.name ?? '';
        const metadata: k8s.V1ObjectMeta = {
          ...cached.metadata,
          labels: {
            ...cached.metadata?.labels,
            [LABELS.session]: session.metadata.name,
            ...(workspace ? { [LABELS.workspace]: workspace } : {}),
          },
        };
        clearFieldRecord(metadata);
        // Its uid and resourceVersion make the replace conditional: a Lease updated or deleted since
        // (a Lease may be created by an update) answers 409.
        const lease: k8s.V1Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata,
          spec: { ...cached.spec, holderIdentity: session.metadata.uid },
        };
        this.claiming.set(name, (this.claiming.get(name) ?? 0) + 1);
        try {
          const updated = await this.deps.leases.replaceNamespacedLease({
            name,
            namespace: this.deps.namespace,
            body: lease,
          });
          reservations.observe(updated);
          return instanceOf(d, updated);
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
   * never changed under it), Deployment, then its reservation and its claim (owned by the Deployment,
   * so they go with it).
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
      // Its pod is new: free at once.
      await this.writeReservation(appDefinition, created, undefined);
      await createInstanceClaim(this.deps, appDefinition, id, claimName, created);
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }

  /**
   * Makes the Lease of an instance an older operator reserved on its Deployment hold the same session
   * (`instanceOf`): a new Lease, or the free one the pool made before that operator's last claim
   * landed, so that no reader of the reservations takes the instance for free. Written on the Lease
   * this decision read: a claim that got it meanwhile (before its cache showed the older claim) is
   * not overwritten (409); the next pass decides again. An instance with no reservation at all is
   * `lost`: the pool resets it, and its return makes its Lease (`release`).
   */
  async ensureReservation(appDefinition: AppDefinition, instance: PoolInstance): Promise<void> {
    const { reservation, reservedBy } = instance;
    if (!reservedBy || (reservation && !isFreeReservation(reservation))) return;
    await this.writeReservation(
      appDefinition,
      instance.deployment,
      { ...reservedBy, workspace: instance.workspace },
      reservation,
    );
  }

  /**
   * Writes the reservation of an instance: free (its pod new or just reset), or held by `holder`.
   * A Lease of the name (left by an earlier Deployment, or `read`: the one the caller decided on) is
   * replaced on the resourceVersion of `read`, else of the cache's. Writes nothing when it lost a
   * race (409): the next pass sees the winner.
   */
  private async writeReservation(
    appDefinition: AppDefinition,
    d: k8s.V1Deployment,
    holder: { name: string; uid?: string; workspace?: string } | undefined,
    read?: k8s.V1Lease,
  ): Promise<void> {
    const id = instanceIdOf(d);
    const lease = instanceReservation(appDefinition, id, this.deps.namespace, d.metadata ?? {});
    const metadata = lease.metadata!;
    metadata.annotations = { [FREED_GENERATION_ANNOTATION]: String(d.metadata?.generation ?? 0) };
    if (holder) {
      metadata.labels![LABELS.session] = holder.name;
      if (holder.workspace) metadata.labels![LABELS.workspace] = holder.workspace;
      lease.spec = { holderIdentity: holder.uid };
    }
    const stale = read ?? this.deps.reservations.get(metadata.name!);
    try {
      const written = stale
        ? await this.deps.leases.replaceNamespacedLease({
            name: metadata.name!,
            namespace: this.deps.namespace,
            body: { ...lease, metadata: { ...metadata, resourceVersion: stale.metadata?.resourceVersion } },
          })
        : await this.deps.leases.createNamespacedLease({ namespace: this.deps.namespace, body: lease });
      this.deps.reservations.observe(written);
    } catch (error) {
      if (!isConflict(error) && !isNotFound(error)) throw error;
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
   * Deletes the instance's reservation and Deployment (each only if unchanged since read), its
   * data-bridge token and, unless it is recreated, its Service and sidecars.
   */
  async delete(appDefinition: AppDefinition, instance: PoolInstance, keepService: boolean): Promise<void> {
    // The reservation first, on the version read: an instance a launch claimed meanwhile is kept.
    if (instance.reservation) {
      try {
        await this.deps.leases.deleteNamespacedLease({
          name: instance.name,
          namespace: this.deps.namespace,
          body: { preconditions: { resourceVersion: instance.reservation.metadata?.resourceVersion } },
        });
      } catch (error) {
        if (isConflict(error))
          throw new RetryLater(`instance ${instance.name} changed while being deleted`, Delay.instanceContention);
        if (!isNotFound(error)) throw error;
      }
    }
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
   * Returns an instance whose session ended to the pool: pod template reset onto a fresh claim and
   * stamped, so the pod, and the sidecars, restart clean: no value of the last session survives in
   * memory, in the IDE's secret storage or in the work folder; then, and only then, its reservation
   * dropped: a launch never claims the last session's pod. The data-bridge token is replaced first:
   * the last session's user could read it in their IDE, and the restarted bridge (which takes one
   * injection) must take the next reservation's from the operator only. The last claim, unless a
   * workspace took it, is left to `removeStaleClaims`.
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
    // An older operator's reservation on the Deployment goes too.
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
      await this.release(appDefinition, instance, updated);
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

  /**
   * Drops the reservation of an instance whose Deployment was just reset (`reset`, as answered): on
   * the Lease read, so a 409 if anyone wrote it since; one without a Lease gets a free one. The reset's
   * generation goes with it (FREED_GENERATION_ANNOTATION).
   */
  private async release(appDefinition: AppDefinition, instance: PoolInstance, reset: k8s.V1Deployment): Promise<void> {
    const held = instance.reservation;
    if (!held) return this.writeReservation(appDefinition, reset, undefined);
    const labels = { ...held.metadata?.labels };
    delete labels[LABELS.session];
    delete labels[LABELS.workspace];
    const annotations = {
      ...held.metadata?.annotations,
      [FREED_GENERATION_ANNOTATION]: String(reset.metadata?.generation ?? 0),
    };
    const metadata: k8s.V1ObjectMeta = { ...held.metadata, labels, annotations };
    clearFieldRecord(metadata);
    const { holderIdentity: _holder, ...spec } = held.spec ?? {};
    void _holder;
    this.deps.reservations.observe(
      await this.deps.leases.replaceNamespacedLease({
        name: instance.name,
        namespace: this.deps.namespace,
        body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec },
      }),
    );
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

// What each write of a warm launch costs the control plane, request by request: the CPU time of
// kube-apiserver, etcd and kube-controller-manager per request (from /proc), on the control plane
// alone (before IDE Cloud starts), on objects shaped as IDE Cloud writes them:
//   sessionCreate    the service's create of a Session,
//   sessionStatus    the operator's status write with the URL,
//   sessionMetadata  the service's answered mark (metadata: annotations; it clears the field record),
//   claim            the operator's claim: a replace of a warm instance's reservation (its Lease: the
//                    session's label and uid), clearing its record of field ownership,
//   claimWithRecord  the same claim keeping that record,
//   route            a replace of an Ingress of `requestCostPaths` paths with one path more or less,
//   deploymentClaim  for comparison, the same claim written on the instance's Deployment (label, owner
//                    reference to the Session, record cleared), which wakes the deployment controller.
// Each kind's latency, as its client times it one at a time, is in `latencyP50Ms`.
// The kinds take turns, `requestCostRounds` rounds of `requestCostPerRound` requests each, so the
// machine's background falls on every kind alike; each figure is the median over the rounds. /proc
// counts CPU in ticks of 10 ms: a round of 20 requests resolves 0.5 ms. Everything it made is deleted.
import * as k8s from '@kubernetes/client-node';
import { ideCloudResources } from '../../../server/src/kube/resources.js';
import { ANNOTATIONS, LABELS } from '../../../server/src/model/api-group.js';
import { AppDefinitionSpecSchema, type AppDefinition } from '../../../server/src/model/app-definition.js';
import { userLabelValue } from '../../../server/src/model/names.js';
import type { Session } from '../../../server/src/model/session.js';
import { parseOperatorConfig } from '../../../server/src/operator/config.js';
import {
  instanceReservation,
  poolClaimName,
  poolInstanceDeployment,
  poolInstanceName,
} from '../../../server/src/operator/manifests.js';
import { appDefinition } from '../config.js';
import { NAMESPACE } from '../harness.js';
import type { Figures } from '../results.js';
import type { Context, Scenario } from '../scenario.js';
import { pool, round, summarize, until, untilRemoved } from '../util.js';

const LABEL = 'bench.ide-cloud.io/request-cost';
const USER_AGENT = 'bench-request-cost';
const APP = 'bench-request-cost';
const HOST = 'sessions.request-cost.invalid';
/** The control plane's processes whose CPU a request costs. */
export const CONTROL_PLANE = ['kube-apiserver', 'etcd', 'kube-controller-manager'] as const;
export const REQUEST_KINDS = [
  'sessionCreate',
  'sessionStatus',
  'sessionMetadata',
  'claim',
  'claimWithRecord',
  'route',
  'deploymentClaim',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** The median of each process's CPU ms per request over the rounds, and of their sum. */
export function medianCost(rounds: readonly Record<string, number>[]): Figures {
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  };
  const names = [...CONTROL_PLANE, 'total'];
  return Object.fromEntries(
    names.map((name) => [
      name,
      round(
        median(
          rounds.map((r) => (name === 'total' ? CONTROL_PLANE.reduce((a, p) => a + (r[p] ?? 0), 0) : (r[name] ?? 0))),
        ),
        2,
      ),
    ]),
  );
}

export const requestCost: Scenario = {
  name: 'request-cost',
  title: 'what each write of a warm launch costs the control plane; operator and service stopped',
  weight: 3,
  needs: 'control-plane',
  async run({ bench, sizes, progress }: Context) {
    const kc = bench.clientConfig(USER_AGENT);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const net = kc.makeApiClient(k8s.NetworkingV1Api);
    const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    const sessions = ideCloudResources(kc, NAMESPACE).sessions;
    const rounds = sizes.requestCostRounds;
    const per = sizes.requestCostPerRound;
    const n = rounds * per;
    const labels = { [LABEL]: 'true' };
    let failed = false;
    try {
      progress.step(`${2 * n} warm instances (Deployment, reservation), an Ingress of ${sizes.requestCostPaths} paths`);
      const spec = AppDefinitionSpecSchema.parse(appDefinition(APP, 0, 3001));
      const definition = {
        apiVersion: 'ide.cloud/v1beta10',
        kind: 'AppDefinition',
        metadata: { name: APP, uid: '00000000-0000-0000-0000-000000000000', generation: 1 },
        spec,
      } as AppDefinition;
      const config = parseOperatorConfig({ namespace: NAMESPACE });
      const made = await pool(2 * n, 20, async (i) => {
        const d = poolInstanceDeployment(
          definition,
          i + 1,
          NAMESPACE,
          config,
          poolClaimName(poolInstanceName(APP, i + 1)),
        );
        d.metadata!.labels = { ...d.metadata!.labels, ...labels };
        // On the ReplicaSet too (the deployment controller makes one even for no replicas): its deletion is waited for.
        d.spec!.template.metadata!.labels = { ...d.spec!.template.metadata!.labels, ...labels };
        // No pods: the owner is a made-up app definition, and the claims measure the writes alone.
        d.metadata!.ownerReferences = [];
        d.spec!.replicas = 0;
        return apps.createNamespacedDeployment({ namespace: NAMESPACE, body: d });
      });
      // The deployment controller writes each one's status first (its record then has both managers).
      const read = async () =>
        (await apps.listNamespacedDeployment({ namespace: NAMESPACE, labelSelector: `${LABEL}=true` })).items;
      let instances: k8s.V1Deployment[] = [];
      await until(
        'the Deployments to be observed by the deployment controller',
        async () => {
          instances = await read();
          return (
            instances.length === made.length &&
            instances.every((d) => (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1))
          );
        },
        120_000,
        250,
      );
      instances.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!, 'en', { numeric: true }));
      const paths = (count: number, from = 0) =>
        Array.from({ length: count }, (_, i) => ({
          path: `/rc-${from + i}/`,
          pathType: 'Prefix',
          backend: { service: { name: `${APP}-${from + i}`, port: { number: 80 } } },
        }));
      let ingress = await net.createNamespacedIngress({
        namespace: NAMESPACE,
        body: {
          metadata: { name: APP, labels },
          spec: { rules: [{ host: HOST, http: { paths: paths(sizes.requestCostPaths) } }] },
        },
      });
      // Each instance's free reservation, as the pool makes it (owned by its Deployment).
      const reservations = await pool(instances.length, 20, async (i) => {
        const lease = instanceReservation(definition, i + 1, NAMESPACE, instances[i]!.metadata!);
        lease.metadata!.labels = { ...lease.metadata!.labels, ...labels };
        return coordination.createNamespacedLease({ namespace: NAMESPACE, body: lease });
      });
      const owner = await sessions.create({
        metadata: { name: `${APP}-owner`, labels },
        spec: { user: 'owner@request-cost', appDefinition: APP, sessionSecret: 'o'.repeat(32) },
      });
      const ownerRef = {
        apiVersion: 'ide.cloud/v1beta10',
        kind: 'Session',
        name: owner.metadata.name,
        uid: owner.metadata.uid!,
        controller: false,
        blockOwnerDeletion: false,
      };
      // As the operator's reservation (pool/instances.ts): the Lease as cached (no record), the
      // session's label and uid, on the resourceVersion read; nothing else writes it.
      const claim = (lease: k8s.V1Lease, clearRecord: boolean) => {
        const body = structuredClone(lease);
        delete body.metadata!.managedFields;
        body.apiVersion = 'coordination.k8s.io/v1';
        body.kind = 'Lease';
        body.metadata!.labels = { ...body.metadata!.labels, [LABELS.session]: owner.metadata.name };
        body.spec = { ...body.spec, holderIdentity: owner.metadata.uid };
        if (clearRecord) body.metadata!.managedFields = [{}];
        return coordination.replaceNamespacedLease({ name: lease.metadata!.name!, namespace: NAMESPACE, body });
      };
      const deploymentClaim = async (d: k8s.V1Deployment) => {
        for (let attempt = 0; ; attempt++) {
          const body = structuredClone(d);
          // As the operator's cache keeps it (kube/informer.ts): without the record.
          delete body.metadata!.managedFields;
          body.apiVersion = 'apps/v1';
          body.kind = 'Deployment';
          body.metadata!.labels = { ...body.metadata!.labels, [LABELS.session]: owner.metadata.name };
          body.metadata!.ownerReferences = [ownerRef];
          body.metadata!.managedFields = [{}];
          try {
            return await apps.replaceNamespacedDeployment({ name: d.metadata!.name!, namespace: NAMESPACE, body });
          } catch (error) {
            // Written since it was listed (the deployment controller): as the operator, read and claim again.
            if (!(error instanceof k8s.ApiException && error.code === 409) || attempt >= 3) throw error;
            d = await apps.readNamespacedDeployment({ name: d.metadata!.name!, namespace: NAMESPACE });
          }
        }
      };
      const sessionName = (i: number) => `${APP}-${i}`;
      const requests: Record<RequestKind, (i: number) => Promise<unknown>> = {
        sessionCreate: (i) =>
          sessions.create({
            metadata: {
              name: sessionName(i),
              labels: { ...labels, [LABELS.user]: userLabelValue(`u${i}@rc`), [LABELS.appDefinition]: APP },
              annotations: { [ANNOTATIONS.unanswered]: 'true' },
            },
            spec: { user: `u${i}@rc`, appDefinition: APP, sessionSecret: 's'.repeat(32) },
          }),
        sessionStatus: (i) =>
          sessions.patchStatus(sessionName(i), {
            phase: 'Running',
            url: `https://${HOST}/${sessionName(i)}/`,
            startStrategy: 'eager',
            instanceId: String(i + 1),
            conditions: [
              { type: 'Ready', status: 'True', reason: 'PodReady', lastTransitionTime: new Date().toISOString() },
            ],
          } as NonNullable<Session['status']>),
        sessionMetadata: (i) =>
          sessions.mergePatch(sessionName(i), {
            metadata: {
              annotations: {
                [ANNOTATIONS.unanswered]: null,
                [ANNOTATIONS.startStrategy]: 'eager',
                [ANNOTATIONS.instanceId]: String(i + 1),
              },
            },
          }),
        claim: (i) => claim(reservations[i]!, true),
        claimWithRecord: (i) => claim(reservations[n + i]!, false),
        // Add a path, then take it out again: the Ingress keeps its size.
        // As the operator's route writer does it (routes/routes.ts): the Ingress as last answered,
        // with one path more or less, replaced on its resourceVersion, its field record cleared.
        route: async (i) => {
          const body = structuredClone(ingress);
          const rulePaths = body.spec!.rules![0]!.http!.paths;
          if (i % 2 === 0) rulePaths.push(paths(1, 100_000 + i)[0]!);
          else rulePaths.pop();
          body.metadata!.managedFields = [{}];
          ingress = await net.replaceNamespacedIngress({ name: APP, namespace: NAMESPACE, body });
        },
        deploymentClaim: (i) => deploymentClaim(instances[i]!),
      };
      const measured = new Map<RequestKind, Record<string, number>[]>(REQUEST_KINDS.map((k) => [k, []]));
      const latencies = new Map<RequestKind, number[]>(REQUEST_KINDS.map((k) => [k, []]));
      // The create first (the status and annotation writes are of its sessions); the rest in turns
      // that reverse every other round, so what one kind sets off late falls on its neighbours alike.
      const [first, ...rest] = REQUEST_KINDS;
      for (let r = 0; r < rounds; r++) {
        progress.at(r / rounds, `round ${r + 1}/${rounds}`);
        const turns = r % 2 ? [...rest].reverse() : [...rest];
        // As in a launch, a session's status is written before its mark, which clears its field
        // record (kube/field-record.ts): the status write is measured with the record it has then.
        const [status, mark] = [turns.indexOf('sessionStatus'), turns.indexOf('sessionMetadata')];
        if (mark < status) [turns[status], turns[mark]] = [turns[mark]!, turns[status]!];
        for (const kind of [first, ...turns]) {
          const before = bench.cpuSeconds();
          for (let k = 0; k < per; k++) {
            const sent = performance.now();
            await requests[kind](r * per + k);
            latencies.get(kind)!.push(performance.now() - sent);
          }
          // What the requests set off (the controller manager's reactions, etcd's writes) within the turn.
          await new Promise((resolve) => setTimeout(resolve, 200));
          const after = bench.cpuSeconds();
          measured
            .get(kind)!
            .push(
              Object.fromEntries(CONTROL_PLANE.map((p) => [p, (((after[p] ?? 0) - (before[p] ?? 0)) * 1000) / per])),
            );
        }
      }
      const cpuMsPerRequest = Object.fromEntries(REQUEST_KINDS.map((k) => [k, medianCost(measured.get(k)!)]));
      return {
        requestCost: {
          rounds,
          perRound: per,
          ingressPaths: sizes.requestCostPaths,
          deploymentKiB: round(JSON.stringify(instances[n]).length / 1024, 1),
          fieldRecordKiB: round(JSON.stringify(instances[n]!.metadata!.managedFields ?? []).length / 1024, 1),
          cpuMsPerRequest,
          latencyP50Ms: Object.fromEntries(REQUEST_KINDS.map((k) => [k, summarize(latencies.get(k)!).p50Ms])),
        },
      };
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      progress.step('deleting what it made');
      // A failure to clean up must not hide the scenario's own.
      await clean(kc).catch((error: unknown) => {
        if (!failed) throw error;
      });
    }
  },
};

/**
 * Deletes what the scenario made and waits until it is gone, the ReplicaSets the garbage collector
 * removes included, before the next scenario starts.
 */
async function clean(kc: k8s.KubeConfig): Promise<void> {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const net = kc.makeApiClient(k8s.NetworkingV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const selector = { namespace: NAMESPACE, labelSelector: `${LABEL}=true` };
  const sessions = { group: 'ide.cloud', version: 'v1beta10', plural: 'sessions', ...selector };
  await untilRemoved('what the request costs made', removeRest, 120_000);

  async function removeRest(): Promise<boolean> {
    const [deployments, replicaSets, ingresses, leases, left] = await Promise.all([
      apps.listNamespacedDeployment(selector),
      apps.listNamespacedReplicaSet(selector),
      net.listNamespacedIngress(selector),
      coordination.listNamespacedLease(selector),
      custom.listNamespacedCustomObject(sessions) as Promise<{ items: unknown[] }>,
    ]);
    await Promise.all([
      deployments.items.length && apps.deleteCollectionNamespacedDeployment(selector),
      ingresses.items.length && net.deleteCollectionNamespacedIngress(selector),
      leases.items.length && coordination.deleteCollectionNamespacedLease(selector),
      left.items.length && custom.deleteCollectionNamespacedCustomObject(sessions),
    ]);
    return [deployments, replicaSets, ingresses, leases, left].every((l) => l.items.length === 0);
  }
}

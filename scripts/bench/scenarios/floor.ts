// The floor: what the API server needs for the writes a warm launch cannot avoid, measured on the
// same control plane before the operator and the service start (neither is running). A client of its
// own does the minimal sequence of a launch:
//   1. create the Session (as the service does: labels and spec),
//   2. claim a warm instance: one merge patch of a stand-in Deployment carrying the resourceVersion
//      the client last saw (a conditional write: 409 if anyone changed it), the session label and an
//      owner reference to the Session (as the operator's reservation),
//   3. write the Session's status with the URL (merge patch of /status),
//   4. wait until its watch (an Informer, as the service's cache) sees the Session with the URL.
// A sequence is timed from 1 to 4. Three modes: sequentially (the latency floor), `eagerConcurrent`
// sequences all at once (the floor of the concurrent launches), and `burstConcurrency` in flight for
// `floorSustainedMs` (the throughput ceiling, in sequences per second).
//
// Each sequence in flight claims its own stand-in (one per slot), with the resourceVersion of its watch
// cache (updated by each claim's answer), as the operator claims from its cache without a read. The
// stand-ins have 0 replicas: no pod is made, so the floor is the API server's part only. Everything
// the floor created is deleted before IDE Cloud starts.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { Informer } from '../../../server/src/kube/informer.js';
import { ideCloudResources, type CustomResourceClient } from '../../../server/src/kube/resources.js';
import { LABELS } from '../../../server/src/model/api-group.js';
import { userLabelValue } from '../../../server/src/model/names.js';
import type { Session } from '../../../server/src/model/session.js';
import { NAMESPACE } from '../harness.js';
import { cpuMsPerLaunch } from '../measure.js';
import type { FloorFigures } from '../results.js';
import type { Context, Scenario } from '../scenario.js';
import { pool, round, summarize, until, untilRemoved } from '../util.js';

/** Label of everything the floor creates (deleted by it afterwards). */
const FLOOR_LABEL = 'bench.ide-cloud.io/floor';
/** The floor's client names itself so (not counted as IDE Cloud's in the audit log). */
const USER_AGENT = 'bench-floor';
const APP = 'bench-floor';
const WARM_UP = 10;
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

interface Sequence {
  ms: number;
  createToWatchMs?: number;
  conflicts: number;
}

export const floor: Scenario = {
  name: 'floor',
  title: 'the floor: create, claim, status, watch; operator and service stopped',
  weight: 4,
  needs: 'control-plane',
  async run({ bench, sizes, progress }: Context) {
    const client = new FloorClient(bench.clientConfig(USER_AGENT));
    try {
      const slots = Math.max(sizes.eagerConcurrent, sizes.burstConcurrency);
      progress.step(`creating ${slots} stand-ins for warm instances`);
      await client.start(slots);

      progress.step(`${sizes.floorSequential} sequences, one at a time`);
      for (let i = 0; i < WARM_UP; i++) await client.sequence(0);
      const sequential: Sequence[] = [];
      const t0 = performance.now();
      for (let i = 0; i < sizes.floorSequential; i++) {
        sequential.push(await client.sequence(0));
        progress.at(((i + 1) / sizes.floorSequential) * 0.2, `${i + 1}/${sizes.floorSequential}`);
      }
      const floorSequential = figures(sequential, 1, performance.now() - t0);

      progress.step(`${sizes.eagerConcurrent} sequences at once`);
      const t1 = performance.now();
      const parallel = await Promise.all(Array.from({ length: sizes.eagerConcurrent }, (_, k) => client.sequence(k)));
      const floorParallel = figures(parallel, sizes.eagerConcurrent, performance.now() - t1);

      const seconds = sizes.floorSustainedMs / 1000;
      progress.step(`${sizes.burstConcurrency} sequences in flight for ${seconds} s`);
      const sustained: Sequence[] = [];
      const cpu0 = bench.cpuSeconds();
      const t2 = performance.now();
      const end = t2 + sizes.floorSustainedMs;
      await Promise.all(
        Array.from({ length: sizes.burstConcurrency }, async (_, slot) => {
          while (performance.now() < end) {
            sustained.push(await client.sequence(slot));
            const elapsed = performance.now() - t2;
            progress.at(
              0.3 + 0.6 * (elapsed / sizes.floorSustainedMs),
              `${sustained.length} done, ${Math.round(elapsed / 1000)} s`,
            );
          }
        }),
      );
      const floorSustained = {
        ...figures(sustained, sizes.burstConcurrency, performance.now() - t2),
        cpuMsPerSequence: cpuMsPerLaunch(cpu0, bench.cpuSeconds(), sustained.length),
      };

      progress.step('deleting what the floor created');
      await client.clean();
      return { floorSequential, floorParallel, floorSustained };
    } finally {
      await client.stop();
    }
  },
};

function figures(sequences: Sequence[], concurrency: number, wallMs: number): FloorFigures {
  const toWatch = sequences.map((s) => s.createToWatchMs).filter((x): x is number => x !== undefined);
  return {
    ...summarize(sequences.map((s) => s.ms)),
    concurrency,
    wallMs: Math.round(wallMs),
    sequencesPerSec: round(sequences.length / (wallMs / 1000), 1),
    createToWatchP50Ms: summarize(toWatch).p50Ms,
    conflicts: sequences.reduce((a, s) => a + s.conflicts, 0),
  };
}

/** The floor's client: the writes of a launch, and a watch that sees their result. */
class FloorClient {
  private readonly sessions: CustomResourceClient<'session'>;
  private readonly apps: k8s.AppsV1Api;
  private readonly informer: Informer<Session>;
  /** The stand-ins, as the operator's cache holds the warm instances: claims read their resourceVersion here. */
  private readonly standIns: Informer<k8s.V1Deployment>;
  /** Per session: resolves with the time its URL was seen on the watch. */
  private readonly waiters = new Map<string, (at: number) => void>();
  /** Per session: when the watch first saw it. */
  private readonly seen = new Map<string, number>();
  private next = 0;
  private readonly run = randomBytes(3).toString('hex');

  constructor(private readonly kc: k8s.KubeConfig) {
    this.sessions = ideCloudResources(kc, NAMESPACE).sessions;
    this.apps = kc.makeApiClient(k8s.AppsV1Api);
    this.informer = new Informer<Session>(kc, {
      path: this.sessions.path,
      apiVersion: 'ide.cloud/v1beta10',
      kind: 'Session',
      namespace: NAMESPACE,
      labelSelector: `${FLOOR_LABEL}=true`,
      rewatchIntervalMs: 3_600_000,
    }).on((type, s) => {
      const now = performance.now();
      const name = s.metadata.name;
      if (type === 'DELETED') return;
      if (!this.seen.has(name)) this.seen.set(name, now);
      if (s.status?.url) {
        this.waiters.get(name)?.(now);
        this.waiters.delete(name);
      }
    });
    this.standIns = new Informer<k8s.V1Deployment>(kc, {
      path: `/apis/apps/v1/namespaces/${NAMESPACE}/deployments`,
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace: NAMESPACE,
      labelSelector: `${FLOOR_LABEL}=true`,
      rewatchIntervalMs: 3_600_000,
    });
  }

  /**
   * Starts the watches and creates `slots` stand-in Deployments; returns once the deployment controller
   * has written their first status (which changes their resourceVersion), so no claim races it.
   */
  async start(slots: number): Promise<void> {
    this.informer.start();
    this.standIns.start();
    await Promise.all([this.informer.waitForSync(), this.standIns.waitForSync()]);
    await pool(slots, 20, async (slot) => {
      this.standIns.observe(await this.apps.createNamespacedDeployment({ namespace: NAMESPACE, body: standIn(slot) }));
    });
    await until(
      'the stand-ins to be observed by the deployment controller',
      () =>
        Array.from({ length: slots }, (_, slot) => this.standIns.get(standInName(slot))).every(
          (d) => d?.status?.observedGeneration !== undefined && d.status.observedGeneration >= d.metadata!.generation!,
        ),
      60_000,
      100,
    );
  }

  /** One launch's writes, on the stand-in of `slot`; resolves once the watch saw the URL. */
  async sequence(slot: number): Promise<Sequence> {
    const name = `floor-${this.run}-${this.next++}`;
    const user = `${name}@floor`;
    const seenUrl = new Promise<number>((resolve) => this.waiters.set(name, resolve));
    const t0 = performance.now();
    // 1. the Session, as the service creates it
    const session = await this.sessions.create({
      metadata: {
        name,
        labels: { [FLOOR_LABEL]: 'true', [LABELS.user]: userLabelValue(user), [LABELS.appDefinition]: APP },
      },
      spec: { user, appDefinition: APP, sessionSecret: randomBytes(16).toString('hex') },
    });
    // 2. the claim: conditional on the resourceVersion in the cache
    let conflicts = 0;
    for (;;) {
      try {
        const claimed = await this.apps.patchNamespacedDeployment(
          {
            name: standInName(slot),
            namespace: NAMESPACE,
            body: {
              metadata: {
                resourceVersion: this.standIns.get(standInName(slot))!.metadata!.resourceVersion,
                labels: { [LABELS.session]: name },
                ownerReferences: [
                  {
                    apiVersion: 'ide.cloud/v1beta10',
                    kind: 'Session',
                    name,
                    uid: session.metadata.uid ?? '',
                    controller: false,
                    blockOwnerDeletion: false,
                  },
                ],
              },
            },
          },
          mergePatch,
        );
        this.standIns.observe(claimed);
        break;
      } catch (error) {
        if (!(error instanceof k8s.ApiException && error.code === 409) || conflicts >= 5) throw error;
        // Someone else wrote the stand-in (the deployment controller): read it again and retry.
        conflicts++;
        this.standIns.observe(
          await this.apps.readNamespacedDeployment({ name: standInName(slot), namespace: NAMESPACE }),
        );
      }
    }
    // 3. the status with the URL
    const now = new Date().toISOString();
    await this.sessions.patchStatus(name, {
      phase: 'Running',
      url: `https://sessions.floor.invalid/${name}/`,
      startStrategy: 'eager',
      instanceId: standInName(slot),
      observedGeneration: session.metadata.generation ?? 1,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'PodReady', lastTransitionTime: now, observedGeneration: 1 },
      ],
    });
    // 4. seen on the watch
    const seenAt = await seenUrl;
    const seen = this.seen.get(name);
    return { ms: seenAt - t0, createToWatchMs: seen === undefined ? undefined : seen - t0, conflicts };
  }

  /** Deletes the floor's Sessions and stand-ins and waits until they are gone. */
  async clean(): Promise<void> {
    const custom = this.kc.makeApiClient(k8s.CustomObjectsApi);
    const labelSelector = `${FLOOR_LABEL}=true`;
    const deleteRest = async () => {
      const sessions = await this.sessions.list(labelSelector);
      const deployments = await this.apps.listNamespacedDeployment({ namespace: NAMESPACE, labelSelector });
      if (sessions.length)
        await custom.deleteCollectionNamespacedCustomObject({
          group: 'ide.cloud',
          version: 'v1beta10',
          namespace: NAMESPACE,
          plural: 'sessions',
          labelSelector,
        });
      if (deployments.items.length)
        await this.apps.deleteCollectionNamespacedDeployment({ namespace: NAMESPACE, labelSelector });
      return sessions.length === 0 && deployments.items.length === 0;
    };
    await untilRemoved("the floor's sessions and stand-ins", deleteRest, 300_000);
  }

  async stop(): Promise<void> {
    await Promise.all([this.informer.stop(), this.standIns.stop()]);
  }
}

const standInName = (slot: number) => `floor-instance-${slot}`;

/** A stand-in for a warm instance: a Deployment shaped like one, with no replicas. */
function standIn(slot: number): k8s.V1Deployment {
  const labels = { [FLOOR_LABEL]: 'true', app: standInName(slot) };
  return {
    metadata: { name: standInName(slot), labels: { ...labels, [LABELS.appDefinition]: APP } },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: standInName(slot) } },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'ide',
              image: `ide-cloud/session-${APP}:latest`,
              ports: [{ containerPort: 3000 }],
              resources: { requests: { cpu: '10m', memory: '16M' } },
            },
          ],
        },
      },
    },
  };
}

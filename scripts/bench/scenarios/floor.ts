// The floor: what the API server needs for the writes a warm launch cannot avoid, measured on the
// same control plane right before the IDE Cloud launches it stands beside (eager-launch.ts,
// claim-throughput.ts), in a namespace of its own (FLOOR_NAMESPACE), which the operator, the service and
// the bench's watches do not watch: they are running, idle. Measured minutes apart, the floor and the
// launches fell in different phases of a shared machine, and the ratios of the same code moved by half.
// A client of its own does the minimal sequence of a launch:
//   1. create the Session (as the service does: labels and spec),
//   2. claim a warm instance: one merge patch of a stand-in reservation (a Lease, as the operator's)
//      carrying the resourceVersion the client last saw (a conditional write: 409 if anyone changed
//      it), the session's label and uid (as the operator's reservation),
//   3. write the Session's status with the URL (merge patch of /status),
//   4. wait until its watch (an Informer, as the service's cache) sees the Session with the URL.
// A sequence is timed from 1 to 4. Three modes: sequentially (the latency floor), `eagerConcurrent`
// sequences all at once (the floor of the concurrent launches), and `burstConcurrency` in flight for
// `floorSustainedMs` (the throughput ceiling, in sequences per second). The first two run in rounds,
// each right before IDE Cloud's round of the same mode (eager-launch.ts).
//
// The spec's floor runs the same three modes with what the spec names for a warm launch, by the same
// bare client: the service's create; the operator's hop (it acts on its watch); the claim; the route
// (a path in the shared Ingress, written by the operator's own batching writer, routes/routes.ts);
// the status with the URL; the service's hop (it answers on its watch); and the mark that the session
// was handled, with the decision's annotations. Timed from the create to the mark's answer. Its
// Ingress keeps the paths of a mode's sessions, as IDE Cloud's does (one at a time, those of every
// round; at once, a round's: IDE Cloud's sessions end between those rounds), except in the sustained
// mode, where each slot's last path goes out as its new one comes in (the Ingress stays as small as
// the slots: a floor); that removal is not waited for, and rides in a batch of other routes.
//
// Each sequence in flight claims its own stand-in (one per slot), with the resourceVersion of its watch
// cache (updated by each claim's answer), as the operator claims from its cache without a read. No
// workload stands behind a stand-in, so the floor is the API server's part only. Everything the floor
// created is deleted when the scenario beside it has measured (`Floor.close`).
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { Informer } from '../../../server/src/kube/informer.js';
import { plainIngresses, type IngressClient } from '../../../server/src/kube/plain-answers.js';
import { ideCloudResources, type CustomResourceClient } from '../../../server/src/kube/resources.js';
import { ANNOTATIONS, LABELS } from '../../../server/src/model/api-group.js';
import { Routes } from '../../../server/src/operator/routes/routes.js';
import { userLabelValue } from '../../../server/src/model/names.js';
import type { Session } from '../../../server/src/model/session.js';
import { FLOOR_NAMESPACE } from '../harness.js';
import { cpuMsPerLaunch } from '../measure.js';
import type { FloorFigures } from '../results.js';
import type { Context } from '../scenario.js';
import { pool, round, roundP50s, summarize, untilRemoved } from '../util.js';

/** Label of everything the floor creates (deleted by it afterwards). */
const FLOOR_LABEL = 'bench.ide-cloud.io/floor';
/** The floor's client names itself so (not counted as IDE Cloud's in the audit log). */
const USER_AGENT = 'bench-floor';
const APP = 'bench-floor';
const WARM_UP = 10;
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
/** The spec floor's shared Ingress and the host of its paths. */
const INGRESS = 'bench-floor-routes';
const HOST = 'sessions.floor.invalid';
/** The path an empty spec floor's Ingress keeps (an Ingress rule needs one). */
const PLACEHOLDER = '/floor-placeholder/';
const NAMESPACE = FLOOR_NAMESPACE;

/** What a sequence writes: the floor's three writes, or the spec's five with its two watch hops. */
type Writes = 'floor' | 'spec';

interface Sequence {
  ms: number;
  createToWatchMs?: number;
  conflicts: number;
  /** The spec floor's route: the session's path. */
  path?: string;
}

/**
 * The floor beside a scenario: `open` makes `slots` stand-ins, each mode measures the floor then the
 * spec's floor, `close` deletes what they created.
 */
export class Floor {
  private constructor(
    private readonly context: Context,
    private readonly client: FloorClient,
  ) {}

  static async open(context: Context, slots: number): Promise<Floor> {
    const client = new FloorClient(context.bench.clientConfig(USER_AGENT));
    context.progress.step(`the floor: ${slots} stand-ins for warm instances and the shared Ingress`);
    try {
      await client.start(slots);
    } catch (error) {
      await client.stop();
      throw error;
    }
    return new Floor(context, client);
  }

  /**
   * A round of one at a time: `count` sequences of the floor, then of the spec's floor, each after
   * unmeasured ones (10 in the first round, then 1). The spec floor's Ingress keeps the paths of every
   * round, as IDE Cloud's keeps those of its launches between its rounds.
   */
  async sequentialRound(round: number, count: number): Promise<FloorRound> {
    const { client } = this;
    const run = async (writes: Writes, what: string): Promise<FloorRun> => {
      this.context.progress.step(`${what}: ${count} sequences, one at a time (round ${round + 1})`);
      for (let i = 0; i < (round === 0 ? WARM_UP : 1); i++) await client.sequence(0, writes);
      if (round === 0) await client.resetRoutes();
      const sequences: Sequence[] = [];
      const t0 = performance.now();
      for (let i = 0; i < count; i++) sequences.push(await client.sequence(0, writes));
      return { sequences, wallMs: performance.now() - t0 };
    };
    return { floor: await run('floor', 'the floor'), spec: await run('spec', "the spec's floor") };
  }

  /** A round of `eagerConcurrent` at once, of the floor, then of the spec's floor. */
  async parallelRound(round: number): Promise<FloorRound> {
    const [floor, spec] = await this.each(async (writes, what) => {
      const { sizes, progress } = this.context;
      progress.step(`${what}: ${sizes.eagerConcurrent} sequences at once (round ${round + 1})`);
      const t0 = performance.now();
      const sequences = await Promise.all(
        Array.from({ length: sizes.eagerConcurrent }, (_, k) => this.client.sequence(k, writes)),
      );
      return { sequences, wallMs: performance.now() - t0 };
    });
    return { floor, spec };
  }

  /** `burstConcurrency` in flight for `floorSustainedMs`: `floorSustained`, `specFloorSustained`. */
  async sustained(): Promise<{ floorSustained: FloorFigures; specFloorSustained: FloorFigures }> {
    const { sizes } = this.context;
    const [floor, spec] = await this.each(async (writes, what) => {
      const { bench, progress } = this.context;
      progress.step(`${what}: ${sizes.burstConcurrency} sequences in flight for ${sizes.floorSustainedMs / 1000} s`);
      const sequences: Sequence[] = [];
      const cpu0 = bench.cpuSeconds();
      const t0 = performance.now();
      const end = t0 + sizes.floorSustainedMs;
      await Promise.all(
        Array.from({ length: sizes.burstConcurrency }, async (_, slot) => {
          let last: string | undefined;
          while (performance.now() < end) {
            const done = await this.client.sequence(slot, writes, last);
            last = done.path;
            sequences.push(done);
          }
        }),
      );
      return {
        sequences,
        wallMs: performance.now() - t0,
        cpuMsPerSequence: cpuMsPerLaunch(cpu0, bench.cpuSeconds(), sequences.length),
      };
    });
    const figuresOf = (run: FloorRun) => ({
      ...floorFigures([run], sizes.burstConcurrency),
      cpuMsPerSequence: run.cpuMsPerSequence,
    });
    return { floorSustained: figuresOf(floor), specFloorSustained: figuresOf(spec) };
  }

  /** Deletes what the floor created and stops its watches. */
  async close(): Promise<void> {
    this.context.progress.step('deleting what the floor created');
    try {
      await this.client.clean();
    } finally {
      await this.client.stop();
    }
  }

  /** A mode of the floor, then of the spec's floor, each on an Ingress without session paths. */
  private async each(
    mode: (writes: Writes, what: string) => Promise<FloorRun>,
  ): Promise<[floor: FloorRun, spec: FloorRun]> {
    const floor = await mode('floor', 'the floor');
    await this.client.resetRoutes();
    const spec = await mode('spec', "the spec's floor");
    await this.client.resetRoutes();
    return [floor, spec];
  }
}

/** The sequences of a mode's round and the time they took (the sustained mode: its CPU too). */
interface FloorRun {
  sequences: Sequence[];
  wallMs: number;
  cpuMsPerSequence?: Record<string, number>;
}

/** One round of a mode: the floor's run, then the spec floor's. */
export interface FloorRound {
  floor: FloorRun;
  spec: FloorRun;
}

/** The figures of a mode's rounds, taken together; `roundP50sMs`: each round's own p50, if more than one. */
export function floorFigures(runs: readonly FloorRun[], concurrency: number): FloorFigures {
  const sequences = runs.flatMap((r) => r.sequences);
  const wallMs = runs.reduce((a, r) => a + r.wallMs, 0);
  const toWatch = sequences.map((s) => s.createToWatchMs).filter((x): x is number => x !== undefined);
  return {
    ...summarize(sequences.map((s) => s.ms)),
    concurrency,
    wallMs: Math.round(wallMs),
    sequencesPerSec: round(sequences.length / (wallMs / 1000), 1),
    createToWatchP50Ms: summarize(toWatch).p50Ms,
    conflicts: sequences.reduce((a, s) => a + s.conflicts, 0),
    ...(runs.length > 1 ? { roundP50sMs: roundP50s(runs.map((r) => r.sequences.map((s) => s.ms))) } : {}),
  };
}

/** The floor's client: the writes of a launch, and a watch that sees their result. */
class FloorClient {
  private readonly sessions: CustomResourceClient<'session'>;
  private readonly leases: k8s.CoordinationV1Api;
  private readonly informer: Informer<Session>;
  /** The stand-ins, as the operator's cache holds the reservations: claims read their resourceVersion here. */
  private readonly standIns: Informer<k8s.V1Lease>;
  /** The spec floor's shared Ingress, cached as the operator's, its client and its writer. */
  private readonly ingresses: Informer<k8s.V1Ingress>;
  private readonly net: IngressClient;
  private readonly routes: Routes;
  /** Per session: resolves with the time its URL was seen on the watch. */
  private readonly waiters = new Map<string, (at: number) => void>();
  /** Per session: resolves once the watch saw it (the operator's hop). */
  private readonly arrivals = new Map<string, () => void>();
  /** The spec floor's removals of paths still on their way (`sequence`'s `replacing`). */
  private readonly removals = new Set<Promise<void>>();
  /** Per session: when the watch first saw it. */
  private readonly seen = new Map<string, number>();
  private next = 0;
  private readonly run = randomBytes(3).toString('hex');

  constructor(private readonly kc: k8s.KubeConfig) {
    this.sessions = ideCloudResources(kc, NAMESPACE).sessions;
    this.leases = kc.makeApiClient(k8s.CoordinationV1Api);
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
      if (!this.seen.has(name)) {
        this.seen.set(name, now);
        this.arrivals.get(name)?.();
        this.arrivals.delete(name);
      }
      if (s.status?.url) {
        this.waiters.get(name)?.(now);
        this.waiters.delete(name);
      }
    });
    this.standIns = new Informer<k8s.V1Lease>(kc, {
      path: `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases`,
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      namespace: NAMESPACE,
      labelSelector: `${FLOOR_LABEL}=true`,
      rewatchIntervalMs: 3_600_000,
    });
    this.net = plainIngresses(kc);
    this.ingresses = new Informer<k8s.V1Ingress>(kc, {
      path: `/apis/networking.k8s.io/v1/namespaces/${NAMESPACE}/ingresses`,
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      namespace: NAMESPACE,
      labelSelector: `${FLOOR_LABEL}=true`,
      rewatchIntervalMs: 3_600_000,
    });
    this.routes = new Routes({ net: this.net, namespace: NAMESPACE, ingresses: this.ingresses });
  }

  /** Starts the watches and creates `slots` stand-in reservations. */
  async start(slots: number): Promise<void> {
    this.informer.start();
    this.standIns.start();
    this.ingresses.start();
    await Promise.all([this.informer.waitForSync(), this.standIns.waitForSync(), this.ingresses.waitForSync()]);
    this.ingresses.observe(
      await this.kc.makeApiClient(k8s.NetworkingV1Api).createNamespacedIngress({
        namespace: NAMESPACE,
        body: { metadata: { name: INGRESS, labels: { [FLOOR_LABEL]: 'true' } }, spec: routesSpec() },
      }),
    );
    await pool(slots, 20, async (slot) => {
      this.standIns.observe(await this.leases.createNamespacedLease({ namespace: NAMESPACE, body: standIn(slot) }));
    });
  }

  /**
   * One launch's writes, on the stand-in of `slot`: the floor's (resolves once the watch saw the URL)
   * or the spec's (resolves with the mark's answer). `replacing`: a path of the spec floor's Ingress
   * to take out, not waited for (`resetRoutes` waits for it).
   */
  async sequence(slot: number, writes: Writes, replacing?: string): Promise<Sequence> {
    const name = `floor-${this.run}-${this.next++}`;
    const user = `${name}@floor`;
    const seenUrl = new Promise<number>((resolve) => this.waiters.set(name, resolve));
    const arrived = new Promise<void>((resolve) => this.arrivals.set(name, resolve));
    const t0 = performance.now();
    // 1. the Session, as the service creates it
    const session = await this.sessions.create({
      metadata: {
        name,
        labels: { [FLOOR_LABEL]: 'true', [LABELS.user]: userLabelValue(user), [LABELS.appDefinition]: APP },
      },
      spec: { user, appDefinition: APP, sessionSecret: randomBytes(16).toString('hex') },
    });
    // The spec's: the operator acts on its watch of the Session.
    if (writes === 'spec' && !this.seen.has(name)) await within(arrived, `the watch to see ${name}`);
    this.arrivals.delete(name);
    // 2. the claim: conditional on the resourceVersion in the cache
    let conflicts = 0;
    for (;;) {
      try {
        const claimed = await this.leases.patchNamespacedLease(
          {
            name: standInName(slot),
            namespace: NAMESPACE,
            body: {
              metadata: {
                resourceVersion: this.standIns.get(standInName(slot))!.metadata!.resourceVersion,
                labels: { [LABELS.session]: name },
              },
              spec: { holderIdentity: session.metadata.uid },
            },
          },
          mergePatch,
        );
        this.standIns.observe(claimed);
        break;
      } catch (error) {
        if (!(error instanceof k8s.ApiException && error.code === 409) || conflicts >= 5) throw error;
        // Someone else wrote the stand-in: read it again and retry.
        conflicts++;
        this.standIns.observe(await this.leases.readNamespacedLease({ name: standInName(slot), namespace: NAMESPACE }));
      }
    }
    // The spec's: the session's path in the shared Ingress; the slot's last one goes out beside it.
    const path = `/${name}/`;
    if (writes === 'spec') {
      const entry = (p: string) => ({ host: HOST, path: p, serviceName: standInName(slot) });
      if (replacing) {
        // A path left behind by a failed removal only makes the Ingress larger, as IDE Cloud's is.
        const removal = this.routes.set(INGRESS, entry(replacing), false).catch(() => undefined);
        this.removals.add(removal);
        void removal.then(() => this.removals.delete(removal));
      }
      await this.routes.set(INGRESS, entry(path), true);
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
    const seenAt = await within(seenUrl, `the watch to see the URL of ${name}`);
    const seen = this.seen.get(name);
    const createToWatchMs = seen === undefined ? undefined : seen - t0;
    if (writes === 'floor') return { ms: seenAt - t0, createToWatchMs, conflicts };
    // The spec's: the service marks the session handled, with the decision's annotations, and answers.
    await this.sessions.mergePatch(name, {
      metadata: {
        annotations: { [ANNOTATIONS.startStrategy]: 'eager', [ANNOTATIONS.instanceId]: standInName(slot) },
      },
    });
    return { ms: performance.now() - t0, createToWatchMs, conflicts, path };
  }

  /** Takes every session path out of the spec floor's Ingress: each mode starts on an empty one, as IDE Cloud's launches do. */
  async resetRoutes(): Promise<void> {
    await Promise.all(this.removals);
    const { net } = this;
    for (;;) {
      const current = await net.readNamespacedIngress({ name: INGRESS, namespace: NAMESPACE });
      if ((current.spec?.rules?.[0]?.http?.paths.length ?? 0) <= 1) return;
      try {
        this.ingresses.observe(
          await net.replaceNamespacedIngress({
            name: INGRESS,
            namespace: NAMESPACE,
            body: { ...current, spec: routesSpec() },
          }),
        );
        return;
      } catch (error) {
        if (!(error instanceof k8s.ApiException && error.code === 409)) throw error;
      }
    }
  }

  /** Deletes the floor's Sessions, stand-ins and Ingress and waits until they are gone. */
  async clean(): Promise<void> {
    const custom = this.kc.makeApiClient(k8s.CustomObjectsApi);
    const labelSelector = `${FLOOR_LABEL}=true`;
    const deleteRest = async () => {
      const sessions = await this.sessions.list(labelSelector);
      const standIns = await this.leases.listNamespacedLease({ namespace: NAMESPACE, labelSelector });
      if (sessions.length)
        await custom.deleteCollectionNamespacedCustomObject({
          group: 'ide.cloud',
          version: 'v1beta10',
          namespace: NAMESPACE,
          plural: 'sessions',
          labelSelector,
        });
      if (standIns.items.length)
        await this.leases.deleteCollectionNamespacedLease({ namespace: NAMESPACE, labelSelector });
      const ingress = await this.net.deleteNamespacedIngress({ name: INGRESS, namespace: NAMESPACE }).then(
        () => true,
        (error: unknown) => {
          if (error instanceof k8s.ApiException && error.code === 404) return false;
          throw error;
        },
      );
      return sessions.length === 0 && standIns.items.length === 0 && !ingress;
    };
    await untilRemoved("the floor's sessions, stand-ins and Ingress", deleteRest, 300_000);
  }

  async stop(): Promise<void> {
    await Promise.all([this.informer.stop(), this.standIns.stop(), this.ingresses.stop()]);
  }
}

const standInName = (slot: number) => `floor-instance-${slot}`;

/** What a watch must deliver within a minute, or the scenario fails instead of waiting for ever. */
const WATCH_DEADLINE_MS = 60_000;

function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WATCH_DEADLINE_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** The spec floor's Ingress with no session's path: one rule of the host, holding the placeholder. */
function routesSpec(): k8s.V1IngressSpec {
  const backend = { service: { name: standInName(0), port: { number: 80 } } };
  return { rules: [{ host: HOST, http: { paths: [{ path: PLACEHOLDER, pathType: 'Prefix', backend }] } }] };
}

/** A stand-in for a warm instance's reservation: a free Lease, as the pool makes it. */
function standIn(slot: number): k8s.V1Lease {
  return {
    metadata: { name: standInName(slot), labels: { [FLOOR_LABEL]: 'true', [LABELS.appDefinition]: APP } },
    spec: {},
  };
}

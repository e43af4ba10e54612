// A lazy session's own objects: written once, whatever the passes, and one bridge token for good; a
// pod lost made again, a spent one deleted.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { AppDefinition } from '../../src/model/app-definition.js';
import {
  SESSION_ADMITTED_CONDITION,
  SessionAdmittedReason,
  SessionFailureReason,
  type Session,
} from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { SESSION_BRIDGE_TOKEN_KEY } from '../../src/operator/manifests.js';
import { admitLazyStart } from '../../src/operator/session/admission.js';
import { Pass } from '../../src/operator/session/status.js';
import type { SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { provision } from '../../src/operator/session/steps/workload.js';
import { podsCache, sessionsCache } from './cache-fakes.js';

const NAMESPACE = 'ns';

const appDefinition = {
  apiVersion: 'ide-cloud.io/v1',
  kind: 'AppDefinition',
  metadata: { name: 'java', uid: 'app-uid', generation: 1 },
  spec: {
    name: 'java',
    image: 'java:1',
    port: 3000,
    ingressname: 'sessions',
    options: { dataBridgeEnabled: 'true', dataBridgePort: '16400' },
    sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
  },
} as unknown as AppDefinition;

function session(uid = '5f0c4d9e-0000-4000-8000-000000000001'): Session {
  return {
    apiVersion: 'ide-cloud.io/v1',
    kind: 'Session',
    metadata: { name: 'lou-1', namespace: NAMESPACE, uid, generation: 1 },
    spec: { user: 'lou@example.com', appDefinition: 'java', envVars: { GIT_USER: 'Lou' } },
    status: { startStrategy: 'lazy' },
  } as unknown as Session;
}

/** A cache that sees only what is observed into it (its watch events never come in this test). */
function cache<T extends k8s.KubernetesObject>() {
  const objects = new Map<string, T>();
  return {
    get: (name: string) => objects.get(name),
    observe: (object: T) => void objects.set(object.metadata!.name!, object),
  };
}

/**
 * The API server's objects, created or written by server-side apply: every write recorded as kind/name
 * (a generated name as its prefix and `*`), every deletion as `-kind/name`.
 */
function objectsApi() {
  const stored = new Map<string, k8s.KubernetesObject>();
  const writes: string[] = [];
  const reads: string[] = [];
  let version = 0;
  const key = (o: k8s.KubernetesObject) => `${o.kind}/${o.metadata!.name}`;
  const api = {
    patch: async (object: k8s.KubernetesObject) => {
      writes.push(object.metadata?.name ? key(object) : `${object.kind}/${object.metadata?.generateName}*`);
      const name = object.metadata?.name ?? `${object.metadata?.generateName}${++version}`;
      const written = structuredClone({
        ...object,
        metadata: { ...object.metadata, name, resourceVersion: String(++version) },
      });
      stored.set(key(written), written);
      return structuredClone(written);
    },
    create: async (object: k8s.KubernetesObject) => {
      if (object.metadata?.name && stored.has(key(object))) throw new k8s.ApiException(409, 'already exists', {}, {});
      return api.patch(object);
    },
    read: async (spec: k8s.KubernetesObject) => {
      reads.push(key(spec));
      const found = stored.get(key(spec));
      if (!found) throw new k8s.ApiException(404, 'not found', {}, {});
      return structuredClone(found);
    },
    delete: async (spec: k8s.KubernetesObject) => {
      writes.push(`-${key(spec)}`);
      if (!stored.delete(key(spec))) throw new k8s.ApiException(404, 'not found', {}, {});
      return {};
    },
  };
  return { api: api as unknown as k8s.KubernetesObjectApi, stored, writes, reads };
}

/** The pods the API server holds: a pods cache whose watch has caught up with every write. */
const storedPods = (stored: Map<string, k8s.KubernetesObject>) =>
  [...stored.values()].filter((o): o is k8s.V1Pod => o.kind === 'Pod');

/** `pods`: a cache whose watch is caught up; else one that sees only what is observed into it. */
function deps(objects: k8s.KubernetesObjectApi, pods?: () => k8s.V1Pod[]) {
  const observed: k8s.V1Pod[] = [];
  return {
    config: parseOperatorConfig({ namespace: NAMESPACE }),
    namespace: NAMESPACE,
    objects,
    deployments: cache<k8s.V1Deployment>(),
    replicaSets: cache<k8s.V1ReplicaSet>(),
    pods: { ...podsCache(pods ?? (() => observed)), observe: (pod: k8s.V1Pod) => void observed.push(pod) },
    services: cache<k8s.V1Service>(),
    sessions: { list: () => [] },
  } as unknown as SessionStepDeps;
}

const token = (stored: Map<string, k8s.KubernetesObject>) =>
  (stored.get('Secret/lou-1-env') as k8s.V1Secret | undefined)?.data?.[SESSION_BRIDGE_TOKEN_KEY];

describe('operator: the objects of a lazy session', () => {
  it('passes that come before the pod is seen write nothing again and keep the token', async () => {
    const server = objectsApi();
    const d = deps(server.api);
    const s = session();
    for (let pass = 0; pass < 3; pass++) {
      await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    }
    assert.deepEqual(server.writes, [
      'Secret/lou-1-env',
      'Service/lou-1-db',
      'Deployment/lou-1-db',
      'Pod/lou-1-*',
      'Service/lou-1',
    ]);
    assert.ok(token(server.stored));
    // The first pass creates the Secret without reading it first.
    assert.deepEqual(server.reads, []);
  });

  it('a pass after a restart between the Secret and the pod keeps the Secret and its token', async () => {
    const server = objectsApi();
    const s = session();
    const first = deps(server.api);
    // The first operator wrote the Secret (and a pod could have read it), then died before the pod.
    await provision({ deps: first, session: s, pass: new Pass(s), appDefinition });
    const written = token(server.stored);
    for (const pod of storedPods(server.stored)) server.stored.delete(`Pod/${pod.metadata!.name}`);
    server.writes.length = 0;
    await provision({ deps: deps(server.api), session: s, pass: new Pass(s), appDefinition });
    assert.equal(token(server.stored), written);
    assert.deepEqual(server.reads, ['Secret/lou-1-env']);
    assert.deepEqual(server.writes, ['Service/lou-1-db', 'Deployment/lou-1-db', 'Pod/lou-1-*', 'Service/lou-1']);
  });

  it('a pod lost is made again, with the Secret and its token as they were; a live one is kept', async () => {
    const server = objectsApi();
    const s = session();
    const d = deps(server.api, () => storedPods(server.stored));
    await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    const written = token(server.stored);
    const [first] = storedPods(server.stored);
    server.writes.length = 0;
    // The pod is evicted: it stays, Failed, and is deleted; a new one is made in the same pass. The
    // sidecar runs on (its Deployment's watch event came): not applied again.
    first!.status = { phase: 'Failed', reason: 'Evicted' };
    d.deployments.observe(server.stored.get('Deployment/lou-1-db') as k8s.V1Deployment);
    await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    assert.deepEqual(server.writes, [`-Pod/${first!.metadata!.name}`, 'Pod/lou-1-*']);
    assert.equal(token(server.stored), written);
    const [second] = storedPods(server.stored);
    assert.notEqual(second!.metadata!.name, first!.metadata!.name);
    assert.equal(second!.metadata!.labels!.app, first!.metadata!.labels!.app);
    // Its Service and the Secret were there: neither is written again, nor is the live pod.
    server.writes.length = 0;
    await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    assert.deepEqual(server.writes, []);
  });

  it("a second live pod of the session's (a create made twice) is deleted, the older one kept", async () => {
    const server = objectsApi();
    const s = session();
    const d = deps(server.api, () => storedPods(server.stored));
    await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    const [older] = storedPods(server.stored);
    older!.metadata!.creationTimestamp = new Date('2026-12-03T08:00:00Z');
    const twin = structuredClone({ ...older!, metadata: { ...older!.metadata, name: 'lou-1-twin' } });
    // As a watch event gives it (a string), the older one as a create's answer does (a Date).
    twin.metadata.creationTimestamp = '2026-12-03T08:00:01Z' as unknown as Date;
    server.stored.set('Pod/lou-1-twin', twin);
    server.writes.length = 0;
    await provision({ deps: d, session: s, pass: new Pass(s), appDefinition });
    assert.deepEqual(server.writes, ['-Pod/lou-1-twin']);
    assert.deepEqual(
      storedPods(server.stored).map((p) => p.metadata!.name),
      [older!.metadata!.name],
    );
  });

  const security =
    'pods "lou-1-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "java" must set securityContext.runAsNonRoot=true)';
  for (const { status, message, served, outcome } of [
    {
      status: 403,
      message: security,
      served: false,
      outcome: {
        name: 'FailObject',
        failureReason: SessionFailureReason.podRefused,
        reason: `the cluster refused the IDE pod (Forbidden): ${security.slice(security.indexOf('violates'))}`,
      },
    },
    {
      status: 422,
      message: 'Pod "lou-1-x" is invalid: spec.containers[0].env[1].value: Invalid value: "git-credential-5f1e9a"',
      served: false,
      outcome: {
        name: 'FailObject',
        failureReason: SessionFailureReason.podRefused,
        reason: 'the cluster refused the IDE pod (Invalid)',
      },
    },
    // A session that has served waits for its pod, as a ReplicaSet would.
    { status: 403, message: security, served: true, outcome: { name: 'RetryLater' } },
    {
      status: 403,
      message:
        'pods "lou-1-x" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10',
      served: false,
      outcome: { name: 'RetryLater', message: "the namespace's quota has no room for the IDE pod yet" },
    },
    // No verdict on the pod: the operator's own rights, a namespace being deleted.
    {
      status: 403,
      message: 'pods is forbidden: User "system:serviceaccount:ide:operator" cannot create resource "pods"',
      served: false,
      outcome: { name: 'ApiException' },
    },
  ]) {
    it(`a pod create refused (${status}, ${served ? 'served' : 'starting'}, "${message.slice(0, 40)}…"): ${outcome.name}`, async () => {
      const server = objectsApi();
      const create = server.api.create.bind(server.api);
      server.api.create = (async (object: k8s.KubernetesObject, ...rest: unknown[]) => {
        if (object.kind !== 'Pod') return create(object, ...(rest as []));
        const reason = status === 403 ? 'Forbidden' : 'Invalid';
        throw new k8s.ApiException(status, message, JSON.stringify({ kind: 'Status', reason, message }), {});
      }) as typeof server.api.create;
      const s = session();
      if (served) s.status = { ...s.status, url: 'https://ide.test/lou-1/k/' };
      const rejected = await provision({ deps: deps(server.api), session: s, pass: new Pass(s), appDefinition }).then(
        () => assert.fail('provisioned'),
        (error: unknown) => error as Error & Record<string, unknown>,
      );
      assert.equal(rejected.constructor.name, outcome.name);
      for (const [key, value] of Object.entries(outcome)) if (key !== 'name') assert.equal(rejected[key], value, key);
      // No value of the pod's ever reaches what the session tells.
      assert.ok(!JSON.stringify({ ...rejected, message: rejected.message }).includes('git-credential'));
      // The Service was written beside the pod, and is in the cache: the next pass does not write it again.
      assert.ok(server.writes.includes('Service/lou-1'));
    });
  }

  it("a namesake's Secret (another session of that name) gets this session's values and a token of its own", async () => {
    const server = objectsApi();
    const namesake = session('old-uid');
    await provision({ deps: deps(server.api), session: namesake, pass: new Pass(namesake), appDefinition });
    const theirs = token(server.stored);
    const s = session();
    await provision({ deps: deps(server.api), session: s, pass: new Pass(s), appDefinition });
    const secret = server.stored.get('Secret/lou-1-env') as k8s.V1Secret;
    assert.equal(secret.metadata?.ownerReferences?.[0]?.uid, s.metadata.uid);
    assert.notEqual(token(server.stored), theirs);
  });
});

describe('operator: the lazy-start gate turned off', () => {
  it('a session queued under a gate admits at its next pass, at the injected clock', () => {
    const s = session();
    s.status = {
      startStrategy: 'lazy',
      lazyStartRate: { perSecond: 0.1, burst: 1 },
      conditions: [
        {
          type: SESSION_ADMITTED_CONDITION,
          status: 'False',
          reason: SessionAdmittedReason.queued,
          message: 'waiting',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    };
    const pass = new Pass(s);
    const at = Date.parse('2026-01-01T00:05:00Z');
    admitLazyStart(
      {
        sessions: sessionsCache(() => []),
        deployments: { get: () => undefined },
        replicaSets: { get: () => undefined },
        pods: podsCache(() => []),
        now: () => at,
      },
      s,
      pass,
    );
    const admitted = pass.status.conditions?.find((c) => c.type === SESSION_ADMITTED_CONDITION);
    assert.equal(admitted?.status, 'True');
    assert.equal(admitted?.lastTransitionTime, new Date(at).toISOString());
  });

  it('a session the gate never met gets no Admitted condition', () => {
    const s = session();
    const pass = new Pass(s);
    admitLazyStart(
      {
        sessions: sessionsCache(() => []),
        deployments: { get: () => undefined },
        replicaSets: { get: () => undefined },
        pods: podsCache(() => []),
      },
      s,
      pass,
    );
    assert.equal(pass.status.conditions, undefined);
  });
});

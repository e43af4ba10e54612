// Every Kubernetes call has a deadline (issue 17): with the API server paused (SIGSTOP: it keeps its
// connections and answers nothing, as a stalled or partitioned one does), the service answers 503 with
// Retry-After instead of hanging, informer lists fail and are retried while their watches stay open,
// and after SIGCONT the service and the operator work again. On a control plane of its own, so no
// other suite is frozen.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import {
  killControlPlaneSync,
  startControlPlane,
  stopControlPlane,
  type ControlPlaneState,
} from '../../scripts/cluster/control-plane.js';
import { configureClient, isApiUnavailable } from '../../server/src/kube/client.js';
import { Informer } from '../../server/src/kube/informer.js';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { API_SERVER_RETRY_AFTER_SECONDS } from '../../server/src/service/errors.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import { sessionUrlPattern } from '../support/landing.js';
import { testOperator } from '../support/operator.js';
import { stopSharedRealNode } from '../support/real-node.js';
import {
  SERVICE_AUTH_TOKEN,
  applyAppDefinitions,
  call,
  resourcesOf,
  startTestService,
  type Answer,
  type TestService,
} from '../support/service-harness.js';

const appId = SERVICE_AUTH_TOKEN;
/** The deadline of every API call of the service and the operator here. */
const DEADLINE_MS = 1000;
/** A call of the service that has not answered by then hangs: the test fails instead of waiting. */
const ANSWER_WITHIN_MS = 30_000;

const TIMED_OUT = {
  code: 503,
  reason: 'the Kubernetes API server did not answer in time; retry later',
};

/** One call of the service that must answer within ANSWER_WITHIN_MS (it rejects otherwise). */
function callWithin(base: string, method: string, route: string, body?: unknown): Promise<Answer> {
  return call(base, method, route, { body, timeoutMs: ANSWER_WITHIN_MS });
}

function kubeConfigOf(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/** What may be shown of an error: its name, type, code and the start of its message. */
const describeErrors = (errors: unknown[]) =>
  JSON.stringify(
    errors.slice(0, 3).map((e) => {
      const x = e as { name?: string; type?: string; code?: string; message?: string };
      return [x.name, x.type, x.code, x.message?.slice(0, 120)];
    }),
  );

describe('Kubernetes API calls with a deadline: the API server paused', function () {
  this.timeout(300_000);
  let dir: string;
  let state: ControlPlaneState | undefined;
  let kc: k8s.KubeConfig;
  let namespace: string;
  let resources: IdeCloudResources;
  let service: TestService | undefined;
  let operator: RunningOperator | undefined;
  const operatorLogs: string[] = [];
  let paused = false;
  const killOnExit = () => state && killControlPlaneSync(state);

  const apiServerPid = () => {
    const pid = state?.pids['kube-apiserver'];
    assert.ok(pid, 'the control plane records the API server pid');
    return pid;
  };
  const pause = () => {
    paused = true;
    process.kill(apiServerPid(), 'SIGSTOP');
  };
  const resume = () => {
    if (!paused) return;
    process.kill(apiServerPid(), 'SIGCONT');
    paused = false;
  };

  before(async () => {
    // A real node's packet rules change how a connection to a stopped API server fails (no deadline
    // passes): the shared one goes first, and importing its module keeps this suite in the real-node
    // lane (scripts/test/lanes.ts), never beside one.
    await stopSharedRealNode();
    dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-test-deadline-'));
    state = await startControlPlane(path.join(dir, 'cluster'));
    process.once('exit', killOnExit);
    kc = kubeConfigOf(state.kubeconfig);
    namespace = await createTestNamespace(kc, 'api-deadline');
    resources = resourcesOf(kc, namespace);
    await applyAppDefinitions(resources, [{}]);
    // Each component with a KubeConfig of its own, as in their own processes.
    operator = await testOperator(
      kubeConfigOf(state.kubeconfig),
      namespace,
      { eagerStart: false, sessionsPerUser: 2, apiRequestTimeoutMs: DEADLINE_MS },
      operatorLogs,
    );
    service = await startTestService(kubeConfigOf(state.kubeconfig), namespace, {
      sessionsPerUser: 2,
      apiRequestTimeoutMs: DEADLINE_MS,
    });
  });

  after(async () => {
    // Whatever failed, the API server runs again before anything is stopped.
    try {
      resume();
    } finally {
      await service?.close().catch(() => undefined);
      await operator?.stop().catch(() => undefined);
      if (state) await stopControlPlane(state.dir).catch(() => undefined);
      process.removeListener('exit', killOnExit);
      state = undefined;
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers 503 with Retry-After while it is paused, lists retry, watches stay; afterwards all works again', async () => {
    // A running session, and a watch opened before the pause on a client with the deadline.
    const launched = await callWithin(service!.url, 'POST', '/service', {
      appId,
      user: 'alice@example.com',
      appDefinition: 'python-latest',
      ephemeral: true,
      timeout: 2,
    });
    assert.equal(launched.status, 200, launched.text);
    const [alice] = (await callWithin(service!.url, 'GET', `/service/session/${appId}/alice%40example.com`)).json as {
      name: string;
    }[];
    assert.ok(alice?.name);

    const client = configureClient(kubeConfigOf(state!.kubeconfig), 'ide-cloud-test', {
      requestTimeoutMs: DEADLINE_MS,
    });
    const watched: string[] = [];
    let watchEnded: unknown = false;
    const watch = await new k8s.Watch(client).watch(
      `/api/v1/namespaces/${namespace}/configmaps`,
      {},
      (phase: string, object: k8s.V1ConfigMap) => watched.push(`${phase} ${object.metadata?.name}`),
      (error: unknown) => (watchEnded = error ?? 'closed'),
    );

    pause();
    try {
      // The stop of a cached session (its DELETE), the stop of a session the cache does not hold (its
      // GET), and a launch (its create): each answers 503 with Retry-After, in the service's shape.
      const [stop, stopUnknown, launch, listing] = await Promise.all([
        callWithin(service!.url, 'DELETE', '/service/session', {
          appId,
          user: 'alice@example.com',
          sessionName: alice.name,
        }),
        callWithin(service!.url, 'DELETE', '/service/session', {
          appId,
          user: 'alice@example.com',
          sessionName: 'session-not-in-the-cache',
        }),
        callWithin(service!.url, 'POST', '/service', {
          appId,
          user: 'bob@example.com',
          appDefinition: 'python-latest',
          ephemeral: true,
        }),
        // A listing is served from the cache (README: Caches): it answers at once, a moment stale.
        callWithin(service!.url, 'GET', `/service/session/${appId}/alice%40example.com`),
      ]);
      for (const answer of [stop, stopUnknown, launch]) {
        assert.equal(answer.status, 503, answer.text);
        assert.deepEqual(answer.json, TIMED_OUT);
        assert.equal(answer.headers.get('retry-after'), String(API_SERVER_RETRY_AFTER_SECONDS));
        // Nothing of what the client library reported reaches the caller.
        assert.doesNotMatch(answer.text, /abort|fetch|ECONN|socket/i);
      }
      assert.equal(listing.status, 200, listing.text);
      assert.deepEqual(
        (listing.json as { name: string }[]).map((s) => s.name),
        [alice.name],
      );

      // One call of the client with the deadline rejects as "no answer in time".
      const objects = k8s.KubernetesObjectApi.makeApiClient(client);
      const listed = await objects.list('v1', 'ConfigMap', namespace).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.equal(isApiUnavailable(listed), 'timeout');

      // An informer's list has the deadline too: it fails (and is retried) instead of hanging.
      const errors: unknown[] = [];
      const informer = new Informer<k8s.V1ConfigMap>(client, {
        path: `/api/v1/namespaces/${namespace}/configmaps`,
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace,
        rewatchIntervalMs: 300_000,
        maxBackoffMs: 500,
        onError: (error) => errors.push(error),
      });
      informer.start();
      try {
        await eventually(
          () =>
            assert.ok(
              errors.some((e) => isApiUnavailable(e) === 'timeout'),
              `the informer's errors: ${describeErrors(errors)}`,
            ),
          ANSWER_WITHIN_MS,
        );
        // The operator's calls end too: its Lease renewals fail with the deadline, logged, not hung.
        await eventually(
          () =>
            assert.ok(
              operatorLogs.some(
                (line) => line.includes('leader election attempt failed') && line.includes('"AbortError"'),
              ),
              'the operator logs a Lease renewal that timed out',
            ),
          ANSWER_WITHIN_MS,
        );
        assert.equal(informer.hasSynced, false);

        resume();
        await informer.waitForSync();
      } finally {
        await informer.stop();
      }
    } finally {
      resume();
    }

    // The watch opened before the pause outlived it (no short deadline on watches) and still reports.
    await k8s.KubernetesObjectApi.makeApiClient(client).create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'after-the-pause', namespace },
    });
    await eventually(() => assert.ok(watched.includes('ADDED after-the-pause'), watched.join(', ')), ANSWER_WITHIN_MS);
    assert.equal(watchEnded, false, 'the watch opened before the pause is still open');
    watch.abort();

    // The service answers again: alice's stop (her session goes), and a new launch, which the operator
    // (leading again once its Lease renewals answer) takes to Running.
    const stopped = await eventually(async () => {
      const answer = await callWithin(service!.url, 'DELETE', '/service/session', {
        appId,
        user: 'alice@example.com',
        sessionName: alice.name,
      });
      assert.equal(answer.status, 200, answer.text);
      return answer;
    }, ANSWER_WITHIN_MS);
    assert.equal(stopped.json, true);
    await eventually(async () => assert.equal(await resources.sessions.find(alice.name), undefined), 60_000);

    const relaunched = await callWithin(service!.url, 'POST', '/service', {
      appId,
      user: 'carol@example.com',
      appDefinition: 'python-latest',
      ephemeral: true,
      timeout: 2,
    });
    assert.equal(relaunched.status, 200, relaunched.text);
    const [carol] = (await callWithin(service!.url, 'GET', `/service/session/${appId}/carol%40example.com`)).json as {
      name: string;
      phase: string;
    }[];
    assert.equal(carol?.phase, 'Running');
    assert.match(relaunched.text, sessionUrlPattern(carol.name));
  });
});

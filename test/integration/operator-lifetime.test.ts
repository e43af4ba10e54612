// The maximum lifetime of an app definition's sessions (issue 17): counted from creation, however
// active the session is, the stop reason in status (Ready False, Stopping, the reason as its message,
// written before the delete), a Stopped Event and the stop-reason annotation. Another
// app definition's session of the same age goes on. Real API server and operator; the lifetime is
// one minute, the smallest the field takes, so the test waits about that long.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { ANNOTATIONS, API_VERSION } from '../../server/src/model/api-group.js';
import type { Session } from '../../server/src/model/session.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, eventually } from '../support/kube.js';
import {
  cleanUpSuite,
  createAppDefinition,
  createSession,
  ideCloudResources,
  running,
  testOperator,
  waitForSession,
} from '../support/operator.js';

describe("operator: an app definition's maximum lifetime stops its sessions however active", function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let operator: RunningOperator | undefined;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'op-lifetime');
    r = ideCloudResources(cluster.kc, namespace);
    await createAppDefinition(r, 'timed', { timeout: 30, maxLifetimeMinutes: 1 });
    await createAppDefinition(r, 'untimed', { timeout: 30 });
    operator = await testOperator(cluster.kc, namespace, { eagerStart: false, activityIntervalMs: 500 });
  });
  after(async () => {
    await cleanUpSuite(cluster.kc, namespace, [operator]);
  });

  it('stops the session at its lifetime while it reports activity, with the reason; the other goes on', async () => {
    const timed = await createSession(r, 'timed-1', { user: 'ada@example.com', appDefinition: 'timed' });
    await createSession(r, 'untimed-1', { user: 'grace@example.com', appDefinition: 'untimed' });
    await Promise.all(['timed-1', 'untimed-1'].map((n) => waitForSession(r, n, running)));
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    // The session's states as a watch reports them, to the finalizer's last status write.
    const seen: Session[] = [];
    const watch = await new k8s.Watch(cluster.kc).watch(
      `/apis/${API_VERSION}/namespaces/${namespace}/sessions`,
      { fieldSelector: 'metadata.name=timed-1' },
      (_type: string, s: Session) => void seen.push(s),
      () => undefined,
    );
    try {
      await eventually(
        async () => {
          // Both students are active, as PATCH /service/session reports it.
          const now = new Date().toISOString();
          for (const n of ['timed-1', 'untimed-1'])
            await r.sessions.patchStatus(n, { lastActivity: now }).catch(() => undefined);
          const session = await r.sessions.find('timed-1');
          assert.ok(!session || session.metadata.deletionTimestamp, 'timed-1 still running');
        },
        120_000,
        1000,
      );
      await eventually(() => {
        const stopping = seen.find((s) =>
          s.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'Stopping' && c.status === 'False'),
        );
        assert.ok(stopping, 'no Stopping status seen yet');
        assert.equal(stopping.status?.phase, 'Stopping');
        const ready = stopping.status?.conditions?.find((c) => c.type === 'Ready');
        assert.match(ready?.message ?? '', /^stopped: MaxLifetime: running for more than 1 minute/);
        // Active until it is being deleted (a Stopping status before would release its instance early):
        // the finalizer writes the reason the stop left on the session.
        assert.ok(stopping.metadata.deletionTimestamp, 'Stopping only once the session is being deleted');
        const early = seen.find((x) => x.status?.phase === 'Stopping' && !x.metadata.deletionTimestamp);
        assert.equal(early, undefined, 'a Stopping status before the delete');
        assert.match(stopping.metadata.annotations?.[ANNOTATIONS.stopReason] ?? '', /^MaxLifetime: /);
      });
    } finally {
      watch.abort();
    }
    const events = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=Session,involvedObject.name=timed-1`,
    });
    const stopped = events.items.find((e) => e.reason === 'Stopped');
    assert.ok(stopped, 'a Stopped Event');
    assert.equal(stopped.involvedObject.uid, timed.metadata.uid);
    assert.match(stopped.message ?? '', /^session stopped: MaxLifetime: running for more than 1 minute/);
    const untimed = await r.sessions.get('untimed-1');
    assert.ok(running(untimed) && !untimed.metadata.deletionTimestamp, 'the other app definition has no lifetime');
  });
});

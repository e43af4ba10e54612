// The maximum lifetime of an app definition's sessions (issue 17): counted from creation, however
// active the session is, the stop reason in status (Ready False, Stopping, the reason as its message,
// written before the delete), a Stopped Event and the stop-reason annotation. Another
// app definition's session of the same age goes on. Real API server and operator; the lifetime is a
// quarter of a minute, so the test waits about that long.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { ANNOTATIONS, API_VERSION } from '../../server/src/model/api-group.js';
import type { Session } from '../../server/src/model/session.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

/** Long enough for both sessions to run and the watch to start before it ends. */
const LIFETIME_MINUTES = 0.25;
/** The reason a lifetime stop gives, as a pattern. */
const LIFETIME_REASON = `MaxLifetime: running for more than ${String(LIFETIME_MINUTES).replaceAll('.', '\\.')} minute`;

describe("operator: an app definition's maximum lifetime stops its sessions however active", function () {
  const stack = useStack('op-lifetime', {
    apps: [
      appDefinitionSpec('timed', { timeout: 30, maxLifetimeMinutes: LIFETIME_MINUTES }),
      appDefinitionSpec('untimed', { timeout: 30 }),
    ],
    operator: { eagerStart: false, activityIntervalMs: 500 },
  });
  this.timeout(180_000);

  it('stops the session at its lifetime while it reports activity, with the reason; the other goes on', async () => {
    const timed = await createSession(stack.resources, 'timed-1', { user: 'ada@example.com', appDefinition: 'timed' });
    await createSession(stack.resources, 'untimed-1', { user: 'grace@example.com', appDefinition: 'untimed' });
    await Promise.all(['timed-1', 'untimed-1'].map((n) => waitForSession(stack.resources, n, running)));
    // The session's states as a watch reports them, to the finalizer's last status write.
    const seen: Session[] = [];
    const watch = await new k8s.Watch(stack.kc).watch(
      `/apis/${API_VERSION}/namespaces/${stack.namespace}/sessions`,
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
            await stack.resources.sessions.patchStatus(n, { lastActivity: now }).catch(() => undefined);
          const session = await stack.resources.sessions.find('timed-1');
          assert.ok(!session || session.metadata.deletionTimestamp, 'timed-1 still running');
        },
        120_000,
        500,
      );
      await eventually(() => {
        const stopping = seen.find((s) =>
          s.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'Stopping' && c.status === 'False'),
        );
        assert.ok(stopping, 'no Stopping status seen yet');
        assert.equal(stopping.status?.phase, 'Stopping');
        const ready = stopping.status?.conditions?.find((c) => c.type === 'Ready');
        assert.match(ready?.message ?? '', new RegExp(`^stopped: ${LIFETIME_REASON}`));
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
    // The recorder's background writer sends the Event beside the delete, not before it.
    const stopped = await eventually(async () => {
      const events = await stack.core.listNamespacedEvent({
        namespace: stack.namespace,
        fieldSelector: `involvedObject.kind=Session,involvedObject.name=timed-1`,
      });
      const found = events.items.find((e) => e.reason === 'Stopped');
      assert.ok(found, 'a Stopped Event');
      return found;
    });
    assert.equal(stopped.involvedObject.uid, timed.metadata.uid);
    assert.match(stopped.message ?? '', new RegExp(`^session stopped: ${LIFETIME_REASON}`));
    const untimed = await stack.resources.sessions.get('untimed-1');
    assert.ok(running(untimed) && !untimed.metadata.deletionTimestamp, 'the other app definition has no lifetime');
  });
});

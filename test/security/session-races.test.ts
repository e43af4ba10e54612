// Races of the operator's session pass (issue 27, item 10): a status write of a pass that read a
// session is refused on a later session of the same name (uid precondition), and a config store
// deleted after the session was routed is made again.
import assert from 'node:assert/strict';
import { writeStatus } from '../../server/src/operator/session/status.js';
import { eventually } from '../support/kube.js';
import { createAppDefinition, createSession, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

describe('security: races of the session pass', function () {
  const stack = useStack('sec-races');
  this.timeout(180_000);

  it('a status write of a pass that read a session does not land on a later session of the same name', async () => {
    // No operator: the pass is played by hand with the operator's own writer.
    await createAppDefinition(stack.resources, 'go-latest', { minInstances: 0, maxInstances: 10 });
    const read = await createSession(stack.resources, 'reborn', {
      user: 'ann@example.com',
      appDefinition: 'go-latest',
    });
    await stack.resources.sessions.delete('reborn');
    await eventually(async () => assert.equal(await stack.resources.sessions.find('reborn'), undefined), 30_000);
    const later = await createSession(stack.resources, 'reborn', {
      user: 'bob@example.com',
      appDefinition: 'go-latest',
    });
    assert.notEqual(later.metadata.uid, read.metadata.uid);
    await writeStatus({ sessions: { observe: () => undefined }, sessionsApi: stack.resources.sessions }, read, {
      phase: 'Running',
      url: 'https://ide.example.test/reborn/stale/',
    });
    assert.equal(
      (await stack.resources.sessions.get('reborn')).status?.url,
      undefined,
      "the later session's status is untouched",
    );
  });

  it('a config store deleted after the session was routed is made again', async () => {
    await stack.startOperator({ eagerStart: false });
    await createAppDefinition(stack.resources, 'store-latest', {
      minInstances: 0,
      maxInstances: 10,
      options: { configStore: 'true' },
    });
    await createSession(stack.resources, 'stored', { user: 'cy@example.com', appDefinition: 'store-latest' });
    await waitForSession(stack.resources, 'stored', running, 60_000);
    const store = await stack.core.readNamespacedConfigMap({ name: 'stored-config', namespace: stack.namespace });
    await stack.core.deleteNamespacedConfigMap({ name: 'stored-config', namespace: stack.namespace });
    await eventually(async () => {
      const again = await stack.core.readNamespacedConfigMap({ name: 'stored-config', namespace: stack.namespace });
      assert.notEqual(again.metadata?.uid, store.metadata?.uid, 'a new config store');
    }, 30_000);
  });
});

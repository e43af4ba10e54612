// Races of the operator's session pass (issue 27, item 10): a status write of a pass that read a
// session is refused on a later session of the same name (uid precondition), and a config store
// deleted after the session was routed is made again.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { writeStatus } from '../../server/src/operator/session/status.js';
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

describe('security: races of the session pass', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let namespace: string;
  let r: IdeCloudResources;
  let core: k8s.CoreV1Api;
  let operator: RunningOperator | undefined;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'sec-races');
    r = ideCloudResources(cluster.kc, namespace);
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  });
  after(async () => cleanUpSuite(cluster.kc, namespace, [operator]));

  it('a status write of a pass that read a session does not land on a later session of the same name', async () => {
    // No operator: the pass is played by hand with the operator's own writer.
    await createAppDefinition(r, 'go-latest', { minInstances: 0, maxInstances: 10 });
    const read = await createSession(r, 'reborn', { user: 'ann@example.com', appDefinition: 'go-latest' });
    await r.sessions.delete('reborn');
    await eventually(async () => assert.equal(await r.sessions.find('reborn'), undefined), 30_000);
    const later = await createSession(r, 'reborn', { user: 'bob@example.com', appDefinition: 'go-latest' });
    assert.notEqual(later.metadata.uid, read.metadata.uid);
    await writeStatus({ sessions: { observe: () => undefined }, sessionsApi: r.sessions }, read, {
      phase: 'Running',
      url: 'https://ide.example.test/reborn/stale/',
    });
    assert.equal((await r.sessions.get('reborn')).status?.url, undefined, "the later session's status is untouched");
  });

  it('a config store deleted after the session was routed is made again', async () => {
    operator = await testOperator(cluster.kc, namespace, { eagerStart: false });
    await createAppDefinition(r, 'store-latest', {
      minInstances: 0,
      maxInstances: 10,
      options: { configStore: 'true' },
    });
    await createSession(r, 'stored', { user: 'cy@example.com', appDefinition: 'store-latest' });
    await waitForSession(r, 'stored', running, 60_000);
    const store = await core.readNamespacedConfigMap({ name: 'stored-config', namespace });
    await core.deleteNamespacedConfigMap({ name: 'stored-config', namespace });
    await eventually(async () => {
      const again = await core.readNamespacedConfigMap({ name: 'stored-config', namespace });
      assert.notEqual(again.metadata?.uid, store.metadata?.uid, 'a new config store');
    }, 30_000);
  });
});

// The service waits for a session URL by watching the one Session: the watch resumes when the API
// server ends it, and a status written between two watches is still seen.
import assert from 'node:assert/strict';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import { waitForSessionUrl } from '../../server/src/service/session-watch.js';
import { ApiError } from '../../server/src/service/errors.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace } from '../support/kube.js';
import { resourcesOf } from '../support/service-harness.js';

describe('waiting for a session URL by watch', function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  let namespace: string;
  let resources: IdeCloudResources;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'svc-watch');
    resources = resourcesOf(cluster.kc, namespace);
  });
  after(async () => deleteTestNamespace(cluster.kc, namespace));

  const create = (name: string) =>
    resources.sessions.create({ metadata: { name }, spec: { user: 'w@example.com', appDefinition: 'python-latest' } });

  it('resumes after the API server ends the watch, and sees the URL written later', async () => {
    const session = await create('watched');
    const waiting = waitForSessionUrl(cluster.kc, resources.sessions, session, Date.now() + 20_000, {
      watchTimeoutSeconds: 1,
    });
    await new Promise((resolve) => setTimeout(resolve, 2500)); // at least two watches have ended by now
    await resources.sessions.patchStatus('watched', { phase: 'Starting' });
    await resources.sessions.patchStatus('watched', { phase: 'Running', url: 'https://ide.example.test/watched/' });
    assert.equal(await waiting, 'https://ide.example.test/watched/');
  });

  it('answers at once for a session that is already ready, and 474 when the session is deleted', async () => {
    await create('ready');
    const ready = await resources.sessions.patchStatus('ready', { phase: 'Running', url: 'https://x.test/ready/' });
    assert.equal(
      await waitForSessionUrl(cluster.kc, resources.sessions, ready, Date.now() + 1000),
      'https://x.test/ready/',
    );

    const doomed = await create('doomed');
    const waiting = waitForSessionUrl(cluster.kc, resources.sessions, doomed, Date.now() + 20_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await resources.sessions.delete('doomed');
    await assert.rejects(waiting, (error: unknown) => error instanceof ApiError && error.code === 474);
  });

  it('rejects with 551 at the deadline', async () => {
    const session = await create('slow');
    const started = Date.now();
    await assert.rejects(
      waitForSessionUrl(cluster.kc, resources.sessions, session, Date.now() + 500),
      (error: unknown) => error instanceof ApiError && error.code === 551,
    );
    assert.ok(Date.now() - started < 3000);
  });
});

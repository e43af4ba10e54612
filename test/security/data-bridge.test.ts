// Attack 8 of issue 15: the data bridge took any POST /data from anyone who reached it and merged it
// over the earlier values, so an attacker replaced PLATFORM_URL after the operator's injection (the
// agent would then send the student's token to the attacker). The operator now authenticates with a
// per-instance token that only it and the instance know (a Secret, referenced from the pod), and the
// bridge takes one injection per reservation; the instance's return to the pool starts a new one.
// The real operator injects into the real bridge (extension/src/server.ts) served on the pod's address.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { DATA_BRIDGE_RESERVATION_HEADER } from '../../server/src/model/data-bridge.js';
import { BridgeServer } from '../../extension/src/server.js';
import { EnvironmentStore } from '../../extension/src/store.js';
import { MemoryLogger } from '../../extension/src/logger.js';
import { MemorySecretStorage } from '../../extension/test/fakes.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, instanceHolder, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

const APP = 'python-latest';
const INSTANCE = `${APP}-pool-1`;
const REAL_PLATFORM = 'https://learn.example.org';
const ATTACKER = 'https://attacker.example';

/** What the kubelet gives the IDE container: DATA_BRIDGE_TOKEN resolved from its reference. */
async function podToken(core: k8s.CoreV1Api, namespace: string, pod: k8s.V1Pod): Promise<string | undefined> {
  const env = pod.spec!.containers[0]!.env ?? [];
  const entry = env.find((e) => e.name === 'DATA_BRIDGE_TOKEN');
  if (entry?.value !== undefined) return entry.value;
  const ref = entry?.valueFrom?.secretKeyRef;
  if (!ref) return undefined;
  const secret = await core.readNamespacedSecret({ name: ref.name!, namespace });
  return Buffer.from(secret.data![ref.key]!, 'base64').toString('utf8');
}

describe('security: the data bridge takes values only from the operator, once per reservation (8)', function () {
  const stack = useStack('sec-bridge', {
    apps: [appDefinitionSpec(APP, { minInstances: 1, maxInstances: 5 })],
    operator: { eagerStart: true, sessionsPerUser: 5 },
  });
  this.timeout(180_000);
  let bridge: BridgeServer | undefined;
  let store: EnvironmentStore;
  let base: string;
  let token: string;

  /** The real bridge, as the instance's current pod would run it (its address, its token). */
  async function serveBridge(current: (pod: k8s.V1Pod) => boolean = () => true): Promise<void> {
    bridge?.dispose();
    const pod = await eventually(
      async () => {
        const pods = await stack.core.listNamespacedPod({
          namespace: stack.namespace,
          labelSelector: `${LABELS.poolInstance}=${INSTANCE}`,
        });
        const ready = pods.items.filter(
          (p) =>
            !p.metadata?.deletionTimestamp &&
            p.status?.podIP &&
            (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') &&
            current(p),
        );
        assert.equal(ready.length, 1, 'one ready pod of the instance');
        return ready[0]!;
      },
      60_000,
      200,
    );
    const ip = pod.status!.podIP!;
    token = (await podToken(stack.core, stack.namespace, pod)) ?? 'the-pod-has-no-token-at-all';
    const logger = new MemoryLogger();
    store = new EnvironmentStore(new MemorySecretStorage(), logger);
    bridge = new BridgeServer(store, logger, { host: ip, port: 16281, token });
    await bridge.listen();
    base = `http://${ip}:16281`;
  }

  const post = (environment: Record<string, string>, headers: Record<string, string>) =>
    fetch(`${base}/data`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ environment }),
    }).then(async (res) => ({ status: res.status, text: await res.text() }));

  stack.cleanUp(() => bridge?.dispose());

  it('refuses a POST /data without the instance token (401) or with another (403), before and after the injection', async () => {
    await serveBridge();
    const attack = { PLATFORM_URL: ATTACKER };
    const reservation = { [DATA_BRIDGE_RESERVATION_HEADER]: 'made-up' };
    assert.equal((await post(attack, reservation)).status, 401, 'no token, before the injection');
    assert.equal((await post(attack, { ...reservation, authorization: 'Bearer guessed' })).status, 403);
    assert.equal(store.size, 0);

    await createSession(stack.resources, 'victim', {
      user: 'victim@example.com',
      appDefinition: APP,
      envVars: { PLATFORM_URL: REAL_PLATFORM, PLATFORM_TOKEN: 'victim-platform-token' },
    });
    await waitForSession(
      stack.resources,
      'victim',
      (s) => running(s) && (s.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
    );
    assert.deepEqual(store.pick(['PLATFORM_URL']), { PLATFORM_URL: REAL_PLATFORM });

    // The replay: the attacker posts after the real injection.
    assert.equal((await post(attack, {})).status, 401);
    assert.equal((await post(attack, { ...reservation, authorization: 'Bearer guessed' })).status, 403);
    assert.deepEqual(store.pick(['PLATFORM_URL']), { PLATFORM_URL: REAL_PLATFORM });
  });

  it('refuses a second injection even with the token (409), for this reservation or a made-up one', async () => {
    const victim = await stack.resources.sessions.get('victim');
    for (const id of [victim.metadata.uid!, 'made-up']) {
      const answer = await post(
        { PLATFORM_URL: ATTACKER },
        { authorization: `Bearer ${token}`, [DATA_BRIDGE_RESERVATION_HEADER]: id },
      );
      assert.equal(answer.status, 409, answer.text);
    }
    assert.deepEqual(store.pick(['PLATFORM_URL']), { PLATFORM_URL: REAL_PLATFORM });
  });

  it('keeps the token out of the pod spec: a reference to a Secret owned by the app definition', async () => {
    const deployment = await stack.kc
      .makeApiClient(k8s.AppsV1Api)
      .readNamespacedDeployment({ name: INSTANCE, namespace: stack.namespace });
    const pods = await stack.core.listNamespacedPod({
      namespace: stack.namespace,
      labelSelector: `${LABELS.poolInstance}=${INSTANCE}`,
    });
    assert.ok(!JSON.stringify([deployment, pods]).includes(token), 'the token is in plain text');
    const secret = await stack.core.readNamespacedSecret({ name: `${INSTANCE}-bridge`, namespace: stack.namespace });
    assert.equal(secret.metadata?.ownerReferences?.[0]?.kind, 'AppDefinition');
  });

  it('a new reservation (the instance back in the pool, restarted with a new token) is injected again', async () => {
    const before = token;
    await stack.resources.sessions.delete('victim');
    await eventually(async () => {
      const d = await stack.kc
        .makeApiClient(k8s.AppsV1Api)
        .readNamespacedDeployment({ name: INSTANCE, namespace: stack.namespace });
      assert.equal(await instanceHolder(stack.kc, stack.namespace, INSTANCE), '', 'back in the pool');
      assert.ok(d.spec?.template.metadata?.annotations?.['ide-cloud.io/recycled-at']);
    }, 30_000);
    // The last user could read the old token in their IDE: it no longer opens the bridge.
    await serveBridge((pod) => !!pod.metadata?.annotations?.['ide-cloud.io/recycled-at']);
    assert.notEqual(token, before, 'the token was replaced');
    assert.equal(
      (
        await post(
          { PLATFORM_URL: ATTACKER },
          { authorization: `Bearer ${before}`, [DATA_BRIDGE_RESERVATION_HEADER]: 'x' },
        )
      ).status,
      403,
    );
    await createSession(stack.resources, 'next', {
      user: 'next@example.com',
      appDefinition: APP,
      envVars: { PLATFORM_URL: REAL_PLATFORM, GIT_USER: 'next' },
    });
    const next = await waitForSession(
      stack.resources,
      'next',
      (s) => running(s) && (s.status?.conditions ?? []).some((c) => c.type === 'EnvInjected' && c.status === 'True'),
    );
    assert.equal(next.status?.startStrategy, 'eager');
    assert.deepEqual(store.pick(['GIT_USER', 'PLATFORM_URL']), { GIT_USER: 'next', PLATFORM_URL: REAL_PLATFORM });
  });
});

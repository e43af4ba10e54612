// Issue 27, item 4: a student could let anyone into their own session. A warm instance's
// authentication proxy read its allowed users from a file on a volume it shared with the IDE container,
// where the data bridge (the student's uid) wrote the session's user at the claim: anything the student
// ran in the IDE could add another user. Now the file is on a volume of the proxy container only, and a
// small writer beside oauth2-proxy (images/auth-proxy) takes the session's user from the operator,
// with a per-instance token that only the proxy container and the operator have.
//
// On the real node: a claimed warm session (the session image with its bridge, the auth-proxy image)
// and a lazy one; in each IDE container, as the student, the attack writes the users file wherever
// it is visible and calls every port of the proxy container (and the writer's) without a token, with
// a guessed one and with the bridge's token (which the IDE container has), as POST and PUT. Then a
// request through the session's proxy with the other user's bearer token is refused, again and again
// over a few seconds (oauth2-proxy reloads its file within a second of a change), while the session's
// user passes. Root only, like the other real-node suites.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { REAL_NODE_IP, REAL_NODE_PLACEMENT, sandboxImage } from '../../scripts/cluster/real-node.js';
import { stopControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import { LABELS } from '../../server/src/model/api-group.js';
import type { Session } from '../../server/src/model/session.js';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import type { RunningOperator } from '../../server/src/operator/index.js';
import { eventually } from '../support/kube.js';
import { AUDIENCE, startIdentityProvider, type TestIdentityProvider } from '../support/oidc.js';
import {
  createAppDefinition,
  createSession,
  ideCloudResources,
  running,
  testOperator,
  waitForSession,
} from '../support/operator.js';
import { execInPod, seconds, shipImage, startRealNodeCluster } from '../support/real-node.js';

const NAMESPACE = 'ide-cloud';
const SESSION_IMAGE = 'ide-cloud/session-javascript:latest';
const WARM_APP = 'javascript-warm';
const LAZY_APP = 'javascript-lazy';
const OWNER = 'ada@example.org';
const OTHER = 'mallory@example.org';
/** Where the proxy's users file was, and where an attacker looks first. */
const KNOWN_USERS_FILE = '/var/run/ide-cloud/auth-proxy/users';
/** The writer's port in images/auth-proxy (besides, the attack tries every port the proxy declares). */
const WRITER_PORT = 4181;

/**
 * Run by the student's uid in the IDE container: tries to add OTHER to the proxy's allowed users.
 * Prints what it did; a success is not assumed: the proof is the request through the proxy.
 */
const ATTACK = `
const fs = require('fs');
const [other, ...ports] = process.argv.slice(1);
const files = new Set([process.env.DATA_BRIDGE_USERS_FILE, '${KNOWN_USERS_FILE}'].filter(Boolean));
const log = [];
for (const f of files) {
  try { fs.appendFileSync(f, other + '\\n'); log.push('appended ' + f); } catch (e) { log.push(f + ': ' + e.code); }
  try { fs.writeFileSync(f + '.next', other + '\\n'); fs.renameSync(f + '.next', f); log.push('replaced ' + f); }
  catch (e) { log.push(f + ' (rename): ' + e.code); }
}
(async () => {
  const tokens = [undefined, 'guessed-token', process.env.DATA_BRIDGE_TOKEN];
  const bodies = [JSON.stringify({ user: other }), other + '\\n'];
  for (const port of ports) for (const path of ['/', '/users', '/user', '/admit']) for (const method of ['POST', 'PUT'])
    for (const token of tokens) for (const body of bodies) {
      const headers = { 'content-type': body.startsWith('{') ? 'application/json' : 'text/plain' };
      if (token) headers.authorization = 'Bearer ' + token;
      try {
        const r = await fetch('http://127.0.0.1:' + port + path, { method, headers, body, signal: AbortSignal.timeout(2000) });
        log.push(method + ' ' + port + path + (token ? ' with a token' : '') + ': ' + r.status);
      } catch (e) { log.push(port + ': ' + (e.cause?.code ?? e.name)); }
    }
  // The same answer over and over says nothing more: each line once, with its count.
  const counts = new Map();
  for (const line of log) counts.set(line, (counts.get(line) ?? 0) + 1);
  console.log([...counts].map(([line, n]) => (n > 1 ? line + ' (x' + n + ')' : line)).join('\\n'));
})();
`;

describe('security: nothing the student runs in the IDE changes whom the session proxy admits (27.4)', function () {
  this.timeout(30 * 60_000);
  let state: ControlPlaneState | undefined;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let r: IdeCloudResources;
  let idp: TestIdentityProvider | undefined;
  let operator: RunningOperator | undefined;
  const timings: string[] = [];

  before(async function () {
    this.timeout(90 * 60_000);
    let since = Date.now();
    const cluster = await startRealNodeCluster('proxy-users');
    ({ state, kc, core } = cluster);
    timings.push(`control plane with the real node ${seconds(since)}`);
    for (const target of ['auth-proxy', 'session-javascript'] as const) await shipImage(cluster.node, target, timings);
    since = Date.now();
    idp = await startIdentityProvider({ owner: { email: OWNER }, other: { email: OTHER } }, { host: REAL_NODE_IP });
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await core.createNamespacedSecret({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'ide-cloud-auth-proxy' },
        stringData: {
          'cookie-secret': 'c00kie-secret-of-this-install-32',
          'client-secret': 'client-secret-of-proxies',
        },
      },
    });
    r = ideCloudResources(kc, NAMESPACE);
    await createAppDefinition(r, WARM_APP, { image: SESSION_IMAGE, minInstances: 1, maxInstances: 1 });
    await createAppDefinition(r, LAZY_APP, { image: SESSION_IMAGE, minInstances: 0, maxInstances: 1 });
    operator = await testOperator(kc, NAMESPACE, {
      eagerStart: true,
      sessionsPerUser: 5,
      sessionIssuer: idp.issuer,
      sessionAudience: AUDIENCE,
      sessionNodeSelector: REAL_NODE_PLACEMENT.nodeSelector,
      sessionTolerations: REAL_NODE_PLACEMENT.tolerations,
      sessionImagePullPolicy: 'IfNotPresent',
      claimBinderImage: await sandboxImage(),
      bridgeHealthAttempts: 240,
      bridgeHealthIntervalMs: 500,
      bridgeRequestTimeoutMs: 5000,
    });
    timings.push(`identity provider and operator ${seconds(since)}`);
  });

  after(async () => {
    await operator?.stop();
    await idp?.close();
    if (state) await stopControlPlane(state.dir);
    if (timings.length) console.log(`      real node timings: ${timings.join(', ')}`);
  });

  /** The Ready pod of a session: its warm instance's, or its own (lazy). */
  async function sessionPod(session: Session): Promise<k8s.V1Pod> {
    const selector =
      session.status?.startStrategy === 'eager'
        ? `${LABELS.poolInstance}=${WARM_APP}-pool-${session.status.instanceId}`
        : `${LABELS.session}=${session.metadata.name}`;
    return eventually(async () => {
      const pods = await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: selector });
      const pod = pods.items.find(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.spec?.containers[0]?.image === SESSION_IMAGE &&
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      assert.ok(pod, `no Ready pod for ${selector}`);
      return pod;
    }, 120_000);
  }

  /** GET through the session's proxy (the pod's address, as the ingress controller reaches it). */
  async function viaProxy(pod: k8s.V1Pod, session: Session, client: 'owner' | 'other'): Promise<number> {
    const proxy = pod.spec!.containers.find((c) => c.name === 'auth-proxy')!;
    const port = proxy.ports!.find((p) => p.name === 'http')!.containerPort;
    const at = `http://${pod.status!.podIP}:${port}${new URL(session.status!.url!).pathname}`;
    const answer = await fetch(at, {
      redirect: 'manual',
      headers: { authorization: `Bearer ${await idp!.token(client)}` },
      signal: AbortSignal.timeout(10_000),
    });
    await answer.arrayBuffer();
    return answer.status;
  }

  /** The attack from the IDE container, then the proof: the other user refused throughout, the owner served. */
  async function attackAndCheck(session: Session): Promise<void> {
    const pod = await sessionPod(session);
    const admitted = (status: number) => status >= 200 && status < 400;
    await eventually(
      async () => assert.ok(admitted(await viaProxy(pod, session, 'owner')), 'the owner passes'),
      60_000,
    );
    assert.equal(await viaProxy(pod, session, 'other'), 403, 'another user, before the attack');

    const proxy = pod.spec!.containers.find((c) => c.name === 'auth-proxy')!;
    const ports = new Set([...(proxy.ports ?? []).map((p) => p.containerPort), WRITER_PORT]);
    const ide = pod.spec!.containers[0]!.name;
    const log = await execInPod(kc, NAMESPACE, pod.metadata!.name!, ide, [
      'node',
      '-e',
      ATTACK,
      OTHER,
      ...[...ports].map(String),
    ]);
    console.log(
      `      attack from the IDE container (${session.status?.startStrategy}):\n${log.replace(/^/gm, '        ')}`,
    );
    assert.doesNotMatch(log, /^(appended|replaced) /m, 'the student wrote the allowed-users file');
    assert.doesNotMatch(log, /: 2\d\d( \(x\d+\))?$/m, 'a call of the student was taken');

    // oauth2-proxy reloads a changed file within a second: the other user stays refused for longer.
    const until = Date.now() + 5_000;
    for (let round = 0; Date.now() < until; round++) {
      assert.equal(await viaProxy(pod, session, 'other'), 403, `another user after the attack (round ${round})`);
    }
    assert.ok(admitted(await viaProxy(pod, session, 'owner')), "the session's user still passes");
  }

  it('a claimed warm session: the student cannot add another user to its proxy', async () => {
    // Claimed only once it serves, or the launch falls back to a lazy start.
    await eventually(
      async () =>
        assert.equal((await r.appDefinitions.get(WARM_APP)).status?.pool?.ready, 1, 'the warm instance is ready'),
      240_000,
      500,
    );
    await createSession(r, 'warm-ada', { user: OWNER, appDefinition: WARM_APP, sessionSecret: 'w'.repeat(32) });
    const session = await waitForSession(r, 'warm-ada', running, 240_000);
    assert.equal(session.status?.startStrategy, 'eager');
    await attackAndCheck(session);
  });

  it("a lazy session (its users file from the session's Secret): the student cannot add another user either", async () => {
    await createSession(r, 'lazy-ada', { user: OWNER, appDefinition: LAZY_APP, sessionSecret: 'l'.repeat(32) });
    const session = await waitForSession(r, 'lazy-ada', running, 240_000);
    assert.notEqual(session.status?.startStrategy, 'eager');
    await attackAndCheck(session);
  });
});

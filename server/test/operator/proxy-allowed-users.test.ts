// Issue 27, item 4: whom a session's proxy admits is the proxy container's alone. Its allowed-users
// file and its admission's token are on volumes of the proxy container only, so nothing the student
// runs in the IDE container (which shares the pod's network, not its mounts) can change them; the IDE
// container's token (the data bridge's) is not the admission's. A warm instance's and a lazy session's
// pod templates alike, with an identity provider.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { AppDefinitionSpecSchema, type AppDefinition } from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { bridgeTokenSecret, poolInstanceTemplate, sessionPodTemplate } from '../../src/operator/manifests.js';

const appDefinition = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'AppDefinition',
  metadata: { name: 'js', uid: 'app-uid', generation: 1 },
  spec: AppDefinitionSpecSchema.parse({ name: 'js', image: 'i', port: 3123, ingressname: 'sessions' }),
} as AppDefinition;
const config = parseOperatorConfig({ namespace: 'ns', sessionIssuer: 'https://login.example.org/realms/x' });

function containers(template: k8s.V1PodTemplateSpec): { ide: k8s.V1Container; proxy: k8s.V1Container } {
  const all = template.spec!.containers;
  return { ide: all[0]!, proxy: all.find((c) => c.name === 'auth-proxy')! };
}

/** The volumes the proxy mounts: none of them may be the IDE container's too. */
function assertProxyOnly(template: k8s.V1PodTemplateSpec): void {
  const { ide, proxy } = containers(template);
  const proxyVolumes = (proxy.volumeMounts ?? []).map((m) => m.name);
  assert.ok(proxyVolumes.length > 0, 'the proxy has its allowed-users volume');
  const shared = (ide.volumeMounts ?? []).filter((m) => proxyVolumes.includes(m.name));
  assert.deepEqual(shared, [], 'the IDE container mounts none of the proxy volumes');
  assert.ok(
    (ide.volumeMounts ?? []).every((m) => !m.mountPath.startsWith('/var/run/ide-cloud/auth-proxy')),
    'nothing at the proxy paths in the IDE container',
  );
  assert.equal(
    ide.env?.find((e) => e.name === 'DATA_BRIDGE_USERS_FILE'),
    undefined,
    'the bridge is told no users file',
  );
}

describe("a session proxy's allowed users are the proxy container's alone (issue 27, item 4)", () => {
  it('a warm instance: users file on an emptyDir of the proxy, the admission token from its Secret, in the proxy only', () => {
    const template = poolInstanceTemplate(appDefinition, 1, config, 'claim-1');
    assertProxyOnly(template);
    const { ide, proxy } = containers(template);
    const volumes = new Map((template.spec!.volumes ?? []).map((v) => [v.name, v]));
    const usersMount = proxy.volumeMounts!.find((m) => m.mountPath === '/var/run/ide-cloud/auth-proxy')!;
    assert.ok(volumes.get(usersMount.name)?.emptyDir, 'the users file on an emptyDir');
    const tokenVolume = [...volumes.values()].find((v) => v.secret?.items?.some((i) => i.key === 'admission-token'));
    assert.ok(tokenVolume, 'the admission token projected from a Secret');
    assert.equal(tokenVolume.secret!.secretName, 'js-pool-1-bridge');
    assert.deepEqual(tokenVolume.secret!.items, [{ key: 'admission-token', path: 'token' }], 'that key only');
    const tokenMount = proxy.volumeMounts!.find((m) => m.name === tokenVolume.name)!;
    assert.equal(tokenMount.readOnly, true);
    const tokenFile = proxy.env!.find((e) => e.name === 'AUTH_PROXY_ADMISSION_TOKEN_FILE')?.value;
    assert.equal(tokenFile, `${tokenMount.mountPath}/token`);
    assert.deepEqual(
      proxy.ports?.map((p) => p.name),
      ['http', 'ready', 'admission'],
    );
    assert.equal(
      proxy.livenessProbe,
      undefined,
      "no restart of the proxy's container: its port would be free a moment",
    );
    // The IDE container gets the bridge's token by reference, never the admission's.
    const refs = (ide.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : []));
    assert.deepEqual(
      refs.map((r) => r.key),
      ['token'],
    );
    assert.equal(ide.envFrom, undefined);
  });

  it("a warm instance's Secret holds two different tokens; no token in the pod template", () => {
    const secret = bridgeTokenSecret(appDefinition, 1, 'ns', 'bridge-token-of-the-instance-0123456789');
    const admission = Buffer.from(secret.data!['admission-token']!, 'base64').toString('utf8');
    assert.ok(admission.length >= 32, 'a random admission token');
    assert.notEqual(admission, 'bridge-token-of-the-instance-0123456789');
    const template = JSON.stringify(poolInstanceTemplate(appDefinition, 1, config, 'claim-1'));
    assert.ok(!template.includes(admission));
  });

  it("a lazy session: its users from the session's Secret, read-only, in the proxy only", () => {
    const template = sessionPodTemplate({
      appDefinition,
      config,
      podApp: 'ada',
      env: [],
      claimName: 'ws-1',
      allowedUsers: { secret: 'ada-env', key: '.auth-proxy-users' },
    });
    assertProxyOnly(template);
    const { proxy } = containers(template);
    const mount = proxy.volumeMounts!.find((m) => m.mountPath === '/var/run/ide-cloud/auth-proxy')!;
    assert.equal(mount.readOnly, true);
    const volume = template.spec!.volumes!.find((v) => v.name === mount.name)!;
    assert.deepEqual(volume.secret, { secretName: 'ada-env', items: [{ key: '.auth-proxy-users', path: 'users' }] });
    assert.equal(
      proxy.env!.find((e) => e.name === 'AUTH_PROXY_ADMISSION_TOKEN_FILE'),
      undefined,
      'no admission: the file is fixed',
    );
  });
});

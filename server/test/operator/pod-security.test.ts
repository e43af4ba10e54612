// Issue 27, item 2: the session pods the operator makes (warm instances, lazy sessions, sidecars, the
// authentication proxy beside every IDE) had no security context and an emptyDir without a size limit.
// They now meet the Kubernetes "restricted" Pod Security profile; an app definition whose IDE image or
// sidecar needs more says so (`podSecurity: baseline`), and only that container gets it.
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { AppDefinitionSpecSchema, type AppDefinition } from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import {
  lazyAllowedUsers,
  poolInstanceDeployment,
  sessionPodTemplate,
  sidecarObjects,
} from '../../src/operator/manifests.js';
import type { Session } from '../../src/model/session.js';

const ISSUER = 'https://login.example.org/realms/ide-cloud';
const config = parseOperatorConfig({ namespace: 'ns', sessionIssuer: ISSUER, workspaceStorageSize: '3Gi' });

function appDefinition(extra: Record<string, unknown> = {}, sidecar: Record<string, unknown> = {}): AppDefinition {
  const spec = AppDefinitionSpecSchema.parse({
    name: 'js',
    image: 'ide-cloud/session-javascript:latest',
    port: 3000,
    ingressname: 'sessions',
    options: { dataBridgeEnabled: 'true' },
    sidecars: [{ name: 'db', image: 'example/db:1', port: 5432, mountWorkspace: true, ...sidecar }],
    ...extra,
  });
  return { metadata: { name: 'js', uid: 'app-uid', generation: 1 }, spec } as AppDefinition;
}

const session = {
  metadata: { name: 'ada-1', uid: '5f0c4d9e-0000-4000-8000-000000000001' },
  spec: { user: 'ada@example.org', appDefinition: 'js' },
} as unknown as Session;

/** The pod specs of a warm instance, a lazy session (no claim: an emptyDir) and a sidecar (no claim). */
function pods(app: AppDefinition): Record<string, k8s.V1PodSpec> {
  const warm = poolInstanceDeployment(app, 1, 'ns', config, 'claim').spec!.template.spec!;
  const lazy = sessionPodTemplate({
    appDefinition: app,
    config,
    podApp: 'ada-1-x',
    env: [],
    allowedUsers: lazyAllowedUsers(session),
  }).spec!;
  const sidecar = sidecarObjects({
    sidecar: app.spec.sidecars![0]!,
    ownerName: 'ada-1',
    namespace: 'ns',
    labels: {},
    owners: [],
    workFolder: '/home/ide/workspace',
    config,
  }).deployment.spec!.template.spec!;
  return { warm, lazy, sidecar };
}

const RESTRICTED: k8s.V1SecurityContext = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
};

describe('session pods: the restricted Pod Security profile', () => {
  it('gives every container of warm instances, lazy sessions and sidecars the restricted profile', () => {
    const all = pods(appDefinition());
    for (const [what, pod] of Object.entries(all)) {
      assert.deepEqual(pod.securityContext, { seccompProfile: { type: 'RuntimeDefault' } }, what);
      for (const container of pod.containers) {
        assert.deepEqual(container.securityContext, RESTRICTED, `${what}: ${container.name}`);
      }
    }
    assert.deepEqual(
      all.warm!.containers.map((c) => c.name),
      ['js', 'auth-proxy'],
      'the IDE and its authentication proxy',
    );
  });

  it('limits the size of every emptyDir: the work folder as a claim would be, the allowed-users file to 1Mi', () => {
    for (const [what, pod] of Object.entries(pods(appDefinition()))) {
      for (const volume of pod.volumes ?? []) {
        if (volume.emptyDir) assert.ok(volume.emptyDir.sizeLimit, `${what}: ${volume.name}`);
      }
    }
    const { warm, lazy, sidecar } = pods(appDefinition());
    const emptyDir = (pod: k8s.V1PodSpec, name: string) => pod.volumes!.find((v) => v.name === name)?.emptyDir;
    assert.deepEqual(emptyDir(lazy!, 'workspace'), { sizeLimit: '3Gi' });
    assert.deepEqual(emptyDir(sidecar!, 'workspace'), { sizeLimit: '3Gi' });
    assert.deepEqual(emptyDir(warm!, 'auth-proxy-users'), { sizeLimit: '1Mi' });
  });

  it('loosens only the container whose app definition says `podSecurity: baseline`, never the proxy', () => {
    const ide = pods(appDefinition({ podSecurity: 'baseline' }));
    for (const pod of [ide.warm!, ide.lazy!]) {
      assert.equal(pod.containers[0]!.securityContext, undefined, 'the IDE: the runtime defaults');
      assert.deepEqual(pod.containers[1]!.securityContext, RESTRICTED, 'the proxy stays restricted');
      assert.deepEqual(pod.securityContext, { seccompProfile: { type: 'RuntimeDefault' } });
    }
    assert.deepEqual(ide.sidecar!.containers[0]!.securityContext, RESTRICTED, 'its sidecar did not ask');

    const sidecar = pods(appDefinition({}, { podSecurity: 'baseline' }));
    assert.equal(sidecar.sidecar!.containers[0]!.securityContext, undefined);
    assert.deepEqual(sidecar.lazy!.containers[0]!.securityContext, RESTRICTED);
  });

  it('accepts only the levels it knows', () => {
    assert.throws(() => appDefinition({ podSecurity: 'privileged' }));
    assert.throws(() => appDefinition({}, { podSecurity: 'privileged' }));
  });
});

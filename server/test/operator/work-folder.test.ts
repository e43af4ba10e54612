// One work folder: where a workspace's claim is mounted, where the agent clones and where the IDE
// opens are one value, the app definition's `mountPath` (default: the session images' WORKSPACE_DIR),
// handed to the IDE container; a warm instance mounts its own claim there from the start.
import assert from 'node:assert/strict';
import {
  AppDefinitionSpecSchema,
  DEFAULT_WORK_FOLDER,
  workFolder,
  type AppDefinition,
} from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import {
  instanceClaimName,
  poolClaimName,
  poolInstanceDeployment,
  sessionPodTemplate,
  sidecarObjects,
} from '../../src/operator/manifests.js';

const config = parseOperatorConfig({ namespace: 'ns' });

function app(mountPath?: string): AppDefinition {
  return {
    apiVersion: 'ide.cloud/v1beta10',
    kind: 'AppDefinition',
    metadata: { name: 'js', uid: 'app-uid', generation: 1 },
    spec: AppDefinitionSpecSchema.parse({
      name: 'js',
      image: 'ide-cloud/session-javascript:latest',
      port: 3000,
      ingressname: 'sessions',
      options: { dataBridgeEnabled: 'true' },
      ...(mountPath ? { mountPath } : {}),
    }),
  } as AppDefinition;
}

function ideOf(template: ReturnType<typeof sessionPodTemplate>) {
  const ide = template.spec!.containers[0]!;
  return {
    mount: ide.volumeMounts?.find((m) => m.name === 'workspace')?.mountPath,
    env: ide.env?.find((e) => e.name === 'WORKSPACE_DIR')?.value,
    volume: template.spec!.volumes!.find((v) => v.name === 'workspace'),
  };
}

describe('the work folder', () => {
  it("defaults to the session images' folder and is where the claim is mounted and the IDE opens", () => {
    assert.equal(DEFAULT_WORK_FOLDER, '/home/ide/workspace');
    const template = sessionPodTemplate({
      appDefinition: app(),
      config,
      podApp: 'a',
      env: [],
      claimName: 'ws-1',
      allowedUsers: { admission: { tokenSecret: 'python-latest-pool-1-bridge' } },
    });
    assert.deepEqual(ideOf(template), {
      mount: DEFAULT_WORK_FOLDER,
      env: DEFAULT_WORK_FOLDER,
      volume: { name: 'workspace', persistentVolumeClaim: { claimName: 'ws-1' } },
    });
  });

  it("follows the app definition's mountPath, for the IDE and a workspace-mounting sidecar alike", () => {
    const definition = app('/srv/work');
    const template = sessionPodTemplate({
      appDefinition: definition,
      config,
      podApp: 'a',
      env: [],
      allowedUsers: { admission: { tokenSecret: 'python-latest-pool-1-bridge' } },
    });
    assert.equal(ideOf(template).mount, '/srv/work');
    assert.equal(ideOf(template).env, '/srv/work');
    const sidecar = sidecarObjects({
      sidecar: { name: 'db', image: 'postgres:16', mountWorkspace: true },
      ownerName: 'a',
      namespace: 'ns',
      labels: {},
      owners: [],
      claimName: 'ws-1',
      workFolder: workFolder(definition.spec),
      config,
    }).deployment.spec!.template.spec!;
    assert.equal(sidecar.containers[0]!.volumeMounts?.[0]?.mountPath, '/srv/work');
    assert.deepEqual(sidecar.volumes, [{ name: 'workspace', persistentVolumeClaim: { claimName: 'ws-1' } }]);
  });

  it('refuses a mount path that is relative, names . or .., or a hidden part', () => {
    for (const bad of ['work', '/home/../etc', '/home/./x', '/home/.ssh', '/', '/a//b', '/a/b/']) {
      const parsed = AppDefinitionSpecSchema.safeParse({
        name: 'x',
        image: 'i',
        port: 1,
        ingressname: 'r',
        mountPath: bad,
      });
      assert.equal(parsed.success, false, bad);
    }
    for (const good of ['/home/ide/workspace', '/srv/work-1', '/data/course_2.x']) {
      assert.equal(
        AppDefinitionSpecSchema.safeParse({ name: 'x', image: 'i', port: 1, ingressname: 'r', mountPath: good })
          .success,
        true,
        good,
      );
    }
  });

  it("mounts a warm instance's own claim from the start; each new claim has a new name", () => {
    const d = poolInstanceDeployment(app(), 1, 'ns', config, poolClaimName('js-pool-1', 'abc'));
    assert.equal(instanceClaimName(d), 'js-pool-1-work-abc');
    assert.equal(ideOf(d.spec!.template).mount, DEFAULT_WORK_FOLDER);
    assert.notEqual(poolClaimName('js-pool-1'), poolClaimName('js-pool-1'));
    // Cut to a DNS label, keeping the suffix's hash, for the longest instance names.
    const long = poolClaimName(`${'a'.repeat(60)}-pool-1`);
    assert.ok(long.length <= 63, long);
  });
});

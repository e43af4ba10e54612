// Session pod placement: the operator's nodeSelector, tolerations and imagePullPolicy reach every pod
// it creates for sessions (warm instances, lazy sessions, sidecars), and nothing else changes without them.
import assert from 'node:assert/strict';
import type { AppDefinition } from '../../src/model/app-definition.js';
import { loadOperatorConfig, parseOperatorConfig } from '../../src/operator/config.js';
import {
  lazyAllowedUsers,
  poolInstanceDeployment,
  sessionPodTemplate,
  sidecarObjects,
} from '../../src/operator/manifests.js';
import type { Session } from '../../src/model/session.js';

const appDefinition = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'AppDefinition',
  metadata: { name: 'js', uid: 'app-uid', generation: 1 },
  spec: {
    name: 'js',
    image: 'ide-cloud/session-javascript:latest',
    port: 3000,
    ingressname: 'sessions',
    options: { dataBridgeEnabled: 'true' },
    sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
  },
} as unknown as AppDefinition;

const session = {
  metadata: { name: 'ada-1', uid: '5f0c4d9e-0000-4000-8000-000000000001' },
  spec: { user: 'ada@example.org', appDefinition: 'js' },
} as unknown as Session;

const PLACEMENT = {
  sessionNodeSelector: { 'ide-cloud.dev/real-node': 'true' },
  sessionTolerations: [
    { key: 'ide-cloud.dev/real-node', operator: 'Equal' as const, value: 'true', effect: 'NoSchedule' as const },
  ],
  sessionImagePullPolicy: 'IfNotPresent' as const,
};

describe('session pod placement', () => {
  it('puts warm instances, lazy sessions and sidecars where the configuration says, with its pull policy', () => {
    const config = parseOperatorConfig({ namespace: 'ns', ...PLACEMENT });
    const warm = poolInstanceDeployment(appDefinition, 1, 'ns', config, 'claim').spec!.template.spec!;
    const lazy = sessionPodTemplate({
      appDefinition,
      config,
      podApp: 'ada-1-x',
      env: [],
      allowedUsers: lazyAllowedUsers(session),
    }).spec!;
    const sidecar = sidecarObjects({
      sidecar: appDefinition.spec.sidecars![0]!,
      ownerName: 'ada-1',
      namespace: 'ns',
      labels: {},
      owners: [],
      workFolder: '/home/ide/workspace',
      config,
    }).deployment.spec!.template.spec!;
    for (const [what, pod] of Object.entries({ warm, lazy, sidecar })) {
      assert.deepEqual(pod.nodeSelector, PLACEMENT.sessionNodeSelector, what);
      assert.deepEqual(pod.tolerations, PLACEMENT.sessionTolerations, what);
      assert.equal(pod.containers[0]!.imagePullPolicy, 'IfNotPresent', what);
    }
    // The configuration's objects are copied, not shared between pods.
    assert.notEqual(warm.nodeSelector, lazy.nodeSelector);
  });

  it('leaves placement and pull policy to Kubernetes when unset', () => {
    const pod = poolInstanceDeployment(appDefinition, 1, 'ns', parseOperatorConfig({ namespace: 'ns' }), 'claim').spec!
      .template.spec!;
    assert.equal('nodeSelector' in pod, false);
    assert.equal('tolerations' in pod, false);
    assert.equal('imagePullPolicy' in pod.containers[0]!, false);
  });

  it('reads them from the environment as JSON (the chart writes them so), and refuses malformed ones', () => {
    const config = loadOperatorConfig({
      IDE_CLOUD_SESSION_NODE_SELECTOR: JSON.stringify(PLACEMENT.sessionNodeSelector),
      IDE_CLOUD_SESSION_TOLERATIONS: JSON.stringify(PLACEMENT.sessionTolerations),
      IDE_CLOUD_SESSION_IMAGE_PULL_POLICY: 'Never',
    });
    assert.deepEqual(config.sessionNodeSelector, PLACEMENT.sessionNodeSelector);
    assert.deepEqual(config.sessionTolerations, PLACEMENT.sessionTolerations);
    assert.equal(config.sessionImagePullPolicy, 'Never');
    assert.throws(() => loadOperatorConfig({ IDE_CLOUD_SESSION_NODE_SELECTOR: 'pool=ide' }), /sessionNodeSelector/);
    assert.throws(
      () => loadOperatorConfig({ IDE_CLOUD_SESSION_TOLERATIONS: '[{"key":"a","operator":"Maybe"}]' }),
      /sessionTolerations/,
    );
    assert.throws(
      () => loadOperatorConfig({ IDE_CLOUD_SESSION_IMAGE_PULL_POLICY: 'Sometimes' }),
      /sessionImagePullPolicy/,
    );
  });
});

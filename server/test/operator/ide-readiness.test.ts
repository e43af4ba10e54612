// A session's pod is Ready once its IDE listens on the app definition's port (and its proxy on its
// own), not when its container starts (the clone may come first): the operator hands out a URL only for a Ready pod, so a student
// never meets the proxy's 502 of an IDE that is not up yet. Every pod template has it: a warm
// instance's and a lazy session's alike.
import assert from 'node:assert/strict';
import { AppDefinitionSpecSchema, type AppDefinition } from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { sessionPodTemplate } from '../../src/operator/manifests.js';

const appDefinition = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'AppDefinition',
  metadata: { name: 'js', uid: 'app-uid', generation: 1 },
  spec: AppDefinitionSpecSchema.parse({ name: 'js', image: 'i', port: 3123, ingressname: 'sessions' }),
} as AppDefinition;

describe("the IDE container's readiness", () => {
  for (const [kind, extra] of [
    ['a warm instance', { allowedUsers: { admission: { tokenSecret: 'python-latest-pool-1-bridge' } } }],
    ['a lazy session', { allowedUsers: { secret: 's-env', key: 'users' }, claimName: 'ws-1' }],
  ] as const) {
    it(`${kind}: Ready once the IDE listens on the app's port, asked every second`, () => {
      const template = sessionPodTemplate({
        appDefinition,
        config: parseOperatorConfig({ namespace: 'ns' }),
        podApp: 'a',
        env: [],
        ...extra,
      });
      const ide = template.spec!.containers[0]!;
      assert.deepEqual(ide.ports, [{ name: 'application', containerPort: 3123 }]);
      assert.equal(ide.readinessProbe?.tcpSocket?.port, 'application');
      assert.equal(ide.readinessProbe?.periodSeconds, 1);
      const proxy = template.spec!.containers.find((c) => c.name === 'auth-proxy')!;
      assert.equal(proxy.readinessProbe?.tcpSocket?.port, 'http', 'and its proxy listens');
    });
  }
});

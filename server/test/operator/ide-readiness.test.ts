// A session's pod is Ready once its IDE listens on the app definition's port and its proxy on its
// own (one probe answers for both), not when its container starts (the clone may come first): the operator hands out a URL only for a Ready pod, so a student
// never meets the proxy's 502 of an IDE that is not up yet. The proxy container answers the IDE's
// probe (images/auth-proxy/admission), waiting for an IDE that is starting. Every pod template has it:
// a warm instance's and a lazy session's alike.
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
    it(`${kind}: Ready once the IDE listens on the app's port (the proxy container answers), asked every second`, () => {
      const template = sessionPodTemplate({
        appDefinition,
        config: parseOperatorConfig({ namespace: 'ns' }),
        podApp: 'a',
        env: [],
        ...extra,
      });
      const ide = template.spec!.containers[0]!;
      assert.deepEqual(ide.ports, [{ name: 'application', containerPort: 3123 }]);
      const proxy = template.spec!.containers.find((c) => c.name === 'auth-proxy')!;
      const ready = proxy.ports?.find((p) => p.name === 'ready')?.containerPort;
      assert.equal(ready, 4182);
      assert.deepEqual(ide.readinessProbe?.httpGet, { path: '/ready', port: ready });
      assert.equal(ide.readinessProbe?.periodSeconds, 1);
      assert.ok(ide.readinessProbe!.timeoutSeconds! * 1000 > 1500, "longer than the proxy's wait for a starting IDE");
      const env = Object.fromEntries((proxy.env ?? []).map((e) => [e.name, e.value]));
      assert.equal(env.AUTH_PROXY_READY_ADDRESS, `0.0.0.0:${ready}`);
      assert.equal(env.AUTH_PROXY_UPSTREAM, 'http://127.0.0.1:3123', "the IDE's port is the one asked");
      // The same probe answers for the proxy (where the proxy listens): no probe of its own.
      assert.equal(env.AUTH_PROXY_ADDRESS, `0.0.0.0:${proxy.ports?.find((p) => p.name === 'http')?.containerPort}`);
      assert.equal(proxy.readinessProbe, undefined);
    });
  }
});

// The bridge Secrets the pool wrote are read back from memory; any other is read from the API server
// once, unless a write of it overtook that read.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { AppDefinition } from '../../src/model/app-definition.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { BridgeSecrets } from '../../src/operator/pool/bridge-secrets.js';
import { PoolInstances, type PoolDeps } from '../../src/operator/pool/instances.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (name: string, token: string): k8s.V1Secret => ({
  metadata: { name, namespace: 'ns' },
  data: { token: b64(token), admission: b64(`${token}-admission`) },
});

/** A core API whose reads are counted and, when `held`, answered only when released. */
function api(stored: Map<string, k8s.V1Secret>) {
  const reads: string[] = [];
  let release: (() => void) | undefined;
  let held = false;
  return {
    reads,
    hold: () => (held = true),
    release: () => release?.(),
    core: {
      readNamespacedSecret: async ({ name }: { name: string; namespace: string }) => {
        reads.push(name);
        const answer = stored.get(name);
        if (held) await new Promise<void>((resolve) => (release = resolve));
        if (!answer) throw Object.assign(new Error('not found'), { code: 404 });
        return structuredClone(answer);
      },
    },
  };
}

describe('bridge secrets: the pool’s own writes, read without the API server', () => {
  it('a Secret this process wrote is read from memory, decoded', async () => {
    const fake = api(new Map());
    const secrets = new BridgeSecrets(fake.core, 'ns');
    secrets.written(secret('java-pool-1-bridge', 't1'));
    assert.deepEqual(await secrets.read('java-pool-1-bridge'), { token: 't1', admission: 't1-admission' });
    assert.deepEqual(fake.reads, []);
  });

  it('a rotation replaces the copy: the next read gives the new tokens', async () => {
    const secrets = new BridgeSecrets(api(new Map()).core, 'ns');
    secrets.written(secret('java-pool-1-bridge', 'old'));
    secrets.written(secret('java-pool-1-bridge', 'new'));
    assert.equal((await secrets.read('java-pool-1-bridge'))?.token, 'new');
  });

  it('one it did not write is read from the API server once, then from memory', async () => {
    const fake = api(new Map([['java-pool-2-bridge', secret('java-pool-2-bridge', 'earlier-leader')]]));
    const secrets = new BridgeSecrets(fake.core, 'ns');
    assert.equal((await secrets.read('java-pool-2-bridge'))?.token, 'earlier-leader');
    assert.equal((await secrets.read('java-pool-2-bridge'))?.token, 'earlier-leader');
    assert.deepEqual(fake.reads, ['java-pool-2-bridge']);
  });

  it('a forgotten one (deleted, or a write whose outcome is unknown) is read again; a missing one is undefined', async () => {
    const stored = new Map([['java-pool-3-bridge', secret('java-pool-3-bridge', 'on-the-server')]]);
    const fake = api(stored);
    const secrets = new BridgeSecrets(fake.core, 'ns');
    secrets.written(secret('java-pool-3-bridge', 'mine'));
    secrets.forget('java-pool-3-bridge');
    assert.equal((await secrets.read('java-pool-3-bridge'))?.token, 'on-the-server');
    stored.clear();
    secrets.forget('java-pool-3-bridge');
    assert.equal(await secrets.read('java-pool-3-bridge'), undefined);
    assert.deepEqual(fake.reads, ['java-pool-3-bridge', 'java-pool-3-bridge']);
  });

  it('a read that a write overtook answers what it read but keeps the written copy', async () => {
    const fake = api(new Map([['java-pool-4-bridge', secret('java-pool-4-bridge', 'before')]]));
    const secrets = new BridgeSecrets(fake.core, 'ns');
    fake.hold();
    const reading = secrets.read('java-pool-4-bridge');
    secrets.written(secret('java-pool-4-bridge', 'rotated'));
    fake.release();
    assert.equal((await reading)?.token, 'before');
    assert.equal((await secrets.read('java-pool-4-bridge'))?.token, 'rotated');
    assert.deepEqual(fake.reads, ['java-pool-4-bridge']);
  });

  describe('the pool tells it of its writes', () => {
    const appDefinition = {
      apiVersion: 'ide.cloud/v1beta10',
      kind: 'AppDefinition',
      metadata: { name: 'java', uid: 'app-uid', generation: 1 },
      spec: { name: 'java', image: 'java:1', port: 3000, ingressname: 'sessions', maxInstances: null },
    } as unknown as AppDefinition;
    const NAME = 'java-pool-1-bridge';

    /** The pool's writes against an API server holding `stored` Secrets; every other write succeeds. */
    function pool(stored: Map<string, k8s.V1Secret>, secrets: BridgeSecrets) {
      const observed = <T>(object: T) => object;
      const deps = {
        namespace: 'ns',
        config: parseOperatorConfig({ namespace: 'ns' }),
        objects: { patch: async (o: k8s.KubernetesObject) => o },
        core: {
          createNamespacedSecret: async ({ body }: { body: k8s.V1Secret }) => {
            if (stored.has(body.metadata!.name!)) throw new k8s.ApiException(409, 'already exists', {}, {});
            stored.set(body.metadata!.name!, body);
            return body;
          },
          createNamespacedPersistentVolumeClaim: async ({ body }: { body: unknown }) => body,
        },
        apps: {
          createNamespacedDeployment: async ({ body }: { body: k8s.V1Deployment }) => ({
            ...body,
            metadata: { ...body.metadata, uid: 'd-uid' },
          }),
        },
        leases: { createNamespacedLease: async ({ body }: { body: k8s.V1Lease }) => body },
        deployments: { observe: observed },
        reservations: { get: () => undefined, observe: observed },
        claims: { get: () => undefined, observe: observed },
        secrets,
      } as unknown as PoolDeps;
      return new PoolInstances(deps);
    }

    it("an instance's new Secret is read back from memory, with the tokens the pool created", async () => {
      const stored = new Map<string, k8s.V1Secret>();
      const fake = api(stored);
      const secrets = new BridgeSecrets(fake.core, 'ns');
      await pool(stored, secrets).create(appDefinition, 1);
      const created = stored.get(NAME)!;
      const read = await secrets.read(NAME);
      assert.deepEqual(
        read,
        Object.fromEntries(Object.entries(created.data!).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])),
      );
      assert.deepEqual(fake.reads, []);
    });

    it('a create that finds the Secret there drops an older copy: the tokens are read from the API server', async () => {
      const stored = new Map([[NAME, secret(NAME, 'on-the-server')]]);
      const fake = api(stored);
      const secrets = new BridgeSecrets(fake.core, 'ns');
      secrets.written(secret(NAME, 'an-older-copy'));
      await pool(stored, secrets).create(appDefinition, 1);
      assert.equal((await secrets.read(NAME))?.token, 'on-the-server');
      assert.deepEqual(fake.reads, [NAME]);
    });
  });
});

// The foundation on the real local control plane: the CRDs as the API server serves them, and the
// cluster machinery (scheduler, kwok, garbage collector) the operator will rely on.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../server/src/model/api-group.js';
import { eventually } from '../support/kube.js';
import { APP_DEFINITION_DEFAULTS } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

type CustomObject = k8s.KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

const examples: Record<string, Record<string, unknown>> = {
  appdefinitions: {
    name: 'python-latest',
    image: 'ide-cloud/python:latest',
    port: 3000,
    ingressname: 'ide-cloud-sessions',
  },
  workspaces: { user: 'alice@example.com', appDefinition: 'python-latest', label: 'Exercise 1' },
  sessions: { user: 'alice@example.com', appDefinition: 'python-latest', workspace: 'ws-1', envVars: { IDE: 'true' } },
};

/**
 * A watch of `path`, open (answered 200) when this resolves: an API server that has just started
 * refuses watches (429) until its watch cache of the collection is ready, so a refused one is asked
 * again, until a deadline.
 */
async function openWatch(
  kc: k8s.KubeConfig,
  path: string,
  onEvent: (phase: string, object: CustomObject) => void,
): Promise<AbortController> {
  return eventually(async () => {
    let ended: unknown;
    const request = await new k8s.Watch(kc).watch(path, {}, onEvent, (error) => (ended = error ?? 'closed'));
    if (ended !== undefined) throw new Error(`the watch of ${path} was not opened: ${String(ended)}`);
    return request;
  }, 30_000);
}

describe('foundation on the real kube-apiserver', function () {
  this.timeout(15 * 60_000); // the very first run builds the Kubernetes binaries
  const stack = useStack('foundation');
  let custom: k8s.CustomObjectsApi;
  before(() => {
    custom = stack.kc.makeApiClient(k8s.CustomObjectsApi);
  });

  it('serves the three kinds with their short names (what `kubectl get ad` resolves)', async () => {
    const resources = await stack.kc
      .makeApiClient(k8s.CustomObjectsApi)
      .getAPIResources({ group: GROUP, version: VERSION });
    const byName = Object.fromEntries(
      resources.resources.filter((r) => !r.name.includes('/')).map((r) => [r.name, r.shortNames ?? []]),
    );
    assert.deepEqual(byName, { appdefinitions: ['appdef', 'ad'], sessions: [], workspaces: ['ws'] });
  });

  const kindOf: Record<string, string> = {
    appdefinitions: 'AppDefinition',
    workspaces: 'Workspace',
    sessions: 'Session',
  };

  for (const plural of Object.keys(examples)) {
    it(`creates, reads, lists, watches and deletes ${plural}`, async () => {
      const name = plural === 'appdefinitions' ? 'python-latest' : `${plural}-crud`;
      const events: string[] = [];
      const request = await openWatch(
        stack.kc,
        `/apis/${GROUP}/${VERSION}/namespaces/${stack.namespace}/${plural}`,
        (phase, object) => {
          if (object.metadata?.name === name) events.push(phase);
        },
      );
      try {
        const created = (await custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: stack.namespace,
          plural,
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: kindOf[plural], metadata: { name }, spec: examples[plural] },
        })) as CustomObject;
        assert.equal(created.metadata?.name, name);

        const read = (await custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: stack.namespace,
          plural,
          name,
        })) as CustomObject;
        assert.deepEqual(
          Object.fromEntries(Object.keys(examples[plural]!).map((k) => [k, read.spec?.[k]])),
          examples[plural],
        );

        const list = (await custom.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: stack.namespace,
          plural,
        })) as { items: CustomObject[] };
        assert.deepEqual(
          list.items.map((i) => i.metadata?.name),
          [name],
        );

        await custom.deleteNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: stack.namespace,
          plural,
          name,
        });
        await eventually(() => assert.deepEqual(events, ['ADDED', 'DELETED']), 10_000);
      } finally {
        request.abort();
      }
    });
  }

  /** An AppDefinition of the example spec with `spec` on it, created straight through the API. */
  const createAppDefinitionObject = (name: string, spec: Record<string, unknown>) =>
    custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: stack.namespace,
      plural: 'appdefinitions',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'AppDefinition',
        metadata: { name },
        spec: { ...examples.appdefinitions, name, ...spec },
      },
    }) as Promise<CustomObject>;

  it('applies the schema defaults of an AppDefinition', async () => {
    const created = await createAppDefinitionObject('c-latest', {});
    assert.deepEqual({ ...created.spec }, { ...examples.appdefinitions, name: 'c-latest', ...APP_DEFINITION_DEFAULTS });
  });

  it('rejects an AppDefinition with minInstances > maxInstances, and accepts maxInstances null', async () => {
    const create = createAppDefinitionObject;

    await assert.rejects(
      create('too-many', { minInstances: 5, maxInstances: 2 }),
      (error: k8s.ApiException<string>) => {
        assert.equal(error.code, 422);
        assert.match(
          (JSON.parse(String(error.body)) as { message: string }).message,
          /minInstances must be <= maxInstances/,
        );
        return true;
      },
    );
    await assert.rejects(
      create('negative', { minInstances: -1 }),
      (error: k8s.ApiException<string>) => error.code === 422,
    );
    await assert.rejects(
      create('name-mismatch', { name: 'other' }),
      (error: k8s.ApiException<string>) => error.code === 422,
    );
    const unbounded = await create('unbounded', { minInstances: 3, maxInstances: null });
    assert.equal(unbounded.spec?.maxInstances, null);
  });

  it('updates status only through the status subresource', async () => {
    const name = 'status-session';
    const base = { group: GROUP, version: VERSION, namespace: stack.namespace, plural: 'sessions', name };
    await custom.createNamespacedCustomObject({
      ...base,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'Session',
        metadata: { name },
        spec: examples.sessions,
        status: { phase: 'Running' },
      },
    });
    const afterCreate = (await custom.getNamespacedCustomObject(base)) as CustomObject;
    assert.equal(afterCreate.status, undefined, 'status in a create is ignored');

    await custom.patchNamespacedCustomObjectStatus(
      { ...base, body: { status: { phase: 'Starting', startStrategy: 'lazy' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const withStatus = (await custom.getNamespacedCustomObject(base)) as CustomObject;
    assert.deepEqual(withStatus.status, { phase: 'Starting', startStrategy: 'lazy' });

    await custom.patchNamespacedCustomObject(
      { ...base, body: { spec: { user: 'alice@example.com' }, status: { phase: 'Running' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const mainPatched = (await custom.getNamespacedCustomObject(base)) as CustomObject;
    assert.equal(mainPatched.status?.phase, 'Starting', 'a patch of the main resource leaves status alone');

    await assert.rejects(
      custom.patchNamespacedCustomObjectStatus(
        { ...base, body: { status: { phase: 'Dancing' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
      (error: k8s.ApiException<string>) => error.code === 422,
    );
  });

  it('runs a Deployment to a Running pod with an IP on the kwok node', async () => {
    const apps = stack.kc.makeApiClient(k8s.AppsV1Api);
    const core = stack.kc.makeApiClient(k8s.CoreV1Api);
    await apps.createNamespacedDeployment({
      namespace: stack.namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'example.invalid/web:1', ports: [{ containerPort: 8080 }] }] },
          },
        },
      },
    });
    const pod = await eventually(async () => {
      const pods = await core.listNamespacedPod({ namespace: stack.namespace, labelSelector: 'app=web' });
      const running = pods.items.find((p) => p.status?.phase === 'Running' && p.status.podIP);
      assert.ok(running, 'no Running pod with an IP yet');
      return running;
    }, 60_000);
    assert.equal(pod.spec?.nodeName, 'kwok-node-0');
    await eventually(async () => {
      const deployment = await apps.readNamespacedDeployment({ name: 'web', namespace: stack.namespace });
      assert.equal(deployment.status?.readyReplicas, 1);
    }, 30_000);
  });

  it('garbage-collects an object whose owner is deleted', async () => {
    const name = 'owner-session';
    const owner = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: stack.namespace,
      plural: 'sessions',
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Session', metadata: { name }, spec: examples.sessions },
    })) as CustomObject;
    const core = stack.kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: stack.namespace,
      body: {
        metadata: {
          name: 'owned-config',
          ownerReferences: [
            { apiVersion: `${GROUP}/${VERSION}`, kind: 'Session', name, uid: owner.metadata!.uid!, controller: true },
          ],
        },
        data: { a: 'b' },
      },
    });
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: stack.namespace,
      plural: 'sessions',
      name,
    });
    await eventually(async () => {
      await assert.rejects(
        core.readNamespacedConfigMap({ name: 'owned-config', namespace: stack.namespace }),
        (e: k8s.ApiException<string>) => e.code === 404,
      );
    }, 60_000);
  });
});

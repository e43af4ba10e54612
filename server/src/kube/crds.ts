import * as k8s from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../model/api-group.js';
import { buildCrds } from '../model/crd.js';

const applyPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);

/** Applies IDE Cloud's CRDs and waits until the API server serves them (condition Established). */
export async function installCrds(kc: k8s.KubeConfig, timeoutMs = 60_000): Promise<void> {
  const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crds = buildCrds() as unknown as k8s.V1CustomResourceDefinition[];
  // The patch body goes out untyped: the typed serializer would drop keys whose wire names differ
  // from the TypeScript ones (`default`, `x-kubernetes-validations`).
  await Promise.all(
    crds.map((crd) =>
      extensions.patchCustomResourceDefinition(
        { name: crd.metadata!.name!, body: crd, fieldManager: FIELD_MANAGER, force: true },
        applyPatch,
      ),
    ),
  );
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata!.name!;
    for (;;) {
      const current = await extensions.readCustomResourceDefinition({ name });
      if (current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not established within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

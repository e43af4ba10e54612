// npm start: the local control plane with IDE Cloud's CRDs and shipped app definitions; Ctrl-C stops
// everything this process started.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../server/src/kube/client.js';
import { ideCloudResources } from '../server/src/kube/resources.js';
import { SHIPPED_APP_DEFINITIONS } from '../server/src/model/shipped-app-definitions.js';
import { startControlPlane, stopControlPlane } from './cluster/control-plane.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, '.cluster', 'start');
const namespace = process.env.IDE_CLOUD_NAMESPACE ?? 'ide-cloud';

const state = await startControlPlane(dir);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.log('stopping…');
  await stopControlPlane(dir);
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

const kc = loadKubeConfig(state.kubeconfig);
await kc
  .makeApiClient(k8s.CoreV1Api)
  .createNamespace({ body: { metadata: { name: namespace } } })
  .catch((error: unknown) => {
    if (!(error instanceof k8s.ApiException && error.code === 409)) throw error;
  });
const { appDefinitions } = ideCloudResources(kc, namespace);
for (const { spec } of SHIPPED_APP_DEFINITIONS) await appDefinitions.apply(spec.name, { spec });
console.log(`applied ${SHIPPED_APP_DEFINITIONS.length} app definitions in namespace ${namespace}`);
console.log(`KUBECONFIG=${state.kubeconfig}`);
console.log('Ctrl-C stops everything.');
// The control plane runs in processes of its own; this timer keeps us alive to stop them on Ctrl-C.
setInterval(() => undefined, 60_000);

// npm run cluster -- <up [--real-node]|down|status|build [helm|auth-proxy|kubelet|traefik|network-policy|storage]>
// --real-node adds a real node (kubelet, containerd, Traefik as its ingress, kube-router for network
// policies, local-path-provisioner for volumes; root only) beside the kwok node: real-node.ts.
// `up` starts a local control plane in .cluster/ and prints KUBECONFIG=<path> as its last line.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BUILD_TARGETS,
  type BuildTarget,
  describeControlPlane,
  ensureBinaries,
  readState,
  startControlPlane,
  stopControlPlane,
} from './control-plane.js';
import { isAlive } from './processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = process.env.IDE_CLOUD_CLUSTER_DIR ?? path.join(root, '.cluster', 'local');

async function main(command: string | undefined): Promise<number> {
  switch (command) {
    case 'up': {
      const existing = await readState(dir);
      if (existing?.pids['kube-apiserver'] && isAlive(existing.pids['kube-apiserver'])) {
        console.log(`already running: ${existing.server}`);
        console.log(`KUBECONFIG=${existing.kubeconfig}`);
        return 0;
      }
      const state = await startControlPlane(dir, { realNode: process.argv.includes('--real-node') });
      console.log(`KUBECONFIG=${state.kubeconfig}`);
      return 0;
    }
    case 'down':
      await stopControlPlane(dir);
      console.log('stopped');
      return 0;
    case 'status':
      for (const line of await describeControlPlane(dir)) console.log(line);
      return 0;
    case 'build': {
      const target = process.argv[3] ?? 'k8s';
      if (!(BUILD_TARGETS as readonly string[]).includes(target)) {
        console.error(`build targets: ${BUILD_TARGETS.join(', ')}`);
        return 2;
      }
      console.log(await ensureBinaries(target as BuildTarget));
      return 0;
    }
    default:
      console.error(`usage: npm run cluster -- <up [--real-node]|down|status|build [${BUILD_TARGETS.join('|')}]>`);
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);

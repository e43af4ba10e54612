// npm run cluster -- <up [--real-node]|down|status|build [helm|kubelet|traefik]>
// --real-node adds a real node (kubelet, containerd, Traefik as its ingress; root only) beside the kwok
// node: real-node.ts.
// `up` starts a local control plane in .cluster/ and prints KUBECONFIG=<path> as its last line.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
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
      const target = process.argv[3];
      console.log(
        await ensureBinaries(target === 'helm' || target === 'kubelet' || target === 'traefik' ? target : 'k8s'),
      );
      return 0;
    }
    default:
      console.error('usage: npm run cluster -- <up [--real-node]|down|status|build [helm|kubelet|traefik]>');
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

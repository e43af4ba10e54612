// npm run cluster -- <up [--fake-pods]|down|status|build [target...]|prebuild|image <image>>
// `up` starts a local control plane in .cluster/ and prints KUBECONFIG=<path> as its last line. Beside
// the kwok node (fake pods) it runs a real node (kubelet, containerd, Traefik as its ingress, kube-router
// for network policies, local-path-provisioner for volumes: real-node.ts) where the machine allows it;
// otherwise one line says what is missing. --fake-pods: the kwok node only, on purpose.
// `prebuild` builds what `npm test`'s suites need, before they run (suite-builds.ts).
// `image` builds one of the project's images (scripts/images/build.sh) and loads it into the real node
// running on this machine (npm start's or up's): `npm run cluster -- image ide-cloud/session-c:latest`.
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
import { buildImage, decideNodes, importImage, imageTarget, runningRealNode } from './real-node.js';
import { buildWhatTheSuitesNeed } from './suite-builds.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = process.env.IDE_CLOUD_CLUSTER_DIR ?? path.join(root, '.cluster', 'local');

const USAGE = `usage: npm run cluster -- <up [--fake-pods]|down|status|build [${BUILD_TARGETS.join('|')}]...|prebuild|image <image>>`;

async function main(command: string | undefined): Promise<number> {
  switch (command) {
    case 'up': {
      const existing = await readState(dir);
      if (existing?.pids['kube-apiserver'] && isAlive(existing.pids['kube-apiserver'])) {
        console.log(`already running: ${existing.server}`);
        console.log(`KUBECONFIG=${existing.kubeconfig}`);
        return 0;
      }
      const { realNode, notice } = await decideNodes(process.argv.slice(3));
      if (notice) console.log(notice);
      const state = await startControlPlane(dir, { realNode });
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
      const targets = process.argv.slice(3);
      if (targets.some((target) => !(BUILD_TARGETS as readonly string[]).includes(target))) {
        console.error(`build targets: ${BUILD_TARGETS.join(', ')}`);
        return 2;
      }
      console.log(await ensureBinaries(...(targets as BuildTarget[])));
      return 0;
    }
    case 'prebuild':
      await buildWhatTheSuitesNeed((line) => console.log(line));
      return 0;
    case 'image': {
      const image = process.argv[3];
      const node = await runningRealNode();
      if (!image || !node) {
        console.error(image ? 'no real node runs on this machine (npm start, or npm run cluster -- up)' : USAGE);
        return 2;
      }
      const archive = await buildImage(imageTarget(image));
      await importImage(node, archive);
      console.log(`loaded into the real node: ${archive}`);
      return 0;
    }
    default:
      console.error(USAGE);
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

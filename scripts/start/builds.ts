// What npm start builds before it starts anything, with what is left: the first start on a machine
// builds it all from source (Go modules, Debian's packages, npm), later starts find each step in the
// cache (~/.cache/ide-cloud) within a second or two and say nothing of it.
import { binariesStep, runLanes, type BuildStep } from '../cluster/build-lanes.js';
import { realNodeBuilds, type BuildTarget } from '../cluster/control-plane.js';
import { buildImage, type ImageTarget } from '../cluster/real-node.js';

/**
 * The mode's builds in two lanes that run side by side: the Go binaries, and the real node's images
 * (their Debian and npm downloads overlap the other lane's compiling; both compile Go at times). The
 * fake-pods mode needs the control plane and helm only; the real mode also the node's binaries
 * (realNodeBuilds: no kube-router, as npm start applies no NetworkPolicy) and the printed link's images.
 */
function lanes(realNode: boolean, images: ImageTarget[], archives: string[]): BuildStep[][] {
  const targets: BuildTarget[] = ['k8s', 'helm', ...(realNode ? realNodeBuilds({ networkPolicies: false }) : [])];
  const binaries = [binariesStep(targets)];
  if (!realNode) return [binaries];
  const imageLane = images.map((target): BuildStep => ({
    what: `image ide-cloud/${target}`,
    why:
      target === 'auth-proxy'
        ? "the proxy in front of every session's IDE"
        : 'the IDE of the printed link (code-server with the data bridge and the bootstrap)',
    firstTimeMinutes: target === 'auth-proxy' ? 4 : 5,
    run: async () => archives.push(await buildImage(target)),
  }));
  return [binaries, imageLane];
}

/**
 * Runs the mode's builds, each lane in order, the lanes side by side, announcing each step that is
 * not in the cache with what is left at most; the OCI archives of `images` (real node only), in order.
 */
export async function buildWhatTheModeNeeds(
  realNode: boolean,
  images: ImageTarget[],
  say: (line: string) => void,
): Promise<string[]> {
  const archives: string[] = [];
  await runLanes(lanes(realNode, images, archives), say);
  return archives;
}

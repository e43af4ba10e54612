// What npm start builds before it starts anything, with what is left: the first start on a machine
// builds it all from source (Go modules, Debian's packages, npm), later starts find each step in the
// cache (~/.cache/ide-cloud) within a second or two and say nothing of it.
import { ensureBinaries, realNodeBuilds, type BuildTarget } from '../cluster/control-plane.js';
import { buildImage, type ImageTarget } from '../cluster/real-node.js';

interface Step {
  what: string;
  /** Why this mode needs it. */
  why: string;
  /** Minutes the first build took on 2 cores with empty caches, beside the other lane (README, quick start). */
  firstTimeMinutes: number;
  run: () => Promise<unknown>;
}

/**
 * The mode's builds in two lanes that run side by side: the Go binaries, and the real node's images
 * (their Debian and npm downloads overlap the other lane's compiling; both compile Go at times). The
 * fake-pods mode needs the control plane and helm only; the real mode also the node's binaries
 * (realNodeBuilds: no kube-router, as npm start applies no NetworkPolicy) and the printed link's images.
 */
function lanes(realNode: boolean, images: ImageTarget[], archives: string[]): Step[][] {
  const binaries: Step[] = [
    {
      what: 'Kubernetes control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)',
      why: 'the API server the operator and the service work against',
      firstTimeMinutes: 9,
      run: () => ensureBinaries('k8s'),
    },
    {
      what: 'helm',
      why: "renders the chart's app definitions and landing page",
      firstTimeMinutes: 1,
      run: () => ensureBinaries('helm'),
    },
  ];
  if (!realNode) return [binaries];
  const node: Partial<Record<BuildTarget, Pick<Step, 'what' | 'why' | 'firstTimeMinutes'>>> = {
    kubelet: { what: 'kubelet', why: 'runs the session pods', firstTimeMinutes: 1 },
    traefik: { what: 'Traefik', why: 'the ingress that routes session URLs to their pods', firstTimeMinutes: 5 },
    storage: { what: 'local-path-provisioner', why: "makes the workspaces' volumes", firstTimeMinutes: 1 },
  };
  for (const target of realNodeBuilds({ networkPolicies: false }))
    binaries.push({ ...node[target]!, run: () => ensureBinaries(target) });
  const imageLane = images.map((target): Step => ({
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

/** A step still running after this long is being built, not found in the cache: it is announced. */
const ANNOUNCE_AFTER_MS = 1500;

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
  const plan = lanes(realNode, images, archives);
  const total = plan.reduce((sum, lane) => sum + lane.length, 0);
  const left = plan.map((lane) => lane.reduce((sum, step) => sum + step.firstTimeMinutes, 0));
  let number = 0;
  await Promise.all(
    plan.map(async (lane, index) => {
      for (const step of lane) {
        const n = ++number;
        const since = Date.now();
        const announce = setTimeout(
          () =>
            say(
              `[build ${n}/${total}] ${step.what}: ${step.why} ` +
                `(first time about ${step.firstTimeMinutes} min, then cached; at most ~${Math.max(...left)} min left)`,
            ),
          ANNOUNCE_AFTER_MS,
        );
        try {
          await step.run();
        } finally {
          clearTimeout(announce);
        }
        left[index]! -= step.firstTimeMinutes;
        if (Date.now() - since >= ANNOUNCE_AFTER_MS)
          say(`[build ${n}/${total}] done in ${Math.round((Date.now() - since) / 1000)} s`);
      }
    }),
  );
  return archives;
}

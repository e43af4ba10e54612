// What npm start builds before it starts anything, with what is left: the first
// start on a machine builds it all from source (Go modules, Debian's packages, npm), later starts find
// each step in the cache (~/.cache/ide-cloud) within a second.
import { ensureBinaries, realNodeBuilds, type BuildTarget } from '../cluster/control-plane.js';
import { buildImage, installRealNodePackages, type ImageTarget } from '../cluster/real-node.js';

interface Step {
  what: string;
  /** Why this mode needs it. */
  why: string;
  /** Minutes the first build takes on 2 cores with empty caches, beside the other lane (measured; see README). */
  firstTimeMinutes: number;
  run: () => Promise<unknown>;
}

/**
 * The mode's builds in two lanes that run side by side: the Go binaries (compiling, on every core),
 * and the real node's images (mostly downloads: Debian's packages, npm, Go modules). The fake-pods mode
 * needs the control plane and helm only; the real mode also the node (without kube-router: npm start
 * applies no NetworkPolicy) and the images of the printed link.
 */
function lanes(realNode: boolean, images: ImageTarget[], archives: string[]): Step[][] {
  const binaries: Step[] = [
    {
      what: 'Kubernetes control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)',
      why: 'the API server the operator and the service work against',
      firstTimeMinutes: 6,
      run: () => ensureBinaries('k8s'),
    },
    {
      what: 'helm',
      why: "renders the chart's app definitions and landing page",
      firstTimeMinutes: 2,
      run: () => ensureBinaries('helm'),
    },
  ];
  if (!realNode) return [binaries];
  const node: Partial<Record<BuildTarget, Pick<Step, 'what' | 'why' | 'firstTimeMinutes'>>> = {
    kubelet: { what: 'kubelet', why: 'runs the session pods', firstTimeMinutes: 2 },
    traefik: { what: 'Traefik', why: 'the ingress that routes session URLs to their pods', firstTimeMinutes: 6 },
    storage: { what: 'local-path-provisioner', why: "makes the workspaces' volumes", firstTimeMinutes: 1 },
    'network-policy': { what: 'kube-router', why: 'enforces NetworkPolicies', firstTimeMinutes: 5 },
  };
  for (const target of realNodeBuilds({ networkPolicies: false }))
    binaries.push({ ...node[target]!, run: () => ensureBinaries(target) });
  const imageLane: Step[] = [
    {
      what: "Debian's packages of the node (containerd, runc, CNI plugins, iptables, ipset, buildah)",
      why: 'run the pods and build the images',
      firstTimeMinutes: 1,
      run: installRealNodePackages,
    },
    ...images.map((target): Step => ({
      what: `image ide-cloud/${target}`,
      why:
        target === 'auth-proxy'
          ? "the proxy in front of every session's IDE"
          : 'the IDE of the printed link (code-server with the data bridge and the bootstrap)',
      firstTimeMinutes: target === 'auth-proxy' ? 6 : 10,
      run: async () => archives.push(await buildImage(target)),
    })),
  ];
  return [binaries, imageLane];
}

/**
 * Runs the mode's builds, each lane in order, the lanes side by side, telling what is left; the OCI
 * archives of `images` (real node only), in their order.
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
        say(
          `[build ${n}/${total}] ${step.what}: ${step.why} ` +
            `(first time about ${step.firstTimeMinutes} min, then cached; at most ~${Math.max(...left)} min left)`,
        );
        const since = Date.now();
        await step.run();
        left[index]! -= step.firstTimeMinutes;
        const took = (Date.now() - since) / 1000;
        if (took >= 5) say(`[build ${n}/${total}] done in ${Math.round(took)} s`);
      }
    }),
  );
  return archives;
}

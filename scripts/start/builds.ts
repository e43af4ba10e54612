// What npm start builds before it starts anything, one step at a time with what is left: the first
// start on a machine builds it all from source (Go modules, Debian's packages, npm), later starts find
// each step in the cache (~/.cache/ide-cloud) within a second.
import { ensureBinaries } from '../cluster/control-plane.js';
import { buildImage, installRealNodePackages, type ImageTarget } from '../cluster/real-node.js';

interface Step {
  what: string;
  /** Why this mode needs it. */
  why: string;
  /** Minutes the first build takes on 2 quiet cores with empty caches (measured; see README). */
  firstTimeMinutes: number;
  run: () => Promise<unknown>;
}

/** The steps of a mode: the fake-pods mode needs the control plane and helm; the real mode the node and the images. */
function steps(realNode: boolean, images: ImageTarget[], archives: string[]): Step[] {
  const controlPlane: Step[] = [
    {
      what: 'Kubernetes control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)',
      why: 'the API server the operator and the service work against',
      firstTimeMinutes: 5,
      run: () => ensureBinaries('k8s'),
    },
    {
      what: 'helm',
      why: "renders the chart's app definitions and landing page",
      firstTimeMinutes: 1,
      run: () => ensureBinaries('helm'),
    },
  ];
  if (!realNode) return controlPlane;
  return [
    ...controlPlane,
    {
      what: "Debian's packages of the node (containerd, runc, CNI plugins, iptables, ipset, buildah)",
      why: 'run the pods and build the images',
      firstTimeMinutes: 1,
      run: installRealNodePackages,
    },
    { what: 'kubelet', why: 'runs the session pods', firstTimeMinutes: 3, run: () => ensureBinaries('kubelet') },
    {
      what: 'Traefik',
      why: 'the ingress that routes session URLs to their pods',
      firstTimeMinutes: 4,
      run: () => ensureBinaries('traefik'),
    },
    {
      what: 'kube-router',
      why: "enforces the sessions' network policies",
      firstTimeMinutes: 2,
      run: () => ensureBinaries('network-policy'),
    },
    {
      what: 'local-path-provisioner',
      why: "makes the workspaces' volumes",
      firstTimeMinutes: 1,
      run: () => ensureBinaries('storage'),
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
}

/**
 * Runs the mode's builds in order (they compete for the same cores), telling what is left; the OCI
 * archives of `images` (real node only), in their order.
 */
export async function buildWhatTheModeNeeds(
  realNode: boolean,
  images: ImageTarget[],
  say: (line: string) => void,
): Promise<string[]> {
  const archives: string[] = [];
  const plan = steps(realNode, images, archives);
  let left = plan.reduce((sum, step) => sum + step.firstTimeMinutes, 0);
  for (const [index, step] of plan.entries()) {
    say(
      `[build ${index + 1}/${plan.length}] ${step.what}: ${step.why} ` +
        `(first time about ${step.firstTimeMinutes} min, then cached; at most ~${left} min left)`,
    );
    const since = Date.now();
    await step.run();
    left -= step.firstTimeMinutes;
    const took = (Date.now() - since) / 1000;
    if (took >= 5) say(`[build ${index + 1}/${plan.length}] done in ${Math.round(took)} s`);
  }
  return archives;
}

// Builds in lanes that run side by side, each lane in order, announcing each step that is not in the
// cache with what is left at most: npm start's builds (scripts/start/builds.ts) and npm test's
// (suite-builds.ts). A lane of Go compiles beside a lane of downloads (Debian, npm) keeps both cores
// busy while the downloads wait on the network.
import { ensureBinaries, type BuildTarget } from './control-plane.js';

export interface BuildStep {
  what: string;
  /** Why it is needed (of a step for several parts, theirs in the same order). */
  why: string;
  /** Minutes the first build took on 2 cores with empty caches, beside the other lanes. */
  firstTimeMinutes: number;
  run: () => Promise<unknown>;
}

type Described = Pick<BuildStep, 'what' | 'why' | 'firstTimeMinutes'>;

const BINARIES: Record<BuildTarget, Described> = {
  k8s: {
    what: 'Kubernetes control plane (etcd, kube-apiserver, controller manager, scheduler, kwok)',
    why: 'the API server the operator and the service work against',
    firstTimeMinutes: 9,
  },
  helm: { what: 'helm', why: "renders the chart's app definitions and landing page", firstTimeMinutes: 1 },
  'auth-proxy': { what: 'oauth2-proxy', why: "the proxy in front of every session's IDE", firstTimeMinutes: 1 },
  kubelet: { what: 'kubelet', why: 'runs the session pods', firstTimeMinutes: 1 },
  traefik: { what: 'Traefik', why: 'the ingress that routes session URLs to their pods', firstTimeMinutes: 4 },
  'network-policy': { what: 'kube-router', why: 'enforces NetworkPolicies on the real node', firstTimeMinutes: 2 },
  storage: { what: 'local-path-provisioner', why: "makes the workspaces' volumes", firstTimeMinutes: 1 },
};

/**
 * One step for the Go binaries of all `targets`: one build.sh call resolves every module in the
 * background from the start while the binaries compile one after another, where a call per target
 * would wait for each target's downloads between its compiles.
 */
export function binariesStep(targets: BuildTarget[]): BuildStep {
  const parts = targets.map((target) => BINARIES[target]);
  return {
    what: parts.map((part) => part.what).join(', '),
    why: parts.map((part) => part.why).join('; '),
    firstTimeMinutes: parts.reduce((sum, part) => sum + part.firstTimeMinutes, 0),
    run: () => ensureBinaries(...targets),
  };
}

/** A step still running after this long is being built, not found in the cache: it is announced. */
const ANNOUNCE_AFTER_MS = 1500;

/** Runs each lane's steps in order, the lanes side by side; rejects with the first step that fails. */
export async function runLanes(plan: BuildStep[][], say: (line: string) => void): Promise<void> {
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
}

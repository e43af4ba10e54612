// What `npm test` builds before its suites run (npm run cluster -- prebuild), in two lanes side by
// side: every Go binary the suites use in one build.sh call (its module downloads beside its compiles),
// and beside it the parts that mostly wait on the network (Debian's packages, npm, debootstrap): the VS
// Code host and, where the machine runs a real node, the images the suites load onto it. The suites then
// find all of it in the cache instead of building it inside a test, one part after another.
import { installVscodeHost } from '../vscode-host/install.js';
import { binariesStep, runLanes, type BuildStep } from './build-lanes.js';
import { realNodeBuilds, type BuildTarget } from './control-plane.js';
import {
  buildImage,
  installRealNodePackages,
  realNodeUnavailable,
  thisMachine,
  type ImageTarget,
  type MachineFacts,
} from './real-node.js';

/** The images the suites build on a real node (npm start's, the real-node suites' and the chart's). */
const SUITE_IMAGES: ImageTarget[] = [
  'session-javascript',
  'pause',
  'local-path-helper',
  'service',
  'operator',
  'landing-page',
  // Last: its oauth2-proxy comes from the other lane's build.sh call by then.
  'auth-proxy',
];

export interface SuiteBuilds {
  binaries: BuildTarget[];
  /** Empty where the machine cannot run a real node. */
  images: ImageTarget[];
  /** Why the real node's parts are left out, if they are. */
  withoutRealNode?: string;
}

/**
 * What the suites build on `machine`: the real node's parts where it can run a real node, also while
 * one runs now (its suites wait for that one to go).
 */
export function suiteBuilds(machine: MachineFacts = thisMachine()): SuiteBuilds {
  const withoutRealNode = realNodeUnavailable({ ...machine, runningNode: undefined });
  if (withoutRealNode) return { binaries: ['k8s', 'helm', 'auth-proxy'], images: [], withoutRealNode };
  return { binaries: ['k8s', 'helm', 'auth-proxy', ...realNodeBuilds({})], images: SUITE_IMAGES };
}

function lanes({ binaries, images }: SuiteBuilds): BuildStep[][] {
  const downloads: BuildStep[] = [
    {
      what: 'VS Code host (Node 24 and code-server from npm)',
      why: 'the suites that run the extensions in a real IDE',
      firstTimeMinutes: 2,
      run: installVscodeHost,
    },
  ];
  if (images.length)
    downloads.unshift({
      what: "the real node's Debian packages (containerd, buildah, debootstrap, …)",
      why: 'the real node and its image builds',
      firstTimeMinutes: 1,
      run: installRealNodePackages,
    });
  for (const target of images)
    downloads.push({
      what: `image ide-cloud/${target}`,
      why: 'the real-node suites',
      firstTimeMinutes: target === 'session-javascript' ? 5 : 1,
      run: () => buildImage(target),
    });
  return [[binariesStep(binaries)], downloads];
}

/** Builds (or finds in the cache) what the suites need on this machine. */
export async function buildWhatTheSuitesNeed(say: (line: string) => void): Promise<void> {
  const builds = suiteBuilds();
  if (builds.withoutRealNode) say(`Building without the real node's parts (${builds.withoutRealNode}).`);
  await runLanes(lanes(builds), say);
}

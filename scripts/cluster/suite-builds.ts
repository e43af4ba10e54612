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

function lanes(realNode: boolean): BuildStep[][] {
  const targets: BuildTarget[] = ['k8s', 'helm', 'auth-proxy', ...(realNode ? realNodeBuilds({}) : [])];
  const downloads: BuildStep[] = [
    {
      what: 'VS Code host (Node 24 and code-server from npm)',
      why: 'the suites that run the extensions in a real IDE',
      firstTimeMinutes: 2,
      run: installVscodeHost,
    },
  ];
  if (realNode) {
    downloads.unshift({
      what: "the real node's Debian packages (containerd, buildah, debootstrap, …)",
      why: 'the real node and its image builds',
      firstTimeMinutes: 1,
      run: installRealNodePackages,
    });
    for (const target of SUITE_IMAGES)
      downloads.push({
        what: `image ide-cloud/${target}`,
        why: 'the real-node suites',
        firstTimeMinutes: target === 'session-javascript' ? 5 : 1,
        run: () => buildImage(target),
      });
  }
  return [[binariesStep(targets)], downloads];
}

/**
 * Builds (or finds in the cache) what the suites need; the real node's parts where the machine can run
 * one, also while one runs now (the suites wait for it to go).
 */
export async function buildWhatTheSuitesNeed(say: (line: string) => void): Promise<void> {
  const why = realNodeUnavailable({ ...thisMachine(), runningNode: undefined });
  if (why) say(`Building for fake pods only (${why}).`);
  await runLanes(lanes(!why), say);
}

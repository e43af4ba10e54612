// Injection after a restart: workspace-backed warm launches mount the workspace's claim, so the warm
// instance's pod restarts; the delay is from the new pod's Ready (first seen by the harness's pod
// watch) to EnvInjected=True (first seen by its session watch), and the same from the Kubernetes
// timestamps (1 s granularity).
import { APPS } from '../config.js';
import type { Context, Scenario } from '../scenario.js';
import { prefix, summarize, until } from '../util.js';

export const injection: Scenario = {
  name: 'injection',
  title: 'injection after the pod restarts',
  weight: 4,
  needs: 'ide-cloud',
  after: ['warm-pool'],
  async run({ bench, sizes, progress }: Context) {
    progress.step(`${sizes.injectionLaunches} workspace-backed warm launches`);
    const sessions: string[] = [];
    const latencies: number[] = [];
    for (let i = 0; i < sizes.injectionLaunches; i++) {
      const user = `inject-${i}`;
      const r = await bench.launch(user, APPS.eager, { workspaceName: `ws-inject-${i}` });
      latencies.push(r.ms);
      const session = bench.sessionSource.list().find((s) => s.spec.user === user);
      if (session) sessions.push(session.metadata.name);
      progress.at(((i + 1) / sizes.injectionLaunches) * 0.8, `${i + 1}/${sizes.injectionLaunches}`);
    }
    await until(
      'EnvInjected on the workspace-backed sessions',
      () => sessions.every((name) => bench.sessions.get(name)?.envInjected),
      120_000,
      100,
    );
    const watched: number[] = [];
    const k8sTimes: number[] = [];
    for (const name of sessions) {
      const t = bench.sessions.get(name)!;
      const pod = [...bench.pods.values()].find((p) => p.session === name && p.ready);
      if (!pod?.ready) continue;
      watched.push(t.envInjected! - pod.ready);
      if (pod.readyTransition && t.envInjectedTransition) {
        k8sTimes.push(new Date(t.envInjectedTransition).getTime() - new Date(pod.readyTransition).getTime());
      }
    }
    // Back to the pool for the scale scenario: end these sessions and their workspaces.
    progress.step('ending the sessions and their workspaces');
    await bench.deleteSessionsOf(APPS.eager);
    for (let i = 0; i < sizes.injectionLaunches; i++) await bench.resources.workspaces.delete(`ws-inject-${i}`);
    return {
      injectionWorkspace: {
        ...prefix('podReadyToInjected', summarize(watched)),
        ...prefix('podReadyToInjectedK8sTimestamps', summarize(k8sTimes)),
        ...prefix('launch', summarize(latencies)),
      },
    };
  },
};

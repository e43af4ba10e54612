// Warm launches of new workspaces: each takes a prewarmed instance as it is (its pod does not restart)
// and the instance's claim becomes the workspace's. Measured: the launch, the reservation → EnvInjected
// delay (as for ephemeral launches), and the pods that restarted for a session (none expected).
import { APPS } from '../config.js';
import type { Context, Scenario } from '../scenario.js';
import { prefix, summarize, until } from '../util.js';
import { injectionFromReservation } from './eager-launch.js';

export const injection: Scenario = {
  name: 'injection',
  title: 'warm launches of new workspaces',
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
    // A pod made for a session carries its label; the prewarmed pod that served it does not.
    const restarted = [...bench.pods.values()].filter((p) => p.session && sessions.includes(p.session)).length;
    const strategies = sessions.map((name) => bench.sessions.get(name)?.strategy);
    // Read before the sessions end (the session source lists only those that exist).
    const injection = injectionFromReservation(bench, 'inject-');
    // Back to the pool for the scale scenario: end these sessions and their workspaces.
    progress.step('ending the sessions and their workspaces');
    await bench.deleteSessionsOf(APPS.eager);
    for (let i = 0; i < sizes.injectionLaunches; i++) await bench.resources.workspaces.delete(`ws-inject-${i}`);
    return {
      injectionWorkspace: {
        ...injection,
        ...prefix('launch', summarize(latencies)),
        warm: strategies.filter((s) => s === 'eager').length,
        podsRestarted: restarted,
      },
    };
  },
};

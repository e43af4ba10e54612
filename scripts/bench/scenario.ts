// What a scenario is: a module in scenarios/ that measures one thing and returns its figures under
// the Results keys it owns. run.ts runs them in order on one control plane.
import type { ApiMetrics } from './apimetrics.js';
import type { Sizes } from './config.js';
import type { Bench } from './harness.js';
import type { Progress } from './progress.js';
import type { Results } from './results.js';

export interface Context {
  bench: Bench;
  sizes: Sizes;
  progress: Progress;
  /** kube-apiserver's request counters, with IDE Cloud's own requests from the audit log. */
  api: ApiMetrics;
  /** The operator's RSS and CPU seconds so far (from /proc). */
  operatorStats(): { rssMb: number; cpuSeconds: number };
}

export interface Scenario {
  name: string;
  /** One line for the progress display. */
  title: string;
  /** Rough share of a full run's time, for the progress bar. */
  weight: number;
  /**
   * `control-plane`: runs on the control plane alone, before the operator and the service start.
   * `ide-cloud`: needs them running (and the warm pool, unless it is the pool's own scenario).
   * `real-node`: brings its own control plane with the real node, once the others have stopped.
   */
  needs: 'control-plane' | 'ide-cloud' | 'real-node';
  /** Scenarios that must have run before this one (also run by `--only`). */
  after?: string[];
  run(context: Context): Promise<Partial<Results>>;
}

// The prose of BENCHMARKS.md: method, comparison with published figures, and why targets are missed.
import type { Results } from './report.js';

export function ANALYSIS(r: Results): string {
  return ['## Method', '', `Sizes: \`${JSON.stringify(r.sizes)}\`.`].join('\n');
}

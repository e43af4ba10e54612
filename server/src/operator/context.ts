// Kept only for scripts/bench/harness.ts, which imports deploymentReady from here; it is exported
// from index.ts too. Delete this file once the harness imports it from there.
export { deploymentReady } from './runtime/objects.js';

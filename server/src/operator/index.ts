/** The operator's public surface, for `npm start`, main.ts and the tests. */
export { startOperator, type RunningOperator, type OperatorOptions } from './operator.js';
export {
  loadOperatorConfig,
  parseOperatorConfig,
  OPERATOR_ENV,
  type OperatorConfig,
  type OperatorConfigInput,
} from './config.js';
export { SESSION_FINALIZER } from './session/finalize.js';
export { deploymentReady, podReady } from './runtime/objects.js';
export { isFreeReadyInstance } from './pool/instances.js';
export { poolInstanceName, sessionUrl, sessionPodApp } from './manifests.js';

/** The landing page's public surface, for main.ts, `npm start` and the tests. */
export { startLandingPage, createLandingApp, type RunningLandingPage, type LandingOptions } from './server.js';
export {
  loadLandingConfig,
  parseLandingConfig,
  LandingConfigError,
  type LandingConfig,
  type LandingConfigInput,
} from './config.js';
export { launchTarget } from './service-client.js';
export { deepLink, type LandingApp, type LaunchParameters } from './params.js';

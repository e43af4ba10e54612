// Runs the landing page from environment variables (see config.ts for the list); SIGINT/SIGTERM stop it.
import { LandingConfigError, loadLandingConfig, startLandingPage } from './index.js';

try {
  const landing = await startLandingPage(loadLandingConfig(process.env));
  const stop = () => {
    void landing.close().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  if (error instanceof LandingConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}

// Runs the REST service from environment variables (see config.ts for the list); SIGINT/SIGTERM stop it.
import { ConfigError, loadServiceConfig, startService } from './index.js';

try {
  const service = await startService(loadServiceConfig(process.env));
  const stop = () => {
    void service.close().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}

// Runs the operator from environment variables (see OPERATOR_ENV in config.ts) until SIGINT/SIGTERM.
import { loadOperatorConfig, startOperator } from './index.js';

const operator = await startOperator(loadOperatorConfig(process.env));
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    void operator.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}

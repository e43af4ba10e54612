import { pino } from 'pino';

export type Logger = Pick<pino.Logger, 'info' | 'warn' | 'error' | 'debug' | 'child'>;

export function createLogger(level = process.env.IDE_CLOUD_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: 'ide-cloud-operator', level });
}

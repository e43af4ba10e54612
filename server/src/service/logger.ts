import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. The service never hands a request body, header or raw URL to the logger
 * (paths can carry the service auth token); the redaction below is the second line of defence for
 * any field that slips in by name.
 */
export const REDACTED_PATHS = [
  'appId',
  'token',
  'authorization',
  'sessionSecret',
  'env',
  'envVars',
  'gitUri',
  '*.appId',
  '*.token',
  '*.authorization',
  '*.sessionSecret',
  '*.env',
  '*.envVars',
  '*.gitUri',
  'req.headers.authorization',
  'req.headers["x-admin-api-token"]',
  'req.headers["x-activity-token"]',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name: 'ide-cloud-service',
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { component: 'service' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

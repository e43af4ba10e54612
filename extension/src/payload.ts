// Validation of the wire: the POST /data body and the dataBridge.getEnv argument. Error messages name
// the problem and the offending key, never a value.
import type { SaveWorkRequest, StopNotice } from '../../server/src/model/data-bridge.js';

export type Environment = Record<string, string>;

export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

export interface DataPayload {
  environment: Environment;
  /** The session's user, as older operators send it: accepted and ignored (the proxy admits on its own). */
  user?: string;
}

/** A user name as the allowed-users file holds it: one line, no blanks or control characters. */
const USER = /^[^\s\p{Cc}]{1,256}$/u;

/** Parses the body of POST /data: `{"environment": {string: string}, "user"?: string}`. */
export function parseDataPayload(body: string): DataPayload {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new InvalidInputError('body is not valid JSON');
  }
  if (!isPlainObject(parsed)) throw new InvalidInputError(`body must be a JSON object, got ${describe(parsed)}`);
  const unknownKeys = Object.keys(parsed).filter((key) => key !== 'environment' && key !== 'user');
  if (unknownKeys.length > 0) {
    throw new InvalidInputError(`unexpected field(s) ${unknownKeys.map((k) => JSON.stringify(k)).join(', ')}`);
  }
  const environment = parsed.environment;
  if (environment === undefined) throw new InvalidInputError('field "environment" is missing');
  if (!isPlainObject(environment)) {
    throw new InvalidInputError(`field "environment" must be an object of strings, got ${describe(environment)}`);
  }
  const entries = Object.entries(environment);
  for (const [key, value] of entries) {
    if (key === '') throw new InvalidInputError('environment keys must not be empty');
    if (typeof value !== 'string') {
      throw new InvalidInputError(`environment.${key} must be a string, got ${describe(value)}`);
    }
  }
  const user = parsed.user;
  if (user !== undefined && (typeof user !== 'string' || !USER.test(user))) {
    throw new InvalidInputError('field "user" must be 1 to 256 characters without blanks or control characters');
  }
  // fromEntries defines own properties, so even a key such as "__proto__" stays a plain entry.
  return { environment: Object.fromEntries(entries) as Environment, ...(user === undefined ? {} : { user }) };
}

/** Checks the argument of dataBridge.getEnv: a list of key names. */
export function parseKeyList(arg: unknown): string[] {
  if (!Array.isArray(arg)) {
    throw new InvalidInputError(`dataBridge.getEnv expects an array of key names, got ${describe(arg)}`);
  }
  arg.forEach((key: unknown, index) => {
    if (typeof key !== 'string' || key === '') {
      throw new InvalidInputError(
        `dataBridge.getEnv expects an array of key names, element ${index} is ${key === '' ? 'empty' : describe(key)}`,
      );
    }
  });
  return arg as string[];
}

const MAX_NOTICE_SECONDS = 86_400;

function parseObject(body: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new InvalidInputError('body is not valid JSON');
  }
  if (!isPlainObject(parsed)) throw new InvalidInputError(`body must be a JSON object, got ${describe(parsed)}`);
  return parsed;
}

function refuseUnknown(parsed: Record<string, unknown>, known: readonly string[]): void {
  const unknownKeys = Object.keys(parsed).filter((key) => !known.includes(key));
  if (unknownKeys.length > 0) {
    throw new InvalidInputError(`unexpected field(s) ${unknownKeys.map((k) => JSON.stringify(k)).join(', ')}`);
  }
}

/** Parses the body of POST /notice: `{"reason": "Idle" | "MaxLifetime", "secondsLeft": int, "saveWork"?: bool}`. */
export function parseNoticePayload(body: string): StopNotice {
  const parsed = parseObject(body);
  refuseUnknown(parsed, ['reason', 'secondsLeft', 'saveWork']);
  const { reason, secondsLeft, saveWork } = parsed;
  if (reason !== 'Idle' && reason !== 'MaxLifetime') {
    throw new InvalidInputError('field "reason" must be "Idle" or "MaxLifetime"');
  }
  if (typeof secondsLeft !== 'number' || !Number.isInteger(secondsLeft) || secondsLeft < 0) {
    throw new InvalidInputError(`field "secondsLeft" must be an integer from 0 to ${MAX_NOTICE_SECONDS}`);
  }
  if (secondsLeft > MAX_NOTICE_SECONDS) {
    throw new InvalidInputError(`field "secondsLeft" must be an integer from 0 to ${MAX_NOTICE_SECONDS}`);
  }
  if (saveWork !== undefined && typeof saveWork !== 'boolean') {
    throw new InvalidInputError(`field "saveWork" must be a boolean, got ${describe(saveWork)}`);
  }
  return { reason, secondsLeft, saveWork: saveWork === true };
}

/** Bodies of POST /activity and POST /save carry nothing: empty, or `{}`. */
const MAX_SAVE_TIMEOUT_SECONDS = 3600;

/**
 * Parses the body of POST /save: empty, `{}`, or `{"timeoutSeconds": int}`, how long the operator
 * waits for the answer.
 */
export function parseSavePayload(body: string): SaveWorkRequest {
  if (body.trim() === '') return {};
  const parsed = parseObject(body);
  refuseUnknown(parsed, ['timeoutSeconds']);
  const { timeoutSeconds } = parsed;
  if (timeoutSeconds === undefined) return {};
  if (
    typeof timeoutSeconds !== 'number' ||
    !Number.isInteger(timeoutSeconds) ||
    timeoutSeconds < 1 ||
    timeoutSeconds > MAX_SAVE_TIMEOUT_SECONDS
  ) {
    throw new InvalidInputError(`field "timeoutSeconds" must be an integer from 1 to ${MAX_SAVE_TIMEOUT_SECONDS}`);
  }
  return { timeoutSeconds };
}

export function parseEmptyPayload(body: string): void {
  if (body.trim() === '') return;
  refuseUnknown(parseObject(body), []);
}

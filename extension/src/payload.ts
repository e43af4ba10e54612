// Validation of the wire: the POST /data body and the dataBridge.getEnv argument. Error messages name
// the problem and the offending key, never a value.

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

/** Parses the body of POST /data: `{"environment": {string: string}}`. */
export function parseDataPayload(body: string): Environment {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new InvalidInputError('body is not valid JSON');
  }
  if (!isPlainObject(parsed)) throw new InvalidInputError(`body must be a JSON object, got ${describe(parsed)}`);
  const unknownKeys = Object.keys(parsed).filter((key) => key !== 'environment');
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
  // fromEntries defines own properties, so even a key such as "__proto__" stays a plain entry.
  return Object.fromEntries(entries) as Environment;
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

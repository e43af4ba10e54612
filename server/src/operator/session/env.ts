import { ACTIVITY_TOKEN_ENV, activityToken } from '../../model/activity-token.js';
import type { Session } from '../../model/session.js';

/**
 * The session environment sent to the data bridge: spec.envVars, then the data of each config map
 * in spec.envVarsFromConfigMaps order, then the decoded data of each secret in spec.envVarsFromSecrets
 * order. Later sources win, so a secret overrides a config map, which overrides a direct value.
 */
export function mergeSessionEnvironment(input: {
  envVars?: Record<string, string>;
  configMaps?: readonly (Record<string, string> | undefined)[];
  secrets?: readonly (Record<string, string> | undefined)[];
}): Record<string, string> {
  const merged: Record<string, string> = { ...(input.envVars ?? {}) };
  for (const data of input.configMaps ?? []) Object.assign(merged, data ?? {});
  for (const data of input.secrets ?? []) {
    for (const [key, value] of Object.entries(data ?? {})) merged[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return merged;
}

/**
 * Values the operator itself adds to every session, whichever path delivers them (pod env on the lazy
 * path, the data bridge on the eager one): the activity token with which the IDE reports activity.
 */
export function operatorEnvironment(session: Pick<Session, 'metadata' | 'spec'>): Record<string, string> {
  const secret = session.spec.sessionSecret;
  return secret ? { [ACTIVITY_TOKEN_ENV]: activityToken(secret, session.metadata.name) } : {};
}

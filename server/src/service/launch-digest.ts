import { createHmac } from 'node:crypto';
import type { EnvironmentVars } from '../model/requests.js';

/**
 * What a launch asked for beyond its user and app definition (its env: the values given and the
 * config maps and secrets named), as an HMAC keyed by the session's own secret. The launcher stores
 * it on the Session it creates (`ANNOTATIONS.launchDigest`, in the create itself), so a later launch
 * can tell whether it asks for the same session without the values being stored a second time: keyed
 * by the session secret, the digest tells nothing to whoever cannot already read the Session's spec,
 * not even for guessable values. The map's entries may come in any order; the order of the config
 * maps and secrets counts (a later one overrides an earlier one's keys). No env and an empty env are
 * the same.
 */
export function launchDigest(sessionSecret: string, env: EnvironmentVars | undefined): string {
  const fromMap = Object.entries(env?.fromMap ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const canonical = JSON.stringify([fromMap, env?.fromConfigMaps ?? [], env?.fromSecrets ?? []]);
  return createHmac('sha256', sessionSecret).update(`launch:${canonical}`).digest('hex');
}

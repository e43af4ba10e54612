// The launch values the agent reads, whichever way they reach the session (spec: "How launch values
// reach the IDE"): their names are the bridge's wire (SESSION_KEYS).
import { SESSION_KEYS, type SessionKey } from '../../../server/src/model/data-bridge.js';

/** Values found for the session; a key is absent when no source had a non-empty value for it. */
export type SessionValues = Partial<Record<SessionKey, string>>;

/** Keys the data-bridge strategy waits for before it stops polling early. */
export const DEFAULT_REQUIRED_KEYS: readonly SessionKey[] = ['GIT_URI', 'GIT_USER', 'GIT_MAIL', 'PLATFORM_TOKEN'];

/** Keys whose values are credentials or may carry them: never logged, redacted from any message. */
export const SECRET_KEYS: readonly SessionKey[] = ['GIT_URI', 'PLATFORM_TOKEN'];

export function isSessionKey(value: string): value is SessionKey {
  return (SESSION_KEYS as readonly string[]).includes(value);
}

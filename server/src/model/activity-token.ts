import { createHmac } from 'node:crypto';

/** Environment variable through which the operator hands a session its activity token. */
export const ACTIVITY_TOKEN_ENV = 'IDE_CLOUD_ACTIVITY_TOKEN';

/**
 * The token with which a session's IDE client reports activity (`PATCH /service/session`, header
 * `X-Activity-Token`) when there is no identity provider. Derived from the session secret, so the
 * IDE never needs the secret itself (which also keys the authentication proxy's cookies), and bound
 * to the session name, so one session's token is worth nothing for another.
 */
export function activityToken(sessionSecret: string, sessionName: string): string {
  return createHmac('sha256', sessionSecret).update(`activity:${sessionName}`).digest('hex');
}

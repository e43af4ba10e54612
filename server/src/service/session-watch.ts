import { ErrorCode } from '../model/error-codes.js';
import { isSessionFailed, isSessionReady, takenUpByOperator, type Session } from '../model/session.js';
import type { CachedResource } from './cache.js';
import { ApiError } from './errors.js';

export type SessionVerdict = { ready: true; url: string } | { ready: false; error?: ApiError };

/**
 * Read from the session's conditions (model/session.ts), never from its phase: ready when the IDE
 * serves at `status.url`; failed, with the operator's `status.error`, when the operator gave up on it.
 */
export function judgeSession(session: Session): SessionVerdict {
  const status = session.status;
  if (isSessionReady(session) && status?.url) return { ready: true, url: status.url };
  if (isSessionFailed(session)) {
    const code = status?.error?.code;
    const valid = typeof code === 'number' && code >= 400 && code <= 599;
    return {
      ready: false,
      error: new ApiError(valid ? code : ErrorCode.internal, status?.error?.reason ?? 'the session failed to start'),
    };
  }
  return { ready: false };
}

/**
 * Waits until one Session is ready, from the session cache's events (no watch of its own, no
 * polling): the cached object first, then each change of it. Rejects with 551 at the deadline, with
 * the operator's error when the session fails, and with 474 when the session is deleted (or replaced
 * by another of the same name) while waiting; a deletion the cache reports is confirmed by one GET,
 * since the cache can lag the service's own create. `onTakenUp` hears when the session shows that the
 * operator has taken it up (`takenUpByOperator`).
 */
export function waitForSessionUrl(
  sessions: CachedResource<Session>,
  initial: Session,
  deadline: number,
  onTakenUp?: () => void,
): Promise<string> {
  const first = judgeSession(initial);
  if (first.ready) return Promise.resolve(first.url);
  if (first.error) return Promise.reject(first.error);
  return sessions.waitFor<string>(initial.metadata.name, {
    uid: initial.metadata.uid,
    decide: (session) => {
      if (takenUpByOperator(session)) onTakenUp?.();
      const verdict = judgeSession(session);
      if (verdict.ready) return { value: verdict.url };
      return verdict.error ? { error: verdict.error } : undefined;
    },
    gone: () => ({ error: new ApiError(ErrorCode.unknownSession, 'the session ended before it became ready') }),
    confirmGone: true,
    deadline,
    onDeadline: () => new ApiError(ErrorCode.launchTimeout, 'the session did not become ready in time'),
  });
}

/**
 * Resolves once the Session (this uid) is gone, from the session cache's events, the cache's word
 * confirmed by one GET; rejects with 551 at the deadline. Used when a failed or stopping session must
 * make way for a new launch.
 */
export function waitForSessionGone(
  sessions: CachedResource<Session>,
  initial: Session,
  deadline: number,
): Promise<void> {
  return sessions.waitFor<void>(initial.metadata.name, {
    uid: initial.metadata.uid,
    decide: () => undefined,
    gone: () => ({ value: undefined }),
    confirmGone: true,
    deadline,
    onDeadline: () =>
      new ApiError(ErrorCode.launchTimeout, 'the previous session of this workspace did not end in time'),
  });
}

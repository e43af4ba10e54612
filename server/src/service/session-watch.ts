import * as k8s from '@kubernetes/client-node';
import { ErrorCode } from '../model/error-codes.js';
import type { Session } from '../model/session.js';
import type { CustomResourceClient } from '../kube/resources.js';
import { ApiError } from './errors.js';

export type SessionVerdict = { ready: true; url: string } | { ready: false; error?: ApiError };

/** Ready when the operator has set the URL and phase Running; failed with its error when Failed. */
export function judgeSession(session: Session): SessionVerdict {
  const status = session.status;
  if (status?.phase === 'Running' && status.url) return { ready: true, url: status.url };
  if (status?.phase === 'Failed') {
    const code = status.error?.code;
    const valid = typeof code === 'number' && code >= 400 && code <= 599;
    return {
      ready: false,
      error: new ApiError(valid ? code : ErrorCode.internal, status.error?.reason ?? 'the session failed to start'),
    };
  }
  return { ready: false };
}

/**
 * Waits until one Session is ready by watching it (a field-selected watch on that one object, from
 * the resourceVersion already seen, so no event is missed), never by polling. A watch that ends early
 * is resumed; a 410 Gone (history compacted) reads the object once and watches on from there.
 * Rejects with 551 at the deadline, with the operator's error when the session fails, and with 474
 * when the session is deleted while waiting.
 */
export function waitForSessionUrl(
  kc: k8s.KubeConfig,
  sessions: CustomResourceClient<'session'>,
  initial: Session,
  deadline: number,
  options: { watchTimeoutSeconds?: number } = {},
): Promise<string> {
  const name = initial.metadata.name;
  const first = judgeSession(initial);
  if (first.ready) return Promise.resolve(first.url);
  if (first.error) return Promise.reject(first.error);

  return new Promise<string>((resolve, reject) => {
    const watch = new k8s.Watch(kc);
    let resourceVersion = initial.metadata.resourceVersion;
    let controller: AbortController | undefined;
    let finished = false;
    let restarts = 0;

    const finish = (result: { url: string } | { error: ApiError }) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller?.abort();
      if ('url' in result) resolve(result.url);
      else reject(result.error);
    };
    const timer = setTimeout(
      () => finish({ error: new ApiError(ErrorCode.launchTimeout, 'the session did not become ready in time') }),
      Math.max(0, deadline - Date.now()),
    );

    const onObject = (session: Session) => {
      const verdict = judgeSession(session);
      if (verdict.ready) finish({ url: verdict.url });
      else if (verdict.error) finish({ error: verdict.error });
    };

    /** After a gone watch: one read, then watch on from what it saw. */
    const resync = async () => {
      const current = await sessions.find(name);
      if (!current) {
        finish({ error: new ApiError(ErrorCode.unknownSession, 'the session ended before it became ready') });
        return;
      }
      resourceVersion = current.metadata.resourceVersion;
      onObject(current);
    };

    const start = async (): Promise<void> => {
      if (finished) return;
      let gone = false;
      try {
        controller = await watch.watch(
          sessions.path,
          {
            fieldSelector: `metadata.name=${name}`,
            allowWatchBookmarks: true,
            ...(options.watchTimeoutSeconds ? { timeoutSeconds: options.watchTimeoutSeconds } : {}),
            ...(resourceVersion ? { resourceVersion } : {}),
          },
          (type: string, object: Session & { code?: number }) => {
            if (type === 'ERROR') {
              gone = true; // 410 Gone: the resourceVersion is too old
              return;
            }
            if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
            if (type === 'BOOKMARK') return;
            if (type === 'DELETED') {
              finish({ error: new ApiError(ErrorCode.unknownSession, 'the session ended before it became ready') });
              return;
            }
            onObject(object);
          },
          (error: unknown) => {
            if (finished) return;
            // A failed watch request may have missed changes: read once before watching again.
            restart(gone || Boolean(error));
          },
        );
        if (finished) controller.abort();
      } catch {
        restart(true);
      }
    };

    const restart = (needsResync: boolean) => {
      if (finished) return;
      restarts += 1;
      const delay = Math.min(1000, 50 * restarts);
      setTimeout(() => {
        void (async () => {
          try {
            if (needsResync) await resync();
          } catch {
            // the API server is unreachable for a moment: the next attempt tries again
          }
          await start();
        })();
      }, delay);
    };

    void start();
  });
}

/**
 * Resolves once the Session is gone, by watching it (from the resourceVersion seen); rejects with 551
 * at the deadline. Used when a failed or stopping session must make way for a new launch.
 */
export function waitForSessionGone(
  kc: k8s.KubeConfig,
  sessions: CustomResourceClient<'session'>,
  initial: Session,
  deadline: number,
): Promise<void> {
  const name = initial.metadata.name;
  return new Promise<void>((resolve, reject) => {
    let controller: AbortController | undefined;
    let finished = false;
    const finish = (error?: ApiError) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller?.abort();
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(
      () => finish(new ApiError(ErrorCode.launchTimeout, 'the previous session of this workspace did not end in time')),
      Math.max(0, deadline - Date.now()),
    );
    const start = async (): Promise<void> => {
      if (finished) return;
      try {
        // A read first: the watch then starts from what it saw, so the deletion cannot slip between.
        const current = await sessions.find(name);
        if (!current || current.metadata.uid !== initial.metadata.uid) return finish();
        controller = await new k8s.Watch(kc).watch(
          sessions.path,
          {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion: current.metadata.resourceVersion,
          },
          (type: string) => {
            if (type === 'DELETED') finish();
          },
          () => setTimeout(() => void start(), 100),
        );
        if (finished) controller.abort();
      } catch {
        setTimeout(() => void start(), 200);
      }
    };
    void start();
  });
}

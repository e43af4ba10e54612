import { Router } from 'express';
import { clientKey } from '../../http/client-address.js';
import { ErrorCode } from '../../model/error-codes.js';
import { sessionNameFor } from '../../model/names.js';
import type { ServiceContext } from '../context.js';
import { param } from '../context.js';
import { ApiError } from '../errors.js';
import type { ProgressMessage } from '../session-progress.js';

/** Comment line sent this often so proxies keep an idle stream open. */
export const KEEP_ALIVE_MS = 15_000;

/**
 * GET /service/session/events/{appId}/{user}/{workspaceName}: Server-Sent Events with the progress of
 * the session of the caller's own workspace (the one a launch for that workspace creates). Same auth
 * as the other session endpoints: appId (470), the user or the bearer token's user (400/401/403);
 * another user's workspace or session is 403. The workspace and session need not exist yet: the
 * stream reports them once they appear. Events: `session` (phase, conditions, URL, error),
 * `event` (a Kubernetes Event of the session), `deleted` (the session is gone). Capped: at most
 * `progressStreamsPerUser` open streams per user, `progressStreamsPerClient` per client address
 * (`clientKey`: anonymous callers choose the user) and `progressStreamsTotal` per replica (429 with
 * Retry-After); a stream ends after `progressStreamMaxSeconds`, and the browser's EventSource opens
 * a new one (`retry: 2000`).
 */
export function eventsRouter(context: ServiceContext): Router {
  const { auth, workspaces, sessions, progress, config } = context;
  const router = Router();
  router.get('/service/session/events/:appId/:user/:workspaceName', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const user = await auth.resolveUser(req, param(req.params.user));
    const workspaceName = param(req.params.workspaceName);
    await workspaces.findOwned(user, workspaceName);
    const sessionName = sessionNameFor(workspaceName);
    const existing = await sessions.find(sessionName);
    if (existing && existing.spec.user !== user) {
      throw new ApiError(ErrorCode.forbidden, 'the session belongs to another user');
    }

    const release = progress.admit(user, clientKey(req));

    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    res.write('retry: 2000\n\n');
    const controller = new AbortController();
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    const ended = setTimeout(() => res.end(), config.progressStreamMaxSeconds * 1000);
    const close = () => {
      clearInterval(keepAlive);
      clearTimeout(ended);
      controller.abort();
      release();
    };
    res.on('close', close);
    res.on('finish', close);
    progress.stream({
      sessionName,
      user,
      signal: controller.signal,
      send: (message: ProgressMessage) => {
        if (!controller.signal.aborted) res.write(`event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`);
      },
    });
  });
  return router;
}

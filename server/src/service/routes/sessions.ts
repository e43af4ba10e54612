import { Router } from 'express';
import {
  ConfigValueRequestSchema,
  SessionActivityRequestSchema,
  SessionStartRequestSchema,
  SessionStopRequestSchema,
} from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { callerGone, param, readRequest, readUserRequest } from '../context.js';

/** A user's sessions: list, start on an existing workspace (or ephemeral), stop, activity, config, performance. */
export function sessionsRouter(context: ServiceContext): Router {
  const { auth, sessions, workspaces, launcher, config } = context;
  const router = Router();

  router.get('/service/session/performance/:appId/:sessionName', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const ownedByCaller = await auth.ownerCheck(req);
    const session = await sessions.get(param(req.params.sessionName));
    ownedByCaller(session.spec.user);
    res.json(await sessions.performance(session));
  });

  router.get('/service/session/:appId/:user', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const user = await auth.resolveUser(req, param(req.params.user));
    res.json(sessions.listOf(user));
  });

  router.post('/service/session', async (req, res) => {
    const gone = callerGone(req, res);
    const { body, user } = await readUserRequest(context, req, SessionStartRequestSchema);
    const url = await launcher.launch({
      user,
      appDefinition: body.appDefinition,
      workspaceName: body.workspaceName,
      ephemeral: body.workspaceName === undefined,
      createMissingWorkspace: false,
      timeoutMinutes: body.timeout ?? config.launchTimeoutMinutes,
      env: body.env,
      callerGone: gone,
    });
    res.type('text/plain').send(url);
  });

  router.delete('/service/session', async (req, res) => {
    const { body, user } = await readUserRequest(context, req, SessionStopRequestSchema);
    const stopped = await sessions.stop(user, body.sessionName);
    // A cancelled launch's new workspace that never served goes with its session (no claim left behind).
    if (stopped) await workspaces.removeNeverServed(stopped);
    res.json(true);
  });

  router.patch('/service/session', async (req, res) => {
    const body = readRequest(context, req, SessionActivityRequestSchema);
    const mayReport = await auth.activityCheck(req);
    const session = await sessions.get(body.sessionName);
    mayReport(session);
    await sessions.recordActivity(session.metadata.name);
    res.json(true);
  });

  router.post('/service/session/:session/config', async (req, res) => {
    const body = readRequest(context, req, ConfigValueRequestSchema);
    const ownedByCaller = await auth.ownerCheck(req);
    const session = await sessions.get(param(req.params.session));
    ownedByCaller(session.spec.user);
    await sessions.setConfig(session, body.key, body.value);
    res.status(204).end();
  });
  return router;
}

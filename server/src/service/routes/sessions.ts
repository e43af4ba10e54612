import { Router } from 'express';
import {
  ConfigValueRequestSchema,
  SessionActivityRequestSchema,
  SessionStartRequestSchema,
  SessionStopRequestSchema,
} from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { param, parseBody } from '../context.js';

/** A user's sessions: list, start on an existing workspace (or ephemeral), stop, activity, config, performance. */
export function sessionsRouter({ auth, sessions, launcher, config }: ServiceContext): Router {
  const router = Router();

  router.get('/service/session/performance/:appId/:sessionName', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const caller = await auth.caller(req);
    const session = await sessions.get(param(req.params.sessionName));
    auth.requireOwner(caller, session.spec.user);
    res.json(await sessions.performance(session));
  });

  router.get('/service/session/:appId/:user', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const user = await auth.resolveUser(req, param(req.params.user));
    res.json(sessions.listOf(user));
  });

  router.post('/service/session', async (req, res) => {
    const body = parseBody(SessionStartRequestSchema, req.body);
    auth.checkAppId(body.appId);
    const user = await auth.resolveUser(req, body.user);
    const url = await launcher.launch({
      user,
      appDefinition: body.appDefinition,
      workspaceName: body.workspaceName,
      ephemeral: body.workspaceName === undefined,
      createMissingWorkspace: false,
      timeoutMinutes: body.timeout ?? config.launchTimeoutMinutes,
      env: body.env,
    });
    res.type('text/plain').send(url);
  });

  router.delete('/service/session', async (req, res) => {
    const body = parseBody(SessionStopRequestSchema, req.body);
    auth.checkAppId(body.appId);
    const user = await auth.resolveUser(req, body.user);
    res.json(await sessions.stop(user, body.sessionName));
  });

  router.patch('/service/session', async (req, res) => {
    const body = parseBody(SessionActivityRequestSchema, req.body);
    auth.checkAppId(body.appId);
    const caller = await auth.caller(req);
    const session = await sessions.get(body.sessionName);
    if (auth.identityMode) auth.requireOwner(caller, session.spec.user);
    else auth.requireActivityToken(req, session);
    await sessions.recordActivity(session.metadata.name);
    res.json(true);
  });

  router.post('/service/session/:session/config', async (req, res) => {
    const body = parseBody(ConfigValueRequestSchema, req.body);
    auth.checkAppId(body.appId);
    const caller = await auth.caller(req);
    const session = await sessions.get(param(req.params.session));
    auth.requireOwner(caller, session.spec.user);
    await sessions.setConfig(session, body.key, body.value);
    res.status(204).end();
  });
  return router;
}

import { Router } from 'express';
import { LaunchRequestSchema } from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { callerGone, readUserRequest } from '../context.js';

/** POST /service: workspace (reused or created) and session in one step; answers the URL as plain text. */
export function launchRouter(context: ServiceContext): Router {
  const { launcher, config } = context;
  const router = Router();
  router.post('/service', async (req, res) => {
    const gone = callerGone(req, res);
    const { body, user } = await readUserRequest(context, req, LaunchRequestSchema);
    const url = await launcher.launch({
      user,
      appDefinition: body.appDefinition,
      workspaceName: body.workspaceName,
      label: body.label,
      ephemeral: body.ephemeral ?? false,
      createMissingWorkspace: true,
      timeoutMinutes: body.timeout ?? config.launchTimeoutMinutes,
      env: body.env,
      callerGone: gone,
    });
    res.type('text/plain').send(url);
  });
  return router;
}

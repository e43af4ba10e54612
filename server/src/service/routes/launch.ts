import { Router } from 'express';
import { LaunchRequestSchema } from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { parseBody } from '../context.js';

/** POST /service: workspace (reused or created) and session in one step; answers the URL as plain text. */
export function launchRouter({ auth, launcher, config }: ServiceContext): Router {
  const router = Router();
  router.post('/service', async (req, res) => {
    const body = parseBody(LaunchRequestSchema, req.body);
    auth.checkAppId(body.appId);
    const user = await auth.resolveUser(req, body.user);
    const url = await launcher.launch({
      user,
      appDefinition: body.appDefinition,
      workspaceName: body.workspaceName,
      label: body.label,
      ephemeral: body.ephemeral ?? false,
      createMissingWorkspace: true,
      timeoutMinutes: body.timeout ?? config.launchTimeoutMinutes,
      env: body.env,
    });
    res.type('text/plain').send(url);
  });
  return router;
}

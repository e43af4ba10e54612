import { Router } from 'express';
import type { ServiceContext } from '../context.js';
import { param } from '../context.js';

/** GET /service/{appId}: public ping. Registered last: its pattern would shadow the others. */
export function pingRouter({ auth }: ServiceContext): Router {
  const router = Router();
  router.get('/service/:appId', (req, res) => {
    auth.checkAppId(param(req.params.appId));
    res.json(true);
  });
  return router;
}

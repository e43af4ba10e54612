import { Router } from 'express';
import type { ServiceContext } from '../context.js';
import { param } from '../context.js';
import { toAppDefinitionItem } from '../views.js';

/** GET /service/appdefinition/{appId}: what can be launched. */
export function appDefinitionsRouter({ auth, catalog }: ServiceContext): Router {
  const router = Router();
  router.get('/service/appdefinition/:appId', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    res.json(catalog.list().map(toAppDefinitionItem));
  });
  return router;
}

import { Router } from 'express';
import { AppDefinitionUpdateRequestSchema } from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { param, parseBody } from '../context.js';
import { toAdminItem, toScaling } from '../views.js';

/** Admin ping (admin group) and the admin app definition calls (X-Admin-Api-Token). */
export function adminRouter({ auth, catalog, logger }: ServiceContext): Router {
  const router = Router();

  router.get('/service/admin/appdefinition', async (req, res) => {
    auth.requireAdminToken(req);
    const reserved = catalog.reservedInstances();
    res.json(catalog.list().map((d) => toAdminItem(d, reserved.get(d.metadata.name) ?? 0)));
  });

  router.get('/service/admin/appdefinition/:appDefinitionName', async (req, res) => {
    auth.requireAdminToken(req);
    res.json(toScaling(await catalog.get(param(req.params.appDefinitionName))));
  });

  router.patch('/service/admin/appdefinition/:appDefinitionName', async (req, res) => {
    auth.requireAdminToken(req);
    const update = parseBody(AppDefinitionUpdateRequestSchema, req.body, logger);
    if (update.appId !== undefined) auth.checkAppId(update.appId);
    res.json(toScaling(await catalog.updateScaling(param(req.params.appDefinitionName), update)));
  });

  router.get('/service/admin/:appId', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    await auth.requireAdminIdentity(req);
    res.json(true);
  });
  return router;
}

import { Router } from 'express';
import { WorkspaceCreationRequestSchema, WorkspaceDeleteRequestSchema } from '../../model/requests.js';
import type { ServiceContext } from '../context.js';
import { param, readUserRequest } from '../context.js';
import { ApiError } from '../errors.js';
import { toWorkspaceItem } from '../views.js';

/** A user's workspaces: list, create, delete (which also ends the workspace's session). */
export function workspacesRouter(context: ServiceContext): Router {
  const { auth, catalog, workspaces } = context;
  const router = Router();

  router.get('/service/workspace/:appId/:user', async (req, res) => {
    auth.checkAppId(param(req.params.appId));
    const user = await auth.resolveUser(req, param(req.params.user));
    res.json(workspaces.listOf(user));
  });

  router.post('/service/workspace', async (req, res) => {
    const { body, user } = await readUserRequest(context, req, WorkspaceCreationRequestSchema);
    if (body.appDefinition !== undefined) await catalog.get(body.appDefinition);
    const created = await workspaces.create({ user, appDefinition: body.appDefinition, label: body.label });
    if (!created) throw new ApiError(409, 'a workspace of that name exists; retry');
    res.json(toWorkspaceItem(created, false));
  });

  router.delete('/service/workspace', async (req, res) => {
    const { body, user } = await readUserRequest(context, req, WorkspaceDeleteRequestSchema);
    res.json(await workspaces.delete(user, body.workspaceName));
  });
  return router;
}

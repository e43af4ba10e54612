import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Authenticator } from './auth.js';
import type { AppDefinitionCatalog } from './catalog.js';
import type { ServiceConfig } from './config.js';
import { ApiError } from './errors.js';
import type { Launcher } from './launcher.js';
import type { Logger } from './logger.js';
import type { ServiceMetrics } from './metrics.js';
import type { SessionProgress } from './session-progress.js';
import type { SessionService } from './sessions.js';
import type { WorkspaceService } from './workspaces.js';

/** The collaborators every router gets from the composition root. */
export interface ServiceContext {
  config: ServiceConfig;
  auth: Authenticator;
  catalog: AppDefinitionCatalog;
  workspaces: WorkspaceService;
  sessions: SessionService;
  launcher: Launcher;
  progress: SessionProgress;
  metrics: ServiceMetrics;
  logger: Logger;
}

/** A request model: every one names the service auth token, most the user they act for. */
type RequestModel = z.ZodType<{ appId?: string; user?: string }>;

/** The opening of a request with a body: parsed (400), appId checked (470). */
export function readRequest<S extends RequestModel>(
  { auth, logger }: Pick<ServiceContext, 'auth' | 'logger'>,
  req: Request,
  schema: S,
): z.output<S> {
  const body = parseBody(schema, req.body, logger);
  auth.checkAppId(body.appId);
  return body;
}

/** The opening of a user's request with a body: parsed, appId checked, the user it acts for resolved. */
export async function readUserRequest<S extends RequestModel>(
  context: Pick<ServiceContext, 'auth' | 'logger'>,
  req: Request,
  schema: S,
): Promise<{ body: z.output<S>; user: string }> {
  const body = readRequest(context, req, schema);
  return { body, user: await context.auth.resolveUser(req, body.user) };
}

/**
 * Parses a request body with its schema: 400 with one detail per issue. Fields the schema does not
 * know are dropped (tolerant reader); their names, never their values, are logged at debug level.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, logger?: Logger): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw ApiError.fromZod(result.error, 'request body');
  if (logger?.isLevelEnabled('debug')) {
    const ignored = droppedFields(body, result.data);
    if (ignored.length > 0) logger.debug({ ignoredFields: ignored.slice(0, 20) }, 'unknown request fields ignored');
  }
  return result.data;
}

/** The paths of the fields in `input` that parsing dropped from `output`. */
function droppedFields(input: unknown, output: unknown, prefix = ''): string[] {
  if (!isPlainObject(input) || !isPlainObject(output)) return [];
  return Object.keys(input).flatMap((key) => {
    const path = `${prefix}${key.slice(0, 64)}`;
    return key in output ? droppedFields(input[key], output[key], `${path}.`) : [path];
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A path parameter as a string (Express 5 gives strings; arrays only for wildcards, not used here). */
export function param(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join('/') : (value ?? '');
}

/**
 * Aborts when the caller's connection closes before the answer was sent (a launch its caller gave up:
 * the landing page's cancel aborts it). Made first thing in a handler, before any wait.
 */
export function callerGone(req: Request, res: Response): AbortSignal {
  const controller = new AbortController();
  if (req.socket.destroyed) controller.abort();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

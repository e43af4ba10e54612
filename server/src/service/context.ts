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

/** Parses a request body with its strict schema: 400 with one detail per issue. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw ApiError.fromZod(result.error, 'request body');
  return result.data;
}

/** A path parameter as a string (Express 5 gives strings; arrays only for wildcards, not used here). */
export function param(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join('/') : (value ?? '');
}

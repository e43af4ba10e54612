import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { ErrorCode } from '../model/error-codes.js';
import type { ServiceContext } from './context.js';
import { ApiError, describeError } from './errors.js';
import { adminRouter } from './routes/admin.js';
import { appDefinitionsRouter } from './routes/app-definitions.js';
import { docsRouter } from './routes/docs.js';
import { launchRouter } from './routes/launch.js';
import { pingRouter } from './routes/ping.js';
import { eventsRouter } from './routes/events.js';
import { sessionsRouter } from './routes/sessions.js';
import { workspacesRouter } from './routes/workspaces.js';

/** The Express app: body parsing with a size limit, request metrics and logs, routers, one error middleware. */
export function createApp(context: ServiceContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Whose X-Forwarded-For names the client of the per-client stream cap (none by default).
  app.set('trust proxy', context.config.trustProxy);
  app.use(observe(context));
  app.use(express.json({ limit: context.config.bodyLimit, type: ['application/json', 'application/*+json'] }));

  app.use(docsRouter(context));
  app.use(adminRouter(context));
  app.use(appDefinitionsRouter(context));
  app.use(workspacesRouter(context));
  app.use(eventsRouter(context));
  app.use(sessionsRouter(context));
  app.use(launchRouter(context));
  app.use(pingRouter(context)); // last: GET /service/{appId} matches any one segment

  app.use((_req, _res, next) => next(new ApiError(ErrorCode.notFound, 'no such endpoint')));
  app.use(errorMiddleware(context));
  return app;
}

/**
 * Counts and times every request by route pattern and status, and logs one line per request. The
 * raw URL is never logged: paths carry the service auth token (appId).
 */
function observe({ metrics, logger }: ServiceContext): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      const labels = { method: req.method, route, status: String(res.statusCode) };
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.requests.inc(labels);
      metrics.requestDuration.observe(labels, seconds);
      if (route !== '/q/metrics') {
        logger.info({ method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
      }
    });
    next();
  };
}

/** The one error middleware: ApiError as its body; parser errors mapped; anything else a logged 500. */
function errorMiddleware({ logger }: ServiceContext): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    const apiError = toApiError(error);
    if (apiError.code >= 500 && apiError.code < 600 && !(error instanceof ApiError)) {
      logger.error({ err: describeError(error) }, 'unexpected error');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    res.set(apiError.headers).status(apiError.code).json(apiError.body);
  };
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const parser = error as { type?: string; status?: number } | null;
  if (parser?.type === 'entity.too.large') return new ApiError(ErrorCode.payloadTooLarge, 'request body too large');
  if (parser?.type === 'entity.parse.failed') return ApiError.badRequest('request body is not valid JSON');
  if (typeof parser?.status === 'number' && parser.status >= 400 && parser.status < 500) {
    return new ApiError(parser.status, 'bad request');
  }
  return new ApiError(ErrorCode.internal, 'internal error');
}

import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { pino, type Logger, type DestinationStream } from 'pino';
import { z } from 'zod';
import { clientKey } from '../http/client-address.js';
import { NewUserSchema } from '../model/requests.js';
import { listen, type Listening } from '../http/listen.js';
import { capRefusal, OpenCounts } from '../http/open-counts.js';
import { buildClientBundle } from './bundle.js';
import type { LandingConfig } from './config.js';
import { inlineScript, renderPage } from './page.js';
import { ProviderMetadata } from './provider-metadata.js';
import { launchEnvironment, readLaunchParameters, templateFor, type LaunchParameters } from './params.js';
import { launchTarget, ServiceClient, type Forwarded } from './service-client.js';
import { KeptSignIns } from './kept-sign-in.js';
import { SignInCookie } from './sign-in-cookie.js';

export type RunningLandingPage = Listening;

export interface LandingOptions {
  /** Where the JSON logs go (default stdout); tests capture them here. */
  logDestination?: DestinationStream;
}

const Text = z.string().trim().max(4096);
/** What the page sends for a launch, progress stream or cancel; the landing page reads nothing else. */
const LaunchBodySchema = z
  .object({
    parameters: z
      .object({
        appDef: Text.optional(),
        gitUri: Text.optional(),
        gitUser: Text.optional(),
        gitMail: Text.optional(),
        platformUrl: Text.optional(),
        platformToken: Text.optional(),
        user: Text.optional(),
      })
      .strip(),
    /** Identity-provider mode: the signed-in user's e-mail, which the service checks against the token. */
    user: Text.optional(),
    template: Text.optional(),
  })
  .strip();
type LaunchBody = z.infer<typeof LaunchBodySchema>;
const SignInBodySchema = z.object({
  user: z.string().trim().min(1).pipe(NewUserSchema),
  /** The provider's refresh token of the tab's sign-in, if it issued one. */
  refreshToken: z
    .string()
    .max(4096)
    .regex(/^[\x21-\x7e]+$/)
    .optional(),
});

class LandingError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * The landing page's web server: the page (its script inline), its configuration, an HTML form POST of the
 * launch parameters, and three API calls the page makes (launch, progress, cancel) that it forwards
 * to the REST service with the service auth token added. Holds no state.
 */
export function createLandingApp(config: LandingConfig, logger: Logger, script: string): Express {
  const service = new ServiceClient(config.serviceUrl, config.serviceAuthToken);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // The page is reached through the ingress controller: its X-Forwarded-For names the browser.
  app.set('trust proxy', config.trustProxy);
  app.use(observe(logger));
  app.use((_req, res, next) => {
    res.set({
      'Referrer-Policy': 'no-referrer',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
    });
    next();
  });
  const idp = config.identityProvider;
  const metadata = idp ? new ProviderMetadata(idp.issuer) : undefined;
  void metadata?.refresh();
  const signIns =
    idp && metadata
      ? new KeptSignIns(
          // Without a secret of the installation's (the chart sets one), a key of this process: its
          // kept sign-ins end with it, and another replica's tabs sign in at the provider.
          new SignInCookie(config.cookieSecret ?? randomBytes(32).toString('base64url')),
          metadata,
          { clientId: idp.clientId, ...(idp.resource ? { resource: idp.resource } : {}) },
          service,
          logger,
        )
      : undefined;
  servePage(app, config, script, metadata);
  app.use('/api', apiRouter(config, service, signIns));
  app.use((_req, res) => {
    res.status(404).json({ code: 404, reason: 'not found' });
  });
  app.use(errorMiddleware(logger));
  return app;
}

/** The page (by GET, or by a form POST of the launch parameters), its configuration and the health check. */
function servePage(app: Express, config: LandingConfig, script: string, metadata?: ProviderMetadata): void {
  const inline = inlineScript(script);
  const policy = contentSecurityPolicy(config, inline.hash);
  const identityProvider = config.identityProvider !== undefined;
  /** What the page's script needs, in the page itself: no round trip for it on each load. */
  const pageConfig = () => ({
    apps: config.apps,
    identityProvider: config.identityProvider
      ? {
          authority: config.identityProvider.issuer,
          clientId: config.identityProvider.clientId,
          scope: config.identityProvider.scope,
          ...(config.identityProvider.resource ? { resource: config.identityProvider.resource } : {}),
        }
      : null,
  });
  const page = (req: Request, res: Response, posted?: LaunchParameters) => {
    const embedded = pageConfig();
    const providerMetadata = metadata?.current();
    res
      .status(200)
      .set({ 'Cache-Control': 'no-store', 'Content-Security-Policy': policy })
      .type('html')
      .send(
        renderPage({
          posted,
          script: inline.element,
          config:
            embedded.identityProvider && providerMetadata
              ? { ...embedded, identityProvider: { ...embedded.identityProvider, metadata: providerMetadata } }
              : embedded,
        }),
      );
  };
  app.get('/', (req, res) => page(req, res));
  // The same parameters by an HTML form POST: tokens stay out of the address bar and history entirely.
  app.post('/', express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 50 }), (req, res) => {
    const form = Object.entries((req.body ?? {}) as Record<string, unknown>).filter(
      (e): e is [string, string] => typeof e[1] === 'string',
    );
    page(req, res, readLaunchParameters(form, { identityProvider }));
  });

  app.get('/config.json', (_req, res) => {
    res.set('Cache-Control', 'no-cache').json(pageConfig());
  });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });
}

/** The page's API calls (ping, sign-in, launch, cancel, progress), forwarded to the service. */
function apiRouter(config: LandingConfig, service: ServiceClient, signIns?: KeptSignIns): express.Router {
  const api = express.Router();
  api.use(express.json({ limit: '32kb' }));
  api.use((_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });

  api.get('/ping', async (_req, res) => {
    const healthy = await service.ping();
    res.status(healthy ? 200 : 503).json(healthy);
  });

  if (signIns) signInRoutes(api, signIns);

  api.post('/launch', async (req, res) => {
    const target = resolveTarget(req, config, signIns);
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const template = templateFor(target.app, target.body.template);
    const answer = await service.launch(
      {
        appDefinition: target.app.name,
        user: target.user,
        workspaceName: target.workspaceName,
        label: target.app.label,
        params: target.params,
        env: launchEnvironment(target.params, template),
      },
      target.authorization,
      controller.signal,
    );
    if (answer.status === 200) {
      res.json({ url: answer.body.trim(), workspaceName: target.workspaceName, sessionName: target.sessionName });
      return;
    }
    send(res, answer);
  });

  api.post('/cancel', async (req, res) => {
    const target = resolveTarget(req, config, signIns);
    send(res, await service.stop(target.sessionName, target.user, target.authorization));
  });

  api.post('/progress', progressHandler(config, service, signIns));
  return api;
}

/**
 * The sign-in kept for the browser's other tabs (sign-in-cookie.ts): asked for by a new tab before it
 * would go to the provider, kept by a tab that has just signed in, dropped when the service refused it.
 * A POST carries the token as its Authorization header: a page of another origin cannot send one
 * without a preflight, which this page never allows.
 */
function signInRoutes(api: express.Router, signIns: KeptSignIns): void {
  api.get('/sign-in', async (req, res) => {
    const kept = await signIns.refreshed(req, res);
    if (!kept) {
      res.status(401).json({ code: 401, reason: 'sign in first' });
      return;
    }
    res.json({ user: kept.user });
  });
  api.post('/sign-in', async (req, res) => {
    const token = /^Bearer (\S+)$/.exec(req.get('authorization') ?? '')?.[1];
    const body = SignInBodySchema.safeParse(req.body);
    if (!token || !body.success) {
      const refreshTokenWrong = body.error?.issues.some((issue) => issue.path[0] === 'refreshToken');
      throw new LandingError(
        400,
        refreshTokenWrong
          ? 'refreshToken must be printable ASCII without spaces, at most 4096 characters'
          : 'a bearer token and the user are required',
      );
    }
    const outcome = await signIns.keep(req, res, { token, ...body.data });
    if (outcome === 'unkeepable') throw new LandingError(400, 'this token cannot be kept');
    if (outcome === 'refused') throw new LandingError(401, 'the service does not take this token for this user');
    if (outcome === 'unavailable') throw new LandingError(503, 'the service did not answer; try again');
    res.status(204).end();
  });
  api.delete('/sign-in', (req, res) => {
    signIns.drop(req, res);
    res.status(204).end();
  });
}

/**
 * The target of a request: its app (checked against this page's list), user and workspace, and the
 * bearer to send on: the request's own, else the sign-in its cookie keeps.
 */
function resolveTarget(req: Request, config: LandingConfig, signIns?: KeptSignIns) {
  const identityProvider = config.identityProvider !== undefined;
  const parsed = LaunchBodySchema.safeParse(req.body);
  if (!parsed.success) throw new LandingError(400, 'invalid request body');
  const body: LaunchBody = parsed.data;
  const params = readLaunchParameters(Object.entries(body.parameters) as [string, string][], { identityProvider });
  const app = config.apps.find((a) => a.name === params.appDef);
  if (!app) throw new LandingError(473, 'unknown app definition');
  const own = req.get('authorization');
  const kept = signIns && !own ? signIns.current(req) : undefined;
  const authorization = kept ? `Bearer ${kept.token}` : own;
  const user = identityProvider ? (kept?.user ?? body.user) : params.user;
  if (!user)
    throw new LandingError(identityProvider ? 401 : 400, identityProvider ? 'sign in first' : 'user is required');
  return { body, params, app, user, authorization, ...launchTarget(app.name, user, params.gitUri) };
}

/**
 * The service's progress stream of the launch's workspace, passed through as it comes. Capped per
 * browser and in total by the page itself: in anonymous mode the browser names the user, and the
 * service sees every stream of the page as coming from one client.
 */
function progressHandler(config: LandingConfig, service: ServiceClient, signIns?: KeptSignIns) {
  const streams = new OpenCounts();
  return async (req: Request, res: Response): Promise<void> => {
    const target = resolveTarget(req, config, signIns);
    const admitted = admitStream(streams, config, req);
    if ('refused' in admitted) {
      res.status(429).set('Retry-After', '10').json({ code: 429, reason: admitted.refused });
      return;
    }
    const controller = new AbortController();
    res.on('close', () => {
      admitted.release();
      controller.abort();
    });
    const upstream = await service.events(target.user, target.workspaceName, target.authorization, controller.signal);
    if (!upstream.ok || !upstream.body) {
      send(res, { status: upstream.status, contentType: 'application/json', body: await upstream.text() });
      return;
    }
    res.status(200).set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();
    const stream = Readable.fromWeb(upstream.body as import('node:stream/web').ReadableStream<Uint8Array>);
    stream.on('error', () => res.end());
    stream.pipe(res);
  };
}

/** One more progress stream of the request's browser, within the page's caps per client and in total. */
function admitStream(streams: OpenCounts, config: LandingConfig, req: Request) {
  return streams.admit([
    {
      key: `client:${clientKey(req)}`,
      max: config.progressStreamsPerClient,
      refusal: capRefusal.perClient(config.progressStreamsPerClient),
    },
    { key: 'total', max: config.progressStreamsTotal, refusal: 'too many progress streams on this page; retry later' },
  ]);
}

/** Passes a service answer on; an error without a JSON body gets one of the DESIGN.md shape. */
function send(res: Response, answer: Forwarded): void {
  if (answer.contentType.includes('json')) {
    res.status(answer.status).type('application/json').send(answer.body);
    return;
  }
  res
    .status(answer.status)
    .json({ code: answer.status, reason: answer.status < 400 ? 'ok' : 'the service refused the request' });
}

/** The page's policy: its one inline script, by `scriptHash`, and nothing else runs. */
function contentSecurityPolicy(config: LandingConfig, scriptHash: string): string {
  const issuer = config.identityProvider ? new URL(config.identityProvider.issuer).origin : '';
  return [
    "default-src 'self'",
    `script-src ${scriptHash}`,
    "style-src 'self' 'unsafe-inline'",
    `connect-src 'self'${issuer ? ` ${issuer}` : ''}`,
    "img-src 'self' data:",
    `form-action 'self'${issuer ? ` ${issuer}` : ''}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** One log line per request: method, route and status. Never the query string or a body (secrets). */
function observe(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = Date.now();
    res.on('finish', () => {
      logger.info({ method: req.method, path: req.path, status: res.statusCode, ms: Date.now() - started }, 'request');
    });
    next();
  };
}

function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, _next) => {
    let code = 500;
    let reason = 'internal error';
    if (error instanceof LandingError) {
      code = error.code;
      reason = error.reason;
    } else if ((error as { type?: string })?.type === 'entity.parse.failed') {
      code = 400;
      reason = 'request body is not valid JSON';
    } else if ((error as { type?: string })?.type === 'entity.too.large') {
      code = 413;
      reason = 'request body too large';
    } else if (error instanceof TypeError || (error as { name?: string })?.name === 'AbortError') {
      // fetch failed: the service cannot be reached
      code = 503;
      reason = 'the service cannot be reached';
      logger.warn({ errorName: (error as Error).name }, 'service unreachable');
    } else {
      logger.error({ errorName: (error as Error)?.name }, 'unexpected error');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(code).json({ code, reason });
  };
}

/** Starts the landing page; resolves once it listens. */
export async function startLandingPage(
  config: LandingConfig,
  options: LandingOptions = {},
): Promise<RunningLandingPage> {
  const logger = pino({ level: config.logLevel, base: { component: 'landing-page' } }, options.logDestination);
  const script = await buildClientBundle();
  const app = createLandingApp(config, logger, script);
  const { url, port, close } = await listen(app, config.port, config.host);
  logger.info(
    { port, mode: config.identityProvider ? 'identity-provider' : 'anonymous', apps: config.apps.map((a) => a.name) },
    'landing page listening',
  );
  return { url, port, close };
}

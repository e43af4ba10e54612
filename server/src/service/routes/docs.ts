import { Router } from 'express';
import type { ServiceContext } from '../context.js';
import { buildOpenApi, renderOpenApiPage } from '../openapi.js';

/** Machine-facing extras: the OpenAPI description, its human page, Prometheus metrics, health. */
export function docsRouter({ config, metrics }: ServiceContext): Router {
  const router = Router();
  const document = buildOpenApi({ issuer: config.identityProvider?.issuer });
  const page = renderOpenApiPage(document);
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  router.get(['/openapi', '/q/openapi-ui'], (_req, res) => {
    res.type('text/html').send(page);
  });
  router.get('/q/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  router.get('/q/health', (_req, res) => {
    res.json({ status: 'UP' });
  });
  return router;
}

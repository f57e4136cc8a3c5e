import type { ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import { serveHttp } from '../http/serve.js';

/**
 * The separate worker's only HTTP: /healthz (for the container's HEALTHCHECK) and /metrics (its
 * jobs and model calls happen in this process, so Prometheus must scrape it too). No auth, no API.
 */
export function serveWorkerEndpoints(options: { host: string; port: number; metrics: Metrics; logger: Logger }): ServerType {
  const { host, port, metrics, logger } = options;
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/metrics', async (c) => c.body(await metrics.render(), 200, { 'content-type': metrics.contentType }));
  app.notFound((c) => c.json({ status: 404, detail: 'the worker serves only /healthz and /metrics' }, 404));
  const server = serveHttp({ fetch: app.fetch, port, hostname: host }, (info) => {
    logger.info({ port: info.port }, 'worker metrics listening');
  });
  // A busy port must not stop the worker from working jobs: say so and carry on without HTTP.
  server.on('error', (error: NodeJS.ErrnoException) => {
    logger.error({ port, code: error.code }, 'worker metrics endpoint could not listen');
  });
  return server;
}

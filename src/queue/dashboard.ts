import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { SCOPES } from '../auth/principal.js';
import { defineRoute, X_REQUEST_ID, type Router } from '../http/routing.js';
import type { AppEnv } from '../http/env.js';
import { DomainError } from '../shared/errors.js';
import type { BullJobQueue } from './bullmq.js';
import type { JobQueue } from './types.js';

export const DASHBOARD_PATH = '/admin/queues';

export const queueDashboard = defineRoute({
  method: 'get',
  path: DASHBOARD_PATH,
  operationId: 'queueDashboard',
  tags: ['operations'],
  summary: 'Queue dashboard (operators)',
  description: `The extraction queue's dashboard (bull-board, read-only), which shows every tenant's jobs,
so a tenant's \`engram:admin\` is not enough. Served when \`REDIS_URL\` is configured; without
Redis the route answers 404, as do the board's own unknown paths (problem+json). The page
loads its scripts, styles and JSON from paths under \`/admin/queues/\`, which need the same
token: put the dashboard behind a proxy that adds the operator's \`Authorization\` header.`,
  scope: SCOPES.operator,
  responses: {
    200: { description: 'The dashboard page.', headers: X_REQUEST_ID, content: { 'text/html': { schema: z.string(), example: '<!DOCTYPE html>…' } } },
    404: { $ref: '#/components/responses/NotFound' },
  },
});

export const dashboardRoutes = [queueDashboard];

/**
 * GET /admin/queues: bull-board's dashboard over the BullMQ extraction queue, read-only (jobs are
 * driven by their database rows; retrying or removing them from Redis by hand would bypass that).
 * The app's /admin/* middleware has already required a token with `engram:operator` (the board
 * shows every tenant's jobs, so a tenant's `engram:admin` is not enough). Without Redis there is
 * no BullMQ queue to show, and the route answers 404.
 *
 * The board is a Hono app of its own, reached by dispatch rather than mounted, so its internal
 * routes (static files, its JSON API) stay out of the app's documented route table. It is built on
 * the first request: bull-board is ~15 MiB of modules that most processes never use.
 */
export function registerQueueDashboard(app: Router, queue: JobQueue): void {
  if (queue.kind !== 'bullmq') {
    app.openapi(queueDashboard, () => {
      throw new DomainError('not_found', 'the queue dashboard is served only with REDIS_URL (BullMQ)');
    });
    return;
  }
  const bull = queue as BullJobQueue;
  let board: Promise<Hono> | undefined;
  const loadBoard = () =>
    (board ??= import('./board.js').then(
      ({ createQueueBoard }) => createQueueBoard(bull, DASHBOARD_PATH),
      (error: unknown) => {
        board = undefined; // a failed load is retried by the next request
        throw error;
      },
    ));
  app.openapi(queueDashboard, async (c) => serveBoard(await loadBoard(), c));
  app.all(`${DASHBOARD_PATH}/*`, async (c) => {
    c.set('routeTemplate', `${DASHBOARD_PATH}/*`);
    // Read-only whatever the board's own checks: it may look, never pause, retry, clean or add.
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') throw new DomainError('forbidden', 'the queue dashboard is read-only');
    return serveBoard(await loadBoard(), c);
  });
}

/**
 * The board's answer, with its pages' one remote stylesheet (web fonts) left out: no network
 * needed. Its own errors (plain-text 404s for unknown paths or assets, JSON ones from its API)
 * become the service's problem+json, without their text, which may quote Redis or a stack.
 */
async function serveBoard(board: Hono, c: Context<AppEnv>): Promise<Response> {
  const response = await board.fetch(c.req.raw);
  if (response.status >= 400) {
    await response.body?.cancel();
    if (response.status === 404) throw new DomainError('not_found', 'no such page or queue in the queue dashboard');
    if (response.status < 500) throw new DomainError('validation_failed', 'the queue dashboard refused the request');
    throw new DomainError('unavailable', 'the queue dashboard could not answer; retry later', { retryAfterSeconds: 5 });
  }
  if (!(response.headers.get('content-type') ?? '').startsWith('text/html')) return response;
  const html = (await response.text()).replace(/<link\b[^>]*\bhref="https?:\/\/[^"]*"[^>]*>/gi, '');
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(html, { status: response.status, headers });
}

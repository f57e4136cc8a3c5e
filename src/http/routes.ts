import { z } from 'zod';
import { defineRoute, jsonResponse, X_REQUEST_ID } from './routing.js';

/** The routes of operations: no token, no tenant. Handlers live in app.ts and docs.ts. */

/** Objects with more than the fields named, said the way generators read (not `{}`). */
const FREE_FORM = { additionalProperties: true } as const;

const text = (mediaType: string, description: string, example: string) => ({
  description,
  headers: X_REQUEST_ID,
  content: { [mediaType]: { schema: z.string(), example } },
});

export const health = defineRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'health',
  tags: ['operations'],
  summary: 'Liveness',
  description: `No authentication. 200 whenever the process serves HTTP; it checks no dependency.`,
  public: true,
  responses: { 200: jsonResponse(z.strictObject({ status: z.literal('ok') }).meta({ id: 'Health' }), 'Alive.', { status: 'ok' }) },
});

export const readiness = z
  .strictObject({
    status: z.enum(['ready', 'degraded', 'unavailable']).meta({
      description: '`ready`: every check passed; `degraded`: only a non-critical one (Redis) failed; `unavailable`: the database is unreachable.',
    }),
    checks: z
      .record(z.string(), z.enum(['ok', 'degraded', 'unavailable']))
      .meta({ description: 'Each dependency checked (`database`, and `redis` when configured) and its state.' }),
  })
  .meta({ id: 'Readiness' });

export const ready = defineRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'ready',
  tags: ['operations'],
  summary: 'Readiness',
  description: `No authentication. Checks the database (and Redis, when configured) and answers within
1 second (\`READINESS_TIMEOUT_MS\` per check). 503 only while the database is unreachable.
Redis being down keeps the instance ready (the outbox keeps accepting jobs): 200 with
\`status: degraded\` and \`checks.redis: degraded\`.`,
  public: true,
  responses: {
    200: jsonResponse(readiness, 'Ready; `degraded` when a dependency it can serve without (Redis) is down.', { status: 'ready', checks: { database: 'ok', redis: 'ok' } }),
    503: jsonResponse(readiness, 'The database is unreachable.', { status: 'unavailable', checks: { database: 'unavailable' } }),
  },
});

export const openApiJson = defineRoute({
  method: 'get',
  path: '/openapi.json',
  operationId: 'openApiDocument',
  tags: ['operations'],
  summary: 'This document',
  description: `No authentication. The OpenAPI 3.1 document, generated from the routes' own schemas (the repository's \`openapi.yaml\` is the same document).`,
  public: true,
  responses: {
    200: jsonResponse(
      z
        .looseObject({
          openapi: z.string(),
          info: z.looseObject({ title: z.string(), version: z.string() }).meta(FREE_FORM),
          paths: z.record(z.string(), z.unknown()).meta(FREE_FORM),
        })
        .meta({ id: 'OpenApiDocument', ...FREE_FORM }),
      'The OpenAPI document.',
      { openapi: '3.1.0', info: { title: 'Engram', version: '1.0.0' }, paths: {} },
    ),
  },
});

export const apiDocs = defineRoute({
  method: 'get',
  path: '/docs',
  operationId: 'apiDocs',
  tags: ['operations'],
  summary: 'Interactive API documentation',
  description: `No authentication. Swagger UI rendering this document (from \`/openapi.json\`). Every file
the page loads comes from this service (\`/docs/assets/…\`), so it renders without any other
network access; its URLs are relative, so it also works behind a path-prefix proxy.`,
  public: true,
  responses: { 200: text('text/html', 'The documentation page.', '<!DOCTYPE html>…') },
});

export const apiDocsAsset = defineRoute({
  method: 'get',
  path: '/docs/assets/{file}',
  operationId: 'apiDocsAsset',
  tags: ['operations'],
  summary: 'A file of the documentation page',
  description: `No authentication. The scripts, stylesheet and icons \`/docs\` loads (Swagger UI's
distribution files, served from the installed package). Only the files the page names
exist; any other name is a 404.`,
  public: true,
  request: {
    params: z.object({
      file: z.string().meta({
        description: 'One of `swagger-ui.css`, `swagger-ui-bundle.js`, `init.js`, `favicon-32x32.png`, `favicon-16x16.png`.',
        example: 'init.js',
      }),
    }),
  },
  responses: {
    200: {
      description: 'The file.',
      headers: X_REQUEST_ID,
      content: {
        'text/css': { schema: z.string(), example: '.swagger-ui{…}' },
        'text/javascript': { schema: z.string(), example: "window.addEventListener('load', …)" },
        'image/png': { schema: z.string().meta({ contentMediaType: 'image/png' }), example: '(binary)' },
      },
    },
  },
});

export const metricsRoute = defineRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  tags: ['operations'],
  summary: 'Prometheus metrics',
  description: `No authentication (restrict it at the network edge). Metrics in the Prometheus text
exposition format, all named \`engram_*\`:

- \`engram_http_requests_total\` and \`engram_http_request_duration_seconds\` by \`method\`,
  \`route\` (the route template, e.g. \`/memories/{id}\`; \`unmatched\` when no route matched)
  and \`status\`;
- \`engram_recall_duration_seconds\` and \`engram_recall_candidates\` (candidates scored);
- \`engram_extraction_jobs_total\` and \`engram_extraction_job_duration_seconds\` by \`outcome\`
  (\`succeeded\`, \`failed\`, \`retry\`, \`skipped\`, \`crashed\`), and
  \`engram_extraction_queue_wait_seconds\` (acceptance to first start);
- \`engram_queue_depth\` (jobs waiting in Redis, read at scrape time; absent, not 0, while
  the queue cannot be read);
- \`engram_queue_jobs\` by \`kind\` and \`state\` (\`queued\`, \`running\`, \`failed\`): the outbox,
  counted in the database at scrape time (absent while it cannot be read);
- \`engram_queue_enqueue_failures_total\`, \`engram_queue_lease_expiries_total\` and
  \`engram_queue_sweeper_requeues_total\` by \`kind\`: jobs the queue could not take at
  acceptance, jobs taken over from a worker that stopped renewing its lease, and due jobs
  the sweeper sent again;
- \`engram_memories_expired_total\`: memories past their \`expires_at\` erased with their
  history, by the retention sweep or by a write for their user (which erases them first);
- \`engram_model_calls_total\` and \`engram_model_call_duration_seconds\` by \`kind\` (\`chat\`,
  \`embedding\`), \`model\` and \`outcome\` (\`ok\`, \`invalid_output\`, \`timeout\`,
  \`rate_limited\`, \`unavailable\`, \`rejected\`, \`aborted\`, \`error\`), and
  \`engram_model_tokens_total\` by \`kind\`, \`model\` and \`type\` (\`prompt\`, \`completion\`);
- \`engram_webhook_deliveries\` by \`status\` (\`pending\`, \`succeeded\`, \`failed\`): the webhook
  outbox, counted at scrape time; \`engram_webhook_attempts_total\` by \`outcome\` (\`succeeded\`,
  \`retry\`, \`refused\`, \`failed\`, \`gone\`) and \`engram_webhook_delivery_seconds\` (outbox to 2xx),
  from the processes that deliver;
- process and Node.js metrics (\`engram_process_*\`, \`engram_nodejs_*\`).

Label values never include a tenant, a user or a raw path. Each process reports its own
work: scrape every API and worker process.`,
  public: true,
  responses: { 200: text('text/plain', 'The metrics.', 'engram_http_requests_total{method="GET",route="/memories",status="200"} 3') },
});

export const operationsRoutes = [health, ready, openApiJson, apiDocs, apiDocsAsset, metricsRoute];

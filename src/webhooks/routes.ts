import { SCOPES } from '../auth/principal.js';
import { defineRoute, jsonBody, jsonResponse, X_REQUEST_ID, type Router } from '../http/routing.js';
import type { Services } from '../shared/context.js';
import {
  createWebhook,
  createWebhookBody,
  createdWebhookSchema,
  deleteWebhook,
  deliveryPage,
  listDeliveries,
  listDeliveriesQuery,
  listWebhooks,
  webhookIdParams,
  webhookList,
  type WebhookSettings,
} from './service.js';

const HOOK_ID = '5d0c7f1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f';
const EXAMPLE = {
  id: HOOK_ID,
  url: 'https://crm.example.com/engram',
  events: ['memory.created' as const, 'user.erased' as const],
  description: 'CRM sync',
  enabled: true,
  created_at: '2026-01-31T12:00:00.000Z',
};

export const createWebhookRoute = defineRoute({
  method: 'post',
  path: '/webhooks',
  operationId: 'createWebhook',
  tags: ['webhooks'],
  summary: 'Register a webhook endpoint',
  description: `Each event of the tenant that the endpoint asked for is POSTed to it as \`{type, timestamp, data}\`,
signed per the Standard Webhooks specification (\`webhook-id\`, \`webhook-timestamp\`,
\`webhook-signature\`) with the \`secret\` of this answer, which is never shown again.
\`data\` carries the ids (\`memory_id\` or \`job_id\`, \`user_id\`, \`agent_id\`, \`run_id\`) and, for memory
events, the \`Memory\`; \`memory.superseded\` adds \`superseded_by\`; job events add \`status\` and
\`result\` or \`error\`; \`user.erased\` carries only the \`erasure_id\` and \`counts\`. After an erasure the
user's other events keep only ids (\`redacted: true\`).

Events are written to an outbox in the same transaction as the change, and delivered at least
once, in commit order per endpoint, one at a time; a 2xx ends a delivery, anything else (or no
answer within 10 s) is retried with exponential backoff and jitter for at least 24 hours; a
\`410 Gone\` disables the endpoint. Receivers should dedupe on \`webhook-id\`.

**URL rules**, checked now and again at every delivery: \`https://\` only; an address that is
link-local (169.254.0.0/16, fe80::/10 and their IPv4-mapped forms: cloud metadata) is always
refused; a private or loopback address, or \`http://\`, only when the service runs with
\`WEBHOOK_ALLOW_PRIVATE=true\`. A refused URL is a 400.`,
  scope: SCOPES.admin,
  request: { body: jsonBody(createWebhookBody, { url: 'https://crm.example.com/engram', events: ['memory.created', 'user.erased'], description: 'CRM sync' }) },
  responses: { 201: jsonResponse(createdWebhookSchema, 'The endpoint, with its signing secret.', { ...EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }) },
});

export const listWebhooksRoute = defineRoute({
  method: 'get',
  path: '/webhooks',
  operationId: 'listWebhooks',
  tags: ['webhooks'],
  summary: "The tenant's webhook endpoints",
  description: 'Secrets are never shown again.',
  scope: SCOPES.admin,
  responses: { 200: jsonResponse(webhookList, 'The endpoints, oldest first.', { webhooks: [EXAMPLE] }) },
});

export const deleteWebhookRoute = defineRoute({
  method: 'delete',
  path: '/webhooks/{id}',
  operationId: 'deleteWebhook',
  tags: ['webhooks'],
  summary: 'Remove a webhook endpoint',
  description: 'Its pending deliveries are dropped with it. Another tenant\'s endpoint is a 404.',
  scope: SCOPES.admin,
  request: { params: webhookIdParams },
  responses: { 204: { description: 'Removed.', headers: X_REQUEST_ID } },
});

export const listDeliveriesRoute = defineRoute({
  method: 'get',
  path: '/webhooks/{id}/deliveries',
  operationId: 'listWebhookDeliveries',
  tags: ['webhooks'],
  summary: "An endpoint's deliveries, newest first",
  description: `Every event queued for the endpoint, with its state: \`pending\` (waiting or being retried),
\`succeeded\` (a 2xx came back) or \`failed\` (retries ran out, or the endpoint was disabled by a
410). Keyset pages: pass \`next_cursor\` back as \`cursor\`.`,
  scope: SCOPES.admin,
  request: { params: webhookIdParams, query: listDeliveriesQuery },
  responses: {
    200: jsonResponse(deliveryPage, 'One page of deliveries.', {
      deliveries: [
        {
          id: '9b8c7d6e-5f4a-4b3c-8d2e-1f0a9b8c7d6e',
          event: 'memory.created',
          status: 'succeeded',
          attempts: 1,
          last_status_code: 204,
          created_at: '2026-01-31T12:00:00.000Z',
          delivered_at: '2026-01-31T12:00:00.041Z',
        },
      ],
      next_cursor: null,
    }),
  },
});

export const webhookRoutes = [createWebhookRoute, listWebhooksRoute, deleteWebhookRoute, listDeliveriesRoute];

export function registerWebhookRoutes(app: Router, services: Services, settings: WebhookSettings): void {
  const ctx = (principal: Parameters<typeof listWebhooks>[0]['principal']) => ({ services, principal });
  app.openapi(createWebhookRoute, async (c) => c.json(await createWebhook(ctx(c.get('principal')), settings, c.req.valid('json')), 201));
  app.openapi(listWebhooksRoute, async (c) => c.json(await listWebhooks(ctx(c.get('principal'))), 200));
  app.openapi(deleteWebhookRoute, async (c) => {
    await deleteWebhook(ctx(c.get('principal')), c.req.valid('param').id);
    return c.body(null, 204);
  });
  app.openapi(listDeliveriesRoute, async (c) => c.json(await listDeliveries(ctx(c.get('principal')), c.req.valid('param').id, c.req.valid('query')), 200));
}

import type { Hono } from 'hono';
import { SCOPES } from '../auth/principal.js';
import type { AppEnv } from '../http/env.js';
import { readJson, readQuery } from '../http/input.js';
import { scope } from '../http/middleware.js';
import { idParam } from '../memories/routes.js';
import type { Services } from '../shared/context.js';
import { createWebhook, createWebhookBody, deleteWebhook, listDeliveries, listDeliveriesQuery, listWebhooks, type WebhookSettings } from './service.js';

export function registerWebhookRoutes(app: Hono<AppEnv>, services: Services, settings: WebhookSettings): void {
  const ctx = (principal: AppEnv['Variables']['principal']) => ({ services, principal });

  app.post('/webhooks', scope(SCOPES.admin), async (c) => {
    const body = await readJson(c, createWebhookBody);
    return c.json(await createWebhook(ctx(c.get('principal')), settings, body), 201);
  });

  app.get('/webhooks', scope(SCOPES.admin), async (c) => c.json(await listWebhooks(ctx(c.get('principal')))));

  app.delete('/webhooks/:id', scope(SCOPES.admin), async (c) => {
    await deleteWebhook(ctx(c.get('principal')), idParam(c.req.param('id'), 'webhook'));
    return c.body(null, 204);
  });

  app.get('/webhooks/:id/deliveries', scope(SCOPES.admin), async (c) => {
    const id = idParam(c.req.param('id'), 'webhook');
    const query = readQuery(c, listDeliveriesQuery);
    return c.json(await listDeliveries(ctx(c.get('principal')), id, query));
  });
}

import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { SCOPES, requireScope } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import { DomainError, notFound, validationFailed } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import * as repo from './repository.js';
import { encryptSecret, generateSigningSecret } from './secrets.js';
import { WebhookUrlError, checkWebhookTarget } from './url-rules.js';

export interface WebhookSettings {
  /** Encrypts signing secrets at rest. */
  key: Buffer;
  allowPrivate: boolean;
}

const EVENT_LIST = repo.WEBHOOK_EVENTS.map((e) => `\`${e}\``).join(', ');

export const createWebhookBody = z
  .strictObject({
    url: z
      .string()
      .trim()
      .min(1)
      .max(2048)
      .meta({ description: 'Where to POST events: `https://` (see the URL rules above).', example: 'https://crm.example.com/engram' }),
    events: z
      .array(z.enum(repo.WEBHOOK_EVENTS))
      .min(1)
      .max(repo.WEBHOOK_EVENTS.length)
      .refine((events) => new Set(events).size === events.length, 'must not repeat an event')
      .meta({ description: `The events to receive: any of ${EVENT_LIST}.` }),
    description: z.string().trim().max(500).nullable().optional().meta({ description: 'A note for people.' }),
  })
  .meta({ id: 'CreateWebhook' });
export type CreateWebhookBody = z.output<typeof createWebhookBody>;

export const webhookIdParams = z.object({
  id: z
    .uuid({ error: 'webhook not found' })
    .transform((id) => id.toLowerCase())
    .meta({ description: "The webhook's id. A value that is not a UUID answers 404.", example: '5d0c7f1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f' }),
});

export const listDeliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).meta({ description: 'Page size.', example: 20 }),
  cursor: z.string().min(1).max(64).optional().meta({ description: 'The `next_cursor` of the previous page.' }),
});
export type ListDeliveriesQuery = z.output<typeof listDeliveriesQuery>;

const webhookFields = {
  id: z.uuid(),
  url: z.string(),
  events: z.array(z.enum(repo.WEBHOOK_EVENTS)),
  description: z.string().nullable(),
  enabled: z.boolean().meta({ description: 'False once the receiver answered 410 Gone: nothing more is sent to it.' }),
  created_at: z.string().meta({ format: 'date-time' }),
};
export const webhookSchema = z.strictObject(webhookFields).meta({ id: 'Webhook' });
export const createdWebhookSchema = z
  .strictObject({ ...webhookFields, secret: z.string().meta({ description: 'The `whsec_…` signing secret, shown only in this answer.' }) })
  .meta({ id: 'CreatedWebhook' });
export const webhookList = z.strictObject({ webhooks: z.array(webhookSchema) }).meta({ id: 'WebhookList' });
export const deliverySchema = z
  .strictObject({
    id: z.uuid().meta({ description: 'Also the `webhook-id` header of every attempt of this delivery.' }),
    event: z.enum(repo.WEBHOOK_EVENTS),
    status: z.enum(['pending', 'succeeded', 'failed']),
    attempts: z.number().int().min(0),
    last_status_code: z.number().int().nullable().meta({ description: "The receiver's last HTTP status; null when it did not answer." }),
    created_at: z.string().meta({ format: 'date-time' }),
    delivered_at: z.string().meta({ format: 'date-time' }).nullable(),
  })
  .meta({ id: 'WebhookDelivery' });
export const deliveryPage = z.strictObject({ deliveries: z.array(deliverySchema), next_cursor: z.string().nullable() }).meta({ id: 'WebhookDeliveryPage' });

export type WebhookDto = z.output<typeof webhookSchema>;

const toDto = (row: repo.EndpointRow): WebhookDto => ({
  id: row.id,
  url: row.url,
  events: row.events as repo.WebhookEvent[],
  description: row.description,
  enabled: row.enabled,
  created_at: row.created_at.toISOString(),
});

/** POST /webhooks: the URL is checked against the rules now (and again at each delivery). */
export async function createWebhook(ctx: RequestContext, settings: WebhookSettings, body: CreateWebhookBody): Promise<WebhookDto & { secret: string }> {
  requireScope(ctx.principal, SCOPES.admin);
  const { tenantId } = ctx.principal;
  try {
    await checkWebhookTarget(body.url, settings.allowPrivate);
  } catch (error) {
    if (error instanceof WebhookUrlError) throw validationFailed(`the webhook url ${error.message}`, [{ path: '/url', message: error.message }]);
    throw error;
  }
  const id = randomUUID();
  const secret = generateSigningSecret();
  const row = await withTenant(ctx.services.database, tenantId, (tx) =>
    repo.insertEndpoint(tx, {
      tenantId,
      id,
      url: body.url,
      events: body.events,
      description: body.description ?? null,
      secretCiphertext: encryptSecret(settings.key, `${tenantId}\u001f${id}`, secret),
    }),
  );
  return { ...toDto(row), secret };
}

export async function listWebhooks(ctx: RequestContext): Promise<{ webhooks: WebhookDto[] }> {
  requireScope(ctx.principal, SCOPES.admin);
  const { tenantId } = ctx.principal;
  const rows = await withTenant(ctx.services.database, tenantId, (tx) => repo.listEndpoints(tx, tenantId), { readOnly: true });
  return { webhooks: rows.map(toDto) };
}

export async function deleteWebhook(ctx: RequestContext, id: string): Promise<void> {
  requireScope(ctx.principal, SCOPES.admin);
  const { tenantId } = ctx.principal;
  const deleted = await withTenant(ctx.services.database, tenantId, (tx) => repo.deleteEndpoint(tx, tenantId, id));
  if (!deleted) throw notFound('webhook');
}

const encodeCursor = (seq: string) => Buffer.from(`d${seq}`).toString('base64url');
function decodeCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^d(\d{1,18})$/.exec(text);
  if (!match) throw new DomainError('validation_failed', 'the cursor is not valid', { errors: [{ path: '/cursor', message: 'not a cursor this service issued' }] });
  return match[1]!;
}

export async function listDeliveries(ctx: RequestContext, endpointId: string, query: ListDeliveriesQuery) {
  requireScope(ctx.principal, SCOPES.admin);
  const { tenantId } = ctx.principal;
  const before = query.cursor ? decodeCursor(query.cursor) : undefined;
  const rows = await withTenant(
    ctx.services.database,
    tenantId,
    async (tx) => {
      if (!(await repo.endpointExists(tx, tenantId, endpointId))) throw notFound('webhook');
      return repo.listDeliveries(tx, tenantId, endpointId, query.limit + 1, before);
    },
    { readOnly: true },
  );
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    deliveries: page.map((d) => ({
      id: d.id,
      event: d.event as repo.WebhookEvent,
      status: d.status,
      attempts: d.attempts,
      last_status_code: d.last_status_code,
      created_at: d.created_at.toISOString(),
      delivered_at: d.delivered_at ? d.delivered_at.toISOString() : null,
    })),
    next_cursor: rows.length > query.limit && last ? encodeCursor(last.seq) : null,
  };
}

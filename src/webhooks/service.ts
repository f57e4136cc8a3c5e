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

export const createWebhookBody = z.strictObject({
  url: z.string().trim().min(1).max(2048),
  events: z
    .array(z.enum(repo.WEBHOOK_EVENTS))
    .min(1)
    .max(repo.WEBHOOK_EVENTS.length)
    .refine((events) => new Set(events).size === events.length, 'must not repeat an event'),
  description: z.string().trim().max(500).nullable().optional(),
});
export type CreateWebhookBody = z.output<typeof createWebhookBody>;

export const listDeliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(64).optional(),
});
export type ListDeliveriesQuery = z.output<typeof listDeliveriesQuery>;

export interface WebhookDto {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  created_at: string;
}

const toDto = (row: repo.EndpointRow): WebhookDto => ({
  id: row.id,
  url: row.url,
  events: row.events,
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
      event: d.event,
      status: d.status,
      attempts: d.attempts,
      last_status_code: d.last_status_code,
      created_at: d.created_at.toISOString(),
      delivered_at: d.delivered_at ? d.delivered_at.toISOString() : null,
    })),
    next_cursor: rows.length > query.limit && last ? encodeCursor(last.seq) : null,
  };
}

import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/client.js';

/** Events a webhook may subscribe to; the outbox triggers (migration 0008) write exactly these. */
export const WEBHOOK_EVENTS = [
  'job.succeeded',
  'job.failed',
  'memory.created',
  'memory.updated',
  'memory.superseded',
  'memory.deleted',
  'user.erased',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRow {
  id: string;
  seq: string;
  event: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  created_at: Date;
  delivered_at: Date | null;
}

const ENDPOINT_COLUMNS = sql`id, url, events, description, enabled, disabled_reason, created_at`;

const asDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));
const endpoint = (row: EndpointRow): EndpointRow => ({ ...row, created_at: asDate(row.created_at) });

export async function insertEndpoint(
  tx: Db,
  row: { tenantId: string; id: string; url: string; events: string[]; description: string | null; secretCiphertext: string },
): Promise<EndpointRow> {
  const [inserted] = await query<EndpointRow>(
    tx,
    sql`insert into webhook_endpoints (tenant_id, id, url, events, description, secret_ciphertext)
        values (${row.tenantId}, ${row.id}, ${row.url}, ${`{${row.events.join(',')}}`}::text[], ${row.description}, ${row.secretCiphertext})
        returning ${ENDPOINT_COLUMNS}`,
  );
  return endpoint(inserted!);
}

export async function listEndpoints(tx: Db, tenantId: string): Promise<EndpointRow[]> {
  const rows = await query<EndpointRow>(tx, sql`select ${ENDPOINT_COLUMNS} from webhook_endpoints where tenant_id = ${tenantId} order by created_at, id`);
  return rows.map(endpoint);
}

export async function endpointExists(tx: Db, tenantId: string, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(tx, sql`select id from webhook_endpoints where tenant_id = ${tenantId} and id = ${id}`);
  return rows.length > 0;
}

/** Deletes the endpoint and, by cascade, its deliveries. */
export async function deleteEndpoint(tx: Db, tenantId: string, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(tx, sql`delete from webhook_endpoints where tenant_id = ${tenantId} and id = ${id} returning id`);
  return rows.length > 0;
}

/** Newest first (by outbox order); `beforeSeq` continues a page. */
export async function listDeliveries(tx: Db, tenantId: string, endpointId: string, limit: number, beforeSeq: string | undefined): Promise<DeliveryRow[]> {
  const rows = await query<DeliveryRow>(
    tx,
    sql`select id, seq::text as seq, event, status, attempts, last_status_code, created_at, delivered_at
        from webhook_deliveries
        where tenant_id = ${tenantId} and endpoint_id = ${endpointId}
          ${beforeSeq === undefined ? sql`` : sql`and seq < ${beforeSeq}::bigint`}
        order by webhook_deliveries.seq desc -- the column, not the text alias: "9" sorts after "33"
        limit ${limit}`,
  );
  return rows.map((r) => ({ ...r, created_at: asDate(r.created_at), delivered_at: r.delivered_at ? asDate(r.delivered_at) : null }));
}

/** Leases due deliveries across tenants (one per endpoint, its oldest pending); keys only. */
export async function claimDeliveries(tx: Db, leaseMs: number, limit: number): Promise<Array<{ tenantId: string; id: string; attempts: number }>> {
  const rows = await query<{ tenant_id: string; id: string; attempts: number }>(
    tx,
    sql`select tenant_id, id, attempts from engram_claim_webhook_deliveries(${leaseMs}::integer, ${limit}::integer)`,
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id, attempts: Number(r.attempts) }));
}

export interface DeliveryWork {
  id: string;
  endpoint_id: string;
  url: string;
  secret_ciphertext: string;
  payload: unknown;
  event: string;
  created_at: Date;
}

/** A leased delivery with its endpoint, while it is still pending and this attempt's. */
export async function loadDelivery(tx: Db, tenantId: string, id: string, attempts: number): Promise<DeliveryWork | undefined> {
  const [row] = await query<DeliveryWork>(
    tx,
    sql`select d.id, d.endpoint_id, e.url, e.secret_ciphertext, d.payload, d.event, d.created_at
        from webhook_deliveries d join webhook_endpoints e on e.tenant_id = d.tenant_id and e.id = d.endpoint_id
        where d.tenant_id = ${tenantId} and d.id = ${id} and d.status = 'pending' and d.attempts = ${attempts} and e.enabled`,
  );
  return row ? { ...row, created_at: asDate(row.created_at) } : undefined;
}

export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  /** succeeded; or pending with a retry after `retryInMs`; or failed for good. */
  outcome: { status: 'succeeded' } | { status: 'pending'; retryInMs: number } | { status: 'failed' };
}

/** Records an attempt's end, only if the delivery is still this attempt's lease. */
export async function recordAttempt(tx: Db, tenantId: string, id: string, attempts: number, result: AttemptResult): Promise<void> {
  const { outcome } = result;
  await tx.execute(sql`
    update webhook_deliveries set
      status = ${outcome.status},
      last_status_code = ${result.statusCode},
      last_error = ${result.error},
      locked_until = null,
      next_attempt_at = ${outcome.status === 'pending' ? sql`now() + make_interval(secs => ${outcome.retryInMs / 1000})` : sql`next_attempt_at`},
      delivered_at = ${outcome.status === 'succeeded' ? sql`now()` : sql`delivered_at`}
    where tenant_id = ${tenantId} and id = ${id} and status = 'pending' and attempts = ${attempts}`);
}

/** A 410 Gone: the receiver asked for no more; its pending deliveries stay listed as failed. */
export async function disableEndpoint(tx: Db, tenantId: string, endpointId: string, reason: string): Promise<void> {
  await tx.execute(sql`update webhook_endpoints set enabled = false, disabled_reason = ${reason} where tenant_id = ${tenantId} and id = ${endpointId}`);
  await tx.execute(
    sql`update webhook_deliveries set status = 'failed', locked_until = null where tenant_id = ${tenantId} and endpoint_id = ${endpointId} and status = 'pending'`,
  );
}

/**
 * A user's erasure: the memory events it caused itself are dropped (user.erased stands for
 * them), and every other event about the user, delivered or not, keeps only ids: no content.
 */
export async function scrubUserEvents(tx: Db, tenantId: string, userId: string): Promise<void> {
  await tx.execute(
    sql`delete from webhook_deliveries where tenant_id = ${tenantId} and user_id = ${userId} and txid = txid_current() and event like 'memory.%'`,
  );
  await tx.execute(sql`
    update webhook_deliveries
    set user_id = null,
        payload = jsonb_build_object('type', payload->'type', 'timestamp', payload->'timestamp',
          'data', jsonb_strip_nulls(jsonb_build_object('memory_id', payload->'data'->'memory_id', 'job_id', payload->'data'->'job_id', 'redacted', true)))
    where tenant_id = ${tenantId} and user_id = ${userId}`);
}

/** Deliveries by status across tenants, for /metrics. */
export async function countDeliveries(tx: Db): Promise<Record<DeliveryStatus, number>> {
  const rows = await query<{ status: DeliveryStatus; n: string | number }>(tx, sql`select status, n from engram_webhook_delivery_counts()`);
  const counts: Record<DeliveryStatus, number> = { pending: 0, succeeded: 0, failed: 0 };
  for (const row of rows) counts[row.status] = Number(row.n);
  return counts;
}

import { sql, type SQL } from 'drizzle-orm';
import { query, type Db, type Database } from '../db/client.js';
import { withAppRole } from '../db/tenant.js';
import type { PeriodicTask } from '../queue/types.js';
import type { Settings } from '../settings/schemas.js';

const DAY_MS = 86_400_000;

/** An explicit expiry of one memory: a time, a number of days from now, or none given. */
export interface ExpiryRequest {
  expires_at?: string | null | undefined;
  ttl_days?: number | undefined;
}

/**
 * When a memory expires: its own `expires_at` (null: never) or `ttl_days`, else its category's
 * days, else the tenant's default; null keeps it.
 */
export function expiryFor(retention: Settings['retention'], category: string | null, now: Date, own: ExpiryRequest = {}): Date | null {
  if (own.expires_at !== undefined) return own.expires_at === null ? null : new Date(own.expires_at);
  if (own.ttl_days !== undefined) return new Date(now.getTime() + own.ttl_days * DAY_MS);
  const days = (category !== null ? retention.by_category[category] : undefined) ?? retention.default_ttl_days;
  return days === null || days === undefined ? null : new Date(now.getTime() + days * DAY_MS);
}

export function isExpired(row: { expiresAt: Date | null }, now: Date): boolean {
  return row.expiresAt !== null && row.expiresAt.getTime() <= now.getTime();
}

/**
 * The common table expressions that erase one user's expired memories and their history in one
 * statement (`expired` holds the erased ids): an expired row must not hold the unique slot of a
 * fact being stored again, nor be shown to the resolver as a candidate. A statement that reads
 * memories after them in the same statement still sees the erased rows (one snapshot), so it must
 * leave expired rows out itself.
 */
export function expiredOfUserErasure(tenantId: string, userId: string, now: Date): SQL {
  return sql`expired as (
    delete from memories
    where tenant_id = ${tenantId} and user_id = ${userId} and expires_at is not null and expires_at <= ${now.toISOString()}::timestamptz
    returning id
  ), expired_history as (
    delete from memory_events where tenant_id = ${tenantId} and memory_id in (select id from expired)
  )`;
}

/** Erases one user's expired memories and their history, inside the caller's transaction (which holds the user's lock). */
export async function eraseExpiredOfUser(tx: Db, tenantId: string, userId: string, now: Date): Promise<number> {
  const [row] = await query<{ n: number | string }>(tx, sql`with ${expiredOfUserErasure(tenantId, userId, now)} select count(*)::int as n from expired`);
  return Number(row?.n ?? 0);
}

/** Rows one sweep statement erases, and statements per run: bounded work per tick. */
export const EXPIRY_SWEEP_BATCH = 500;
const EXPIRY_SWEEP_BATCHES_PER_RUN = 20;
/** Expired memories are erased within the hour whatever RETENTION_SWEEP_INTERVAL_MS says. */
const MAX_EXPIRY_SWEEP_INTERVAL_MS = 3_600_000 - 60_000;

/** One bounded batch across tenants (SECURITY DEFINER function of the owner; keys never leave the database). */
export async function eraseExpiredBatch(tx: Db, now: Date, limit: number): Promise<number> {
  const [row] = await query<{ n: number }>(tx, sql`select engram_erase_expired_memories(${now.toISOString()}::timestamptz, ${limit}) as n`);
  return Number(row?.n ?? 0);
}

/**
 * The memory expiry sweep, scheduled beside the transcript and idempotency sweeps on every process
 * that works jobs (the separate worker and the inline worker of `npm start`). Safe in several
 * processes at once: each batch skips rows another holds.
 */
export function memoryExpirySweep(deps: { database: Database; intervalMs: number; clock?: () => Date; onErased?: (count: number) => void }): PeriodicTask {
  return {
    name: 'memory-expiry',
    intervalMs: Math.min(deps.intervalMs, MAX_EXPIRY_SWEEP_INTERVAL_MS),
    async run() {
      let total = 0;
      for (let i = 0; i < EXPIRY_SWEEP_BATCHES_PER_RUN; i++) {
        const now = deps.clock?.() ?? new Date();
        const n = await withAppRole(deps.database, (tx) => eraseExpiredBatch(tx, now, EXPIRY_SWEEP_BATCH));
        total += n;
        if (n > 0) deps.onErased?.(n);
        if (n < EXPIRY_SWEEP_BATCH) break;
      }
      return total;
    },
  };
}

import { and, eq, inArray, isNotNull, lte, sql } from 'drizzle-orm';
import { query, type Db, type Database } from '../db/client.js';
import { memories, memoryEvents } from '../db/schema.js';
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
 * Erases one user's expired memories and their history at once, inside the caller's transaction
 * (which holds the user's lock): an expired row must not hold the unique slot of a fact being
 * stored again, nor be shown to the resolver as a candidate.
 */
export async function eraseExpiredOfUser(tx: Db, tenantId: string, userId: string, now: Date): Promise<number> {
  const expired = await tx
    .select({ id: memories.id })
    .from(memories)
    .where(and(eq(memories.tenantId, tenantId), eq(memories.userId, userId), isNotNull(memories.expiresAt), lte(memories.expiresAt, now)));
  if (expired.length === 0) return 0;
  const ids = expired.map((r) => r.id);
  await tx.delete(memoryEvents).where(and(eq(memoryEvents.tenantId, tenantId), inArray(memoryEvents.memoryId, ids)));
  await tx.delete(memories).where(and(eq(memories.tenantId, tenantId), inArray(memories.id, ids)));
  return ids.length;
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

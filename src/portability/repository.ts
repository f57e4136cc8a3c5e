import { and, desc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { query, type Db } from '../db/client.js';
import { memories } from '../db/schema.js';
import { memoryColumns } from '../memories/repository.js';
import type { MemoryFields } from '../memories/schemas.js';

export interface ExportPage {
  tenantId: string;
  userId: string;
  /** The last row of the previous page: its occurred_at exactly as stored (text, microseconds) and id. */
  after: { at: string; id: string } | undefined;
  limit: number;
  includeSuperseded: boolean;
  now: Date;
}

/**
 * One page of a user's memories, newest occurred_at first, keyset on (occurred_at, id) along
 * memories_user_occurred_idx: each page is an index range, never a sort of the user's rows. The
 * key is compared as stored (microseconds), not as a Date (milliseconds), so no row repeats.
 */
export async function exportPage(tx: Db, page: ExportPage): Promise<Array<MemoryFields & { cursorAt: string }>> {
  const { after } = page;
  return tx
    .select({ ...memoryColumns, cursorAt: sql<string>`${memories.occurredAt}::text` })
    .from(memories)
    .where(
      and(
        eq(memories.tenantId, page.tenantId),
        eq(memories.userId, page.userId),
        page.includeSuperseded ? undefined : and(isNull(memories.validTo), or(isNull(memories.expiresAt), gt(memories.expiresAt, page.now))),
        after ? sql`(${memories.occurredAt}, ${memories.id}) < (${after.at}::timestamptz, ${after.id}::uuid)` : undefined,
      ),
    )
    .orderBy(desc(memories.occurredAt), desc(memories.id))
    .limit(page.limit);
}

/**
 * Which of these (content hash, valid_to) keys the user holds already: a current memory with the
 * hash for a current line (valid_to null), a row with the hash and the same valid_to otherwise.
 */
export async function existingKeys(tx: Db, tenantId: string, userId: string, hashes: string[]): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const rows = await query<{ content_hash: string; valid_to: string | null }>(
    tx,
    sql`select content_hash, to_char(valid_to at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as valid_to
        from memories where tenant_id = ${tenantId} and user_id = ${userId}
        and content_hash in (${sql.join(hashes.map((h) => sql`${h}`), sql`, `)})`,
  );
  return new Set(rows.map((r) => importKey(r.content_hash, r.valid_to)));
}

export const importKey = (hash: string, validTo: string | null): string => `${hash}\u001f${validTo ?? ''}`;

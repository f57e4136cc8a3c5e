import { sql } from 'drizzle-orm';
import { query, type Db } from '../db/client.js';

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
 * One page of a user's export lines, newest occurred_at first, keyset on (occurred_at, id) along
 * memories_user_occurred_idx: each page is an index range, never a sort of the user's rows. The
 * key is compared as stored (microseconds, as text), so no row repeats. PostgreSQL writes each
 * line's JSON itself (the Memory of engram_memory_json, with its history when asked): the service
 * only passes text on, so an export of any size makes little garbage.
 */
export async function exportPage(tx: Db, page: ExportPage & { withHistory: boolean }): Promise<Array<{ cursor_at: string; id: string; line: string }>> {
  const { after } = page;
  const history = page.withHistory
    ? sql`|| jsonb_build_object('events', (
          select coalesce(jsonb_agg(jsonb_build_object('event', e.event, 'old_content', e.old_content, 'new_content', e.new_content,
                   'job_id', e.job_id, 'actor', e.actor, 'created_at', engram_iso(e.created_at)) order by e.created_at, e.id), '[]'::jsonb)
          from memory_events e where e.tenant_id = m.tenant_id and e.memory_id = m.id))`
    : sql``;
  return query(
    tx,
    sql`select m.occurred_at::text as cursor_at, m.id, (engram_memory_json(m) ${history})::text as line
        from memories m
        where m.tenant_id = ${page.tenantId} and m.user_id = ${page.userId}
          ${page.includeSuperseded ? sql`` : sql`and m.valid_to is null and (m.expires_at is null or m.expires_at > ${page.now.toISOString()}::timestamptz)`}
          ${after ? sql`and (m.occurred_at, m.id) < (${after.at}::timestamptz, ${after.id}::uuid)` : sql``}
        order by m.occurred_at desc, m.id desc
        limit ${page.limit}`,
  );
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

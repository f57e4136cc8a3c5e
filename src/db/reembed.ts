import { sql } from 'drizzle-orm';
import { describeEmbedder, type EmbedderSpec } from '../llm/embedders.js';
import type { Embedder } from '../llm/types.js';
import { query, type Database } from './client.js';
import { readStoredEmbedding, sameSpec, writeEmbedderRecord } from './embedder-record.js';
import { withTenant } from './tenant.js';
import { vectorText } from './vector-text.js';

export interface ReembedProgress {
  done: number;
  total: number;
}

export interface ReembedOptions {
  /** Rows per transaction (and per call to the embedder). */
  batchSize?: number;
  onProgress?: (progress: ReembedProgress) => void;
  /** Told once what the run does, before the first batch. */
  onStart?: (message: string) => void;
}

export type ReembedOutcome = { kind: 'unchanged' } | { kind: 'recorded' } | { kind: 're-embedded'; rows: number };

/**
 * Moves every stored vector to `target` (the embedder `embedder` implements), resumably: the rows
 * are taken in key order (tenant, id), and each batch's new vectors and the position after it are
 * committed in one transaction, so a run killed at any point leaves every row either done (before
 * the position) or untouched, and the next run goes on from the position. Only when the last row
 * is done does the record name the new embedder. Run it with the service stopped: rows written
 * meanwhile by the old embedder could land behind the position.
 */
export async function reembedDatabase(database: Database, embedder: Embedder, target: EmbedderSpec, options: ReembedOptions = {}): Promise<ReembedOutcome> {
  if (embedder.dimensions !== target.dimensions) throw new RangeError(`the embedder has ${embedder.dimensions} dimensions, the target ${target.dimensions}`);
  const batchSize = options.batchSize ?? 64;
  const stored = await readStoredEmbedding(database.db);
  const record = stored.record;
  if (stored.storedDimensions === undefined) {
    // Nothing to re-embed: the database simply takes the new embedder.
    if (record && sameSpec(record, target) && !record.target) return { kind: 'unchanged' };
    await writeEmbedderRecord(database.db, target);
    return { kind: 'recorded' };
  }
  if (record && !record.target && sameSpec(record, target)) return { kind: 'unchanged' };

  let resumeAfter = record?.target && sameSpec(record.target, target) ? record.resumeAfter : undefined;
  // A new run (or one towards another target than the unfinished one) starts from the first row;
  // the record keeps naming the old embedder until the end, so an interrupted run refuses start-up.
  if (!record?.target || !sameSpec(record.target, target)) {
    const from = record ?? { kind: 'lexical', model: 'unknown', dimensions: stored.storedDimensions };
    await database.db.execute(sql`
      insert into engram_embedder (id, kind, model, dimensions, target_kind, target_model, target_dimensions)
      values (1, ${from.kind}, ${from.model}, ${from.dimensions}, ${target.kind}, ${target.model}, ${target.dimensions})
      on conflict (id) do update set target_kind = excluded.target_kind, target_model = excluded.target_model,
        target_dimensions = excluded.target_dimensions, resume_tenant = null, resume_id = null, updated_at = now()`);
    resumeAfter = undefined;
  }
  const remaining = await countAfter(database, resumeAfter);
  const total = (await countAfter(database, undefined));
  options.onStart?.(
    `re-embedding ${total} memories with ${describeEmbedder(target)}${resumeAfter ? `, resuming with ${remaining} left` : ''}`,
  );
  let done = total - remaining;
  let rows = 0;
  for (;;) {
    const keys = await query<{ tenant_id: string; id: string }>(
      database.db,
      sql`select tenant_id, id::text as id from engram_memory_keys(${resumeAfter?.tenantId ?? null}, ${resumeAfter?.id ?? null}::uuid, ${batchSize})`,
    );
    if (keys.length === 0) break;
    // A batch may span tenants; each tenant's rows are written under its own RLS-bound transaction.
    for (const group of groupByTenant(keys)) {
      await withTenant(database, group.tenantId, async (tx) => {
        const rowsOfGroup = await query<{ id: string; content: string }>(
          tx,
          sql`select id::text as id, content from memories where tenant_id = ${group.tenantId} and id in (${sql.join(group.ids.map((id) => sql`${id}::uuid`), sql`, `)})`,
        );
        const vectors = await embedder.embed(rowsOfGroup.map((r) => r.content));
        for (let i = 0; i < rowsOfGroup.length; i++) {
          await tx.execute(sql`update memories set embedding = ${vectorText(vectors[i]!)}::vector where tenant_id = ${group.tenantId} and id = ${rowsOfGroup[i]!.id}::uuid`);
        }
        const last = group.ids[group.ids.length - 1]!;
        await tx.execute(sql`update engram_embedder set resume_tenant = ${group.tenantId}, resume_id = ${last}::uuid, updated_at = now() where id = 1`);
      });
      resumeAfter = { tenantId: group.tenantId, id: group.ids[group.ids.length - 1]! };
      done += group.ids.length;
      rows += group.ids.length;
      options.onProgress?.({ done, total });
    }
  }
  await writeEmbedderRecord(database.db, target);
  return { kind: 're-embedded', rows };
}

function groupByTenant(keys: ReadonlyArray<{ tenant_id: string; id: string }>): Array<{ tenantId: string; ids: string[] }> {
  const groups: Array<{ tenantId: string; ids: string[] }> = [];
  for (const key of keys) {
    const last = groups[groups.length - 1];
    if (last && last.tenantId === key.tenant_id) last.ids.push(key.id);
    else groups.push({ tenantId: key.tenant_id, ids: [key.id] });
  }
  return groups;
}

async function countAfter(database: Database, after: { tenantId: string; id: string } | undefined): Promise<number> {
  const [row] = await query<{ n: number | string }>(
    database.db,
    sql`select engram_memory_count(${after?.tenantId ?? null}, ${after?.id ?? null}::uuid) as n`,
  );
  return Number(row?.n ?? 0);
}

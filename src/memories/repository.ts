import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { queryText, rowsOf, type Db } from '../db/client.js';
import { vectorText } from '../db/vector-text.js';
import { erasures, memories, memoryEvents, type MemoryMetadata } from '../db/schema.js';
import type { MemoryFields } from './schemas.js';
import { expiredOfUserErasure } from '../governance/retention.js';

/** Every column a client may see; the embedding and search vector stay in the database. */
export const memoryColumns = {
  id: memories.id,
  userId: memories.userId,
  agentId: memories.agentId,
  runId: memories.runId,
  content: memories.content,
  importance: memories.importance,
  category: memories.category,
  metadata: memories.metadata,
  occurredAt: memories.occurredAt,
  createdAt: memories.createdAt,
  updatedAt: memories.updatedAt,
  validTo: memories.validTo,
  expiresAt: memories.expiresAt,
};

export interface NewMemoryRow {
  id?: string;
  tenantId: string;
  userId: string;
  agentId: string | null;
  runId: string | null;
  content: string;
  contentHash: string;
  embedding: number[];
  importance: number;
  category: string | null;
  metadata: MemoryMetadata;
  occurredAt: Date;
  expiresAt: Date | null;
  createdAt: Date;
  sourceJobId?: string | null;
  source?: { messageIndexes?: number[] } | null;
  /** Set when the row is stored already superseded (a later row of the same batch repeats it). */
  validTo?: Date | null;
  supersededBy?: string | null;
}

export type MemoryEventType = 'ADD' | 'UPDATE' | 'SUPERSEDE' | 'DELETE';

export interface NewMemoryEvent {
  tenantId: string;
  memoryId: string;
  userId: string;
  event: MemoryEventType;
  oldContent: string | null;
  newContent: string | null;
  jobId: string | null;
  actor: string;
  createdAt?: Date;
}

/**
 * Inserts rows, skipping any whose normalised content is already a current memory of the user
 * (the partial unique index decides, so concurrent writers cannot duplicate a fact).
 */
export async function insertMemoriesSkippingDuplicates(tx: Db, rows: NewMemoryRow[]): Promise<Array<MemoryFields & { contentHash: string }>> {
  if (rows.length === 0) return [];
  return tx
    .insert(memories)
    .values(rows.map((row) => ({ ...row, updatedAt: row.createdAt, sourceJobId: row.sourceJobId ?? null, source: row.source ?? null })))
    .onConflictDoNothing({
      target: [memories.tenantId, memories.userId, memories.contentHash],
      where: isNull(memories.validTo),
    })
    .returning({ ...memoryColumns, contentHash: memories.contentHash });
}

/** memoryColumns as SQL, for the statements sent as text. */
const MEMORY_COLUMNS_SQL =
  'id, user_id, agent_id, run_id, content, importance, category, metadata, occurred_at, created_at, updated_at, valid_to, expires_at';

/**
 * A multi-row insert as fixed text: one `(…)` per row, each placeholder wrapped by its column's
 * template (`$` stands for the placeholder, e.g. `$::uuid`), then `tail`. Built once per row count
 * (up to 128): drizzle's insert builder was most of an add's query-building CPU.
 */
function rowInserter(head: string, columns: readonly string[], tail = ''): (count: number) => string {
  const built = new Map<number, string>();
  return (count) => {
    let text = built.get(count);
    if (text === undefined) {
      const rows = Array.from({ length: count }, (_, r) => `(${columns.map((column, c) => column.replace('$', `$${r * columns.length + c + 1}`)).join(', ')})`);
      text = `${head} values ${rows.join(', ')}${tail}`;
      if (count <= 128) built.set(count, text);
    }
    return text;
  };
}

const memoryInsertText = rowInserter(
  'insert into memories (tenant_id, id, user_id, agent_id, run_id, content, content_hash, embedding, importance, category, metadata, ' +
    'occurred_at, expires_at, created_at, updated_at, source_job_id, source, valid_to, superseded_by)',
  ['$', 'coalesce($::uuid, gen_random_uuid())', '$', '$', '$', '$', '$', '$::vector', '$::smallint', '$', '$::jsonb',
    '$::timestamptz', '$::timestamptz', '$::timestamptz', '$::timestamptz', '$::uuid', '$::jsonb', '$::timestamptz', '$::uuid'],
  ` returning ${MEMORY_COLUMNS_SQL}, content_hash`,
);

const isoOrNull = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** Inserts rows as given; the caller holds the user's lock and has superseded identical ones. */
export async function insertMemories(tx: Db, rows: NewMemoryRow[]): Promise<Array<MemoryFields & { contentHash: string }>> {
  if (rows.length === 0) return [];
  const parameters = rows.flatMap((row) => [
    row.tenantId,
    row.id ?? null,
    row.userId,
    row.agentId,
    row.runId,
    row.content,
    row.contentHash,
    vectorText(row.embedding),
    row.importance,
    row.category,
    JSON.stringify(row.metadata),
    row.occurredAt.toISOString(),
    isoOrNull(row.expiresAt),
    row.createdAt.toISOString(),
    row.createdAt.toISOString(),
    row.sourceJobId ?? null,
    row.source ? JSON.stringify(row.source) : null,
    isoOrNull(row.validTo),
    row.supersededBy ?? null,
  ]);
  const inserted = await queryText<RawMemoryRow & { content_hash: string }>(tx, memoryInsertText(rows.length), parameters);
  return inserted.map((r) => ({ ...memoryFromRow(r), contentHash: r.content_hash }));
}

export async function findCurrentByHashes(
  tx: Db,
  tenantId: string,
  userId: string,
  hashes: string[],
): Promise<Array<MemoryFields & { contentHash: string }>> {
  if (hashes.length === 0) return [];
  return tx
    .select({ ...memoryColumns, contentHash: memories.contentHash })
    .from(memories)
    .where(and(eq(memories.tenantId, tenantId), eq(memories.userId, userId), isNull(memories.validTo), inArray(memories.contentHash, hashes)));
}

/** A memory's columns as either driver returns them to a statement sent as text (queryText). */
export interface RawMemoryRow {
  id: string;
  user_id: string;
  agent_id: string | null;
  run_id: string | null;
  content: string;
  importance: number | string;
  category: string | null;
  metadata: Record<string, unknown> | string;
  occurred_at: Date | string;
  created_at: Date | string;
  updated_at: Date | string;
  valid_to: Date | string | null;
  expires_at: Date | string | null;
}

const toDate = (v: Date | string) => (v instanceof Date ? v : new Date(v));

/** The row as drizzle's select would have mapped it. */
export function memoryFromRow(r: RawMemoryRow): MemoryFields {
  return {
    id: r.id,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
    content: r.content,
    importance: Number(r.importance),
    category: r.category,
    metadata: typeof r.metadata === 'string' ? (JSON.parse(r.metadata) as Record<string, unknown>) : r.metadata,
    occurredAt: toDate(r.occurred_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
    validTo: r.valid_to === null ? null : toDate(r.valid_to),
    expiresAt: r.expires_at === null ? null : toDate(r.expires_at),
  };
}

const FIND_MEMORY = `select ${MEMORY_COLUMNS_SQL} from memories where tenant_id = $1 and id = $2 limit 1`;
const FIND_USERS_MEMORY = `select ${MEMORY_COLUMNS_SQL} from memories where tenant_id = $1 and id = $2 and user_id = $3 limit 1`;

const currentColumns = { ...memoryColumns, contentHash: memories.contentHash };
const currentColumnList = sql.join(
  Object.values(currentColumns).map((column) => sql`m.${sql.identifier(column.name)}`),
  sql`, `,
);

/**
 * The user's expired memories erased (with their history) and the current memories holding any of
 * `hashes`, in one statement: a write's whole look before it stores, one round trip. Expired rows
 * are left out of the answer (the statement's snapshot still holds them).
 */
export async function eraseExpiredAndFindCurrent(
  tx: Db,
  tenantId: string,
  userId: string,
  hashes: string[],
  now: Date,
): Promise<{ expiredErased: number; current: Array<MemoryFields & { contentHash: string }> }> {
  const matching = hashes.length > 0 ? sql`m.content_hash in (${sql.join(hashes.map((h) => sql`${h}`), sql`, `)})` : sql`false`;
  const rows = rowsOf<Record<string, unknown> & { expired_erased: number | string; id: string | null }>(
    await tx.execute(sql`
      with ${expiredOfUserErasure(tenantId, userId, now)}
      select (select count(*) from expired)::int as expired_erased, ${currentColumnList}
      from (select 1) as one
      left join memories m on m.tenant_id = ${tenantId} and m.user_id = ${userId} and m.valid_to is null and ${matching}
        and (m.expires_at is null or m.expires_at > ${now.toISOString()}::timestamptz)
    `),
  );
  const current = rows
    .filter((row) => row.id !== null)
    .map((row) => {
      const fields: Record<string, unknown> = {};
      for (const [key, column] of Object.entries(currentColumns)) {
        const value = row[column.name];
        fields[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
      }
      return fields as MemoryFields & { contentHash: string };
    });
  return { expiredErased: Number(rows[0]?.expired_erased ?? 0), current };
}

/** One memory by id; with `userId`, only if it is that user's. */
export async function findMemory(tx: Db, tenantId: string, id: string, userId?: string): Promise<MemoryFields | undefined> {
  const rows =
    userId === undefined
      ? await queryText<RawMemoryRow>(tx, FIND_MEMORY, [tenantId, id])
      : await queryText<RawMemoryRow>(tx, FIND_USERS_MEMORY, [tenantId, id, userId]);
  return rows[0] && memoryFromRow(rows[0]);
}

export interface ListPage {
  tenantId: string;
  userId: string;
  limit: number;
  after?: { createdAt: Date; id: string } | undefined;
  includeSuperseded: boolean;
  now: Date;
}

/** The list statement's text for each combination of its optional conditions (four, built once). */
const listTexts = new Map<string, string>();
function listText(includeSuperseded: boolean, after: boolean): string {
  const key = `${includeSuperseded}/${after}`;
  let text = listTexts.get(key);
  if (text === undefined) {
    // $1 tenant, $2 user, $3 now, $4 limit, then $5 created_at and $6 id of the page's last.
    const conditions = ['tenant_id = $1', 'user_id = $2'];
    // Superseded memories are history, listed only when asked for; expired ones are gone at once.
    if (!includeSuperseded) conditions.push('valid_to is null');
    conditions.push('(expires_at is null or expires_at > $3::timestamptz)');
    if (after) conditions.push('(created_at < $5::timestamptz or (created_at = $5::timestamptz and id > $6::uuid))');
    text = `select ${MEMORY_COLUMNS_SQL} from memories where ${conditions.join(' and ')} order by created_at desc, id asc limit $4::int`;
    listTexts.set(key, text);
  }
  return text;
}

/** Newest created_at first, then id ascending; keyset pagination, so pages never skip or repeat. */
export async function listMemories(tx: Db, page: ListPage): Promise<MemoryFields[]> {
  const after = page.after;
  const parameters: unknown[] = [page.tenantId, page.userId, page.now.toISOString(), page.limit];
  if (after) parameters.push(after.createdAt.toISOString(), after.id);
  const rows = await queryText<RawMemoryRow>(tx, listText(page.includeSuperseded, after !== undefined), parameters);
  return rows.map(memoryFromRow);
}

export interface MemoryChanges {
  content?: string;
  contentHash?: string;
  embedding?: number[];
  importance?: number;
  category?: string | null;
  metadata?: MemoryMetadata;
  expiresAt?: Date | null;
}

export async function updateMemory(tx: Db, tenantId: string, id: string, changes: MemoryChanges, now: Date): Promise<MemoryFields | undefined> {
  const [row] = await tx
    .update(memories)
    .set({ ...changes, updatedAt: now })
    .where(and(eq(memories.tenantId, tenantId), eq(memories.id, id)))
    .returning(memoryColumns);
  return row;
}

/** Marks current memories as no longer valid; returns the ids that were current. */
export async function supersedeMemories(tx: Db, tenantId: string, ids: string[], at: Date, supersededBy: string | null): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await tx
    .update(memories)
    .set({ validTo: at, supersededBy, updatedAt: sql`now()` })
    .where(and(eq(memories.tenantId, tenantId), inArray(memories.id, ids), isNull(memories.validTo)))
    .returning({ id: memories.id });
  return rows.map((r) => r.id);
}

/** Deletes memories (and so forgets them): only ids that are the user's, when a user is given. */
export async function deleteMemories(tx: Db, tenantId: string, ids: string[], userId?: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await tx
    .delete(memories)
    .where(and(eq(memories.tenantId, tenantId), inArray(memories.id, ids), userId === undefined ? undefined : eq(memories.userId, userId)))
    .returning({ id: memories.id });
  return rows.map((r) => r.id);
}

export async function deleteEventsOfMemories(tx: Db, tenantId: string, memoryIds: string[]): Promise<number> {
  if (memoryIds.length === 0) return 0;
  const rows = await tx
    .delete(memoryEvents)
    .where(and(eq(memoryEvents.tenantId, tenantId), inArray(memoryEvents.memoryId, memoryIds)))
    .returning({ id: memoryEvents.id });
  return rows.length;
}

const eventInsertText = rowInserter(
  'insert into memory_events (tenant_id, memory_id, user_id, event, old_content, new_content, job_id, actor, created_at)',
  ['$', '$::uuid', '$', '$', '$', '$', '$::uuid', '$', 'coalesce($::timestamptz, now())'],
);

export async function insertEvents(tx: Db, events: NewMemoryEvent[]): Promise<void> {
  if (events.length === 0) return;
  const parameters = events.flatMap((e) => [e.tenantId, e.memoryId, e.userId, e.event, e.oldContent, e.newContent, e.jobId, e.actor, isoOrNull(e.createdAt)]);
  await queryText(tx, eventInsertText(events.length), parameters);
}

/** The history of one memory, or of several (an export page), oldest first. */
export async function listEvents(tx: Db, tenantId: string, memoryIds: string | string[]) {
  const ids = typeof memoryIds === 'string' ? [memoryIds] : memoryIds;
  if (ids.length === 0) return [];
  return tx
    .select({
      memoryId: memoryEvents.memoryId,
      event: memoryEvents.event,
      oldContent: memoryEvents.oldContent,
      newContent: memoryEvents.newContent,
      jobId: memoryEvents.jobId,
      actor: memoryEvents.actor,
      createdAt: memoryEvents.createdAt,
    })
    .from(memoryEvents)
    .where(and(eq(memoryEvents.tenantId, tenantId), inArray(memoryEvents.memoryId, ids)))
    .orderBy(asc(memoryEvents.createdAt), asc(memoryEvents.id));
}

export async function insertErasureReceipt(
  tx: Db,
  receipt: { id?: string; tenantId: string; subjectHash: string; scope: 'user' | 'memories'; counts: Record<string, number>; createdAt: Date },
): Promise<string> {
  const [row] = await tx.insert(erasures).values(receipt).returning({ id: erasures.id });
  return row!.id;
}

/** Locks one user's memory set for the rest of the transaction (resolve-and-apply, erasure). */
export async function lockUser(tx: Db, tenantId: string, userId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${tenantId} || chr(31) || ${userId}, 0))`);
}

export interface SimilarMemory {
  queryIndex: number;
  id: string;
  content: string;
  occurredAt: Date;
  importance: number;
  category: string | null;
  similarity: number;
}

/**
 * For each query vector, the user's `k` most similar current memories (exact cosine over the
 * user's rows, one LATERAL scan per query, all in one statement).
 */
export async function findSimilarCurrent(tx: Db, tenantId: string, userId: string, vectors: number[][], k: number): Promise<SimilarMemory[]> {
  if (vectors.length === 0) return [];
  const values = sql.join(
    vectors.map((v, i) => sql`(${i}::int, ${vectorText(v)}::vector)`),
    sql`, `,
  );
  const rows = rowsOf<{ query_index: number; id: string; content: string; occurred_at: Date | string; importance: number; category: string | null; similarity: number | string }>(
    await tx.execute(sql`
      select q.query_index, m.id, m.content, m.occurred_at, m.importance, m.category, 1 - m.distance as similarity
      from (values ${values}) as q(query_index, embedding)
      cross join lateral (
        select id, content, occurred_at, importance, category, embedding <=> q.embedding as distance
        from memories
        where tenant_id = ${tenantId} and user_id = ${userId} and valid_to is null
          and vector_dims(embedding) = vector_dims(q.embedding)
        order by distance, id
        limit ${k}
      ) m
      order by q.query_index, m.distance, m.id
    `),
  );
  return rows.map((r) => ({
    queryIndex: Number(r.query_index),
    id: r.id,
    content: r.content,
    occurredAt: r.occurred_at instanceof Date ? r.occurred_at : new Date(r.occurred_at),
    importance: Number(r.importance),
    category: r.category,
    similarity: Number(r.similarity),
  }));
}

export async function setSupersededBy(tx: Db, tenantId: string, id: string, supersededBy: string): Promise<void> {
  await tx.update(memories).set({ supersededBy }).where(and(eq(memories.tenantId, tenantId), eq(memories.id, id)));
}

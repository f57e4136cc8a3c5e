import { sql, type SQL } from 'drizzle-orm';
import { query, type Db } from '../db/client.js';
import type { MemoryFields } from '../memories/schemas.js';

export interface CandidateQuery {
  tenantId: string;
  userId: string;
  embedding: number[];
  text: string;
  /** Memories valid and occurred at this instant (as_of), or current ones when undefined. */
  asOf: Date | undefined;
  now: Date;
  poolSize: number;
  agentId?: string | undefined;
  runId?: string | undefined;
  categories?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export interface CandidateRow extends MemoryFields {
  /** Cosine similarity of the memory's embedding to the query, in [-1, 1]. */
  similarity: number;
  /** Full-text rank when the full-text arm matched it, else null. */
  textRank: number | null;
}

interface RawCandidate {
  id: string;
  user_id: string;
  agent_id: string | null;
  run_id: string | null;
  content: string;
  importance: number;
  category: string | null;
  metadata: Record<string, unknown>;
  occurred_at: Date | string;
  created_at: Date | string;
  updated_at: Date | string;
  valid_to: Date | string | null;
  expires_at: Date | string | null;
  similarity: number | string;
  text_rank: number | string | null;
}

const toDate = (v: Date | string) => (v instanceof Date ? v : new Date(v));

/**
 * Hybrid candidates for one user: an exact cosine top-N over the user's rows in scope and a
 * full-text top-N, merged. The scope is MATERIALIZED so the planner scans the user's rows through
 * the (tenant, user) btree instead of walking a global index (see DESIGN.md, "Recall").
 */
export async function findCandidates(tx: Db, q: CandidateQuery): Promise<CandidateRow[]> {
  const vector = `[${q.embedding.join(',')}]`;
  const conditions: SQL[] = [sql`tenant_id = ${q.tenantId}`, sql`user_id = ${q.userId}`, sql`vector_dims(embedding) = ${q.embedding.length}`];
  // Raw SQL takes times as ISO text: drizzle's postgres.js driver does not serialise Date parameters.
  if (q.asOf) {
    const asOf = q.asOf.toISOString();
    conditions.push(sql`occurred_at <= ${asOf}::timestamptz`, sql`(valid_to is null or valid_to > ${asOf}::timestamptz)`);
    conditions.push(sql`(expires_at is null or expires_at > ${asOf}::timestamptz)`);
  } else {
    conditions.push(sql`valid_to is null`, sql`(expires_at is null or expires_at > ${q.now.toISOString()}::timestamptz)`);
  }
  if (q.agentId !== undefined) conditions.push(sql`agent_id = ${q.agentId}`);
  if (q.runId !== undefined) conditions.push(sql`run_id = ${q.runId}`);
  if (q.categories?.length) conditions.push(sql`category in (${sql.join(q.categories.map((c) => sql`${c}`), sql`, `)})`);
  if (q.metadata && Object.keys(q.metadata).length > 0) conditions.push(sql`metadata @> ${JSON.stringify(q.metadata)}::jsonb`);
  const where = sql.join(conditions, sql` and `);
  const rows = await query<RawCandidate>(
    tx,
    sql`
      with scope as materialized (
        select id, user_id, agent_id, run_id, content, importance, category, metadata, occurred_at, created_at,
               updated_at, valid_to, expires_at, embedding <=> ${vector}::vector as distance, search_text
        from memories
        where ${where}
      ),
      terms as (select websearch_to_tsquery('english', ${q.text}) as tsq),
      by_vector as (select id from scope order by distance, id limit ${q.poolSize}),
      by_text as (
        select scope.id, ts_rank_cd(scope.search_text, terms.tsq) as text_rank
        from scope, terms
        where scope.search_text @@ terms.tsq
        order by text_rank desc, scope.id
        limit ${q.poolSize}
      )
      select s.id, s.user_id, s.agent_id, s.run_id, s.content, s.importance, s.category, s.metadata, s.occurred_at,
             s.created_at, s.updated_at, s.valid_to, s.expires_at, 1 - s.distance as similarity, t.text_rank
      from scope s
      left join by_text t on t.id = s.id
      where s.id in (select id from by_vector) or t.id is not null
    `,
  );
  return rows.map((r) => ({
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
    similarity: Number(r.similarity),
    textRank: r.text_rank === null ? null : Number(r.text_rank),
  }));
}

import { sql, type SQL } from 'drizzle-orm';
import { query, queryText, type Db } from '../db/client.js';
import { vectorText } from '../db/vector-text.js';
import { memoryFromRow, type RawMemoryRow } from '../memories/repository.js';
import type { MemoryFields } from '../memories/schemas.js';
import { bm25Scores, parseTsvector, queryTerms, type QueryLexeme } from './bm25.js';
import { topBy } from './scoring.js';
import type { WordForm } from './word-forms.js';

export interface SignalsQuery {
  tenantId: string;
  userId: string;
  embedding: number[];
  text: string;
  /** The irregular forms of the query's words (word-forms.ts), turned into lexemes too. */
  wordForms: readonly WordForm[];
  /** Memories valid and occurred at this instant (as_of), or current ones when undefined. */
  asOf: Date | undefined;
  now: Date;
  /** The vector arm's size: this many memories nearest the query come back whatever their words. */
  poolSize: number;
  /** At most this many of the query's distinct lexemes rank (the first by position in the query). */
  maxTerms: number;
  /** At most this many memories in scope are scanned: the newest by `occurred_at`, then id. */
  scanLimit: number;
  /** When the scope holds more than `scanLimit` memories, read none (findLargeScopeSignals answers). */
  skipWhenCapped?: boolean;
  agentId?: string | undefined;
  runId?: string | undefined;
  categories?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  /**
   * Whether a large scope's vector arm passes over every memory's bits (findLargeScopeSignals).
   * False for an embedder whose vectors are hashed word features (`lexical`): a memory near such a
   * query mostly shares its words, which the text arm reads through its index. The pass runs all
   * the same when the request has a filter (the text arm keeps its newest before filtering) or when
   * the text arm brings fewer than `poolSize` memories (no word held, stop words only), even once it
   * has read the words too common to read alone. Default true.
   */
  nearestByBits?: boolean;
  /** A large scope's bounds (findLargeScopeSignals), smaller in tests than the defaults below. */
  largeScope?: Partial<LargeScopeBounds>;
}

export interface LargeScopeBounds {
  /** How many memories nearest by Hamming distance are re-ranked by their full vectors. */
  rerank: number;
  /** How many memories of each set of query terms the text arm reads, the newest first. */
  perSet: number;
  /** A term held by more of the user's memories than this is read alone only if it is the rarest. */
  termReadLimit: number;
  /** How many of the text arm's memories, the best by BM25, are read in full (at least the pool's size). */
  textRerank: number;
}

export interface SignalRow {
  id: string;
  importance: number;
  occurredAt: Date;
  /** Cosine similarity of the memory's embedding to the query, in [-1, 1]. */
  similarity: number;
  /** The memory's length in distinct lexemes (BM25's dl). */
  length: number;
  /** Occurrences of the query's lexemes in the memory (empty when it shares none). */
  hits: Map<string, number>;
}

export interface RecallSignals {
  /** The query's lexemes, and those of its irregular words' forms with their group. */
  lexemes: QueryLexeme[];
  /** How many memories were scanned, and their mean length: BM25's N and avgdl. */
  documents: number;
  /** Whether the scope held more memories than the scan limit (the oldest were then not scanned). */
  capped: boolean;
  averageLength: number;
  /** Every memory in scope that shares a lexeme with the query, and the vector arm's top N. */
  rows: SignalRow[];
  /** How many of the user's current memories hold each query lexeme, where rows holds only some. */
  frequencies?: Map<string, number>;
}

/**
 * The statement's single row. The memories come as one text, a line each (`id dl distance
 * importance occurred_ms hit`, the tsvector last as it holds spaces), rather than a row each: the
 * driver then decodes four values instead of hundreds of rows of seven columns, measured as the
 * larger part of recall's time in the client (`npm run bench:locomo`). A lexeme never holds a
 * space or a newline (the parser splits words on white space), so the lines split safely.
 */
export interface RawSignals {
  /** JSON: [[lexeme, group or null], ...]. */
  lexemes: string | null;
  documents: number | string;
  capped: boolean | string;
  average_length: number | string | null;
  memories: string | null;
  /** JSON: {lexeme: df, ...}, the large scope's counts (memory_lexeme_stats). */
  frequencies?: string | null;
}

/** Whether the request filters the scope beyond its user and validity (agent, run, category, metadata). */
export function hasFilter(q: SignalsQuery): boolean {
  return q.agentId !== undefined || q.runId !== undefined || Boolean(q.categories?.length) || Object.keys(q.metadata ?? {}).length > 0;
}

/** The scope's conditions: the user, the request's filters, validity and `as_of` (or now). */
function scopeConditions(q: SignalsQuery): SQL {
  // No vector_dims() here: the planner guesses 0.5 % of rows for it and then sorts the whole scope
  // instead of walking the (tenant, user, occurred_at) index and stopping; the scope checks it.
  const conditions: SQL[] = [sql`m.tenant_id = ${q.tenantId}`, sql`m.user_id = ${q.userId}`];
  // Raw SQL takes times as ISO text: drizzle's postgres.js driver does not serialise Date parameters.
  if (q.asOf) {
    const asOf = q.asOf.toISOString();
    conditions.push(sql`m.occurred_at <= ${asOf}::timestamptz`, sql`(m.valid_to is null or m.valid_to > ${asOf}::timestamptz)`);
    // Expired is gone, whatever the as_of: the sweep erases it within the hour anyway.
    conditions.push(sql`(m.expires_at is null or m.expires_at > greatest(${asOf}::timestamptz, now()))`);
  } else {
    conditions.push(sql`m.valid_to is null`, sql`(m.expires_at is null or m.expires_at > ${q.now.toISOString()}::timestamptz)`);
  }
  if (q.agentId !== undefined) conditions.push(sql`m.agent_id = ${q.agentId}`);
  if (q.runId !== undefined) conditions.push(sql`m.run_id = ${q.runId}`);
  if (q.categories?.length) conditions.push(sql`m.category in (${sql.join(q.categories.map((c) => sql`${c}`), sql`, `)})`);
  if (q.metadata && Object.keys(q.metadata).length > 0) conditions.push(sql`m.metadata @> ${JSON.stringify(q.metadata)}::jsonb`);
  return sql.join(conditions, sql` and `);
}

/**
 * The query's lexemes (`english`, as the memories' search_text): its first `maxTerms` distinct
 * ones by position, and the irregular forms of those (word-forms.ts) with their group. CTEs
 * `words`, `kept`, `forms`, `lexemes` and `query` (one row: the distinct lexemes as an array).
 */
function queryLexemeCtes(q: SignalsQuery): SQL {
  // The forms travel as JSON text: both drivers pass a string parameter the same way.
  const forms = JSON.stringify(q.wordForms.map((f) => ({ form: f.form, grp: f.group })));
  return sql`
      words as materialized (
        select u.lexeme, u.positions[1] as pos, u.n
        from unnest(to_tsvector('english', ${q.text})) with ordinality as u(lexeme, positions, weights, n)
      ),
      kept as materialized (select lexeme, n from words order by pos, n limit ${q.maxTerms}),
      forms as materialized (
        select u.lexeme, f.grp
        from jsonb_to_recordset(${forms}::jsonb) as f(form text, grp int)
        cross join lateral unnest(to_tsvector('english', f.form)) u
      ),
      lexemes as materialized (
        (select lexeme, null::int as grp from kept order by n)
        union all
        select lexeme, grp from forms
        where (select count(*) from words) <= ${q.maxTerms} or grp in (select grp from forms where lexeme in (select lexeme from kept))
      ),
      query as materialized (select array_agg(distinct lexeme) as lexemes from lexemes)`;
}

/**
 * A memory's line in the statements' output (parseRecallSignals), from a row `s` of a CTE `scope`:
 * `id dl distance importance occurred_ms hit`.
 */
const MEMORY_LINE = `concat_ws(' ', s.id, s.dl, s.distance, s.importance, extract(epoch from s.occurred_at)::float8 * 1000, s.hit)`;

/**
 * What recall ranks with, in one statement over the user's memories in scope (the request's
 * filters, validity and `as_of`): the query's lexemes (PostgreSQL's `english` configuration, the
 * same as the memories' search_text), then for each memory in scope its cosine distance to the
 * query and its tsvector cut down to the query's lexemes (setweight + ts_filter: cheap, and no
 * unnesting). It returns the memories that share a lexeme with the query (the full-text arm, an
 * OR of the lexemes: websearch_to_tsquery's AND finds almost nothing for a question) and the
 * vector arm's exact top N (no ANN index: see DESIGN.md, "Recall"), with N and avgdl of the scope.
 * BM25 itself is computed from these in bm25.ts.
 *
 * The work is bounded whatever the request: the query keeps its first `maxTerms` distinct lexemes
 * (and the irregular forms of those only), and only the newest `scanLimit` memories in scope are
 * scanned. They are picked by a narrow sort of row addresses (the scope's filters, no distances),
 * then read again by address: the costly per-row work (cosine, tsvector cut, the lines) is done
 * for at most `scanLimit` rows. `capped` says whether older ones were left out; with
 * `skipWhenCapped` none is read then (recall answers such a scope with findLargeScopeSignals).
 */
export async function findRecallSignals(tx: Db, q: SignalsQuery): Promise<RecallSignals> {
  const { text, parameters } = recallSignalsStatement(q);
  const [raw] = await queryText<RawSignals>(tx, text, parameters);
  return parseRecallSignals(raw);
}

/**
 * findRecallSignals' statement as fixed text and its parameters: the text depends only on which
 * filters the request has (and how many categories), so it is built once per such shape and not
 * again by drizzle on every request (measured as a tenth of recall's CPU in the server).
 */
export function recallSignalsStatement(q: SignalsQuery): { text: string; parameters: unknown[] } {
  const parameters: unknown[] = [
    q.tenantId,
    q.userId,
    q.text,
    q.maxTerms,
    JSON.stringify(q.wordForms.map((f) => ({ form: f.form, grp: f.group }))),
    vectorLiteral(q.embedding),
    q.scanLimit,
    q.embedding.length,
    q.poolSize,
  ];
  const shape = [q.asOf ? 'a' : 'n', q.agentId !== undefined ? 1 : 0, q.runId !== undefined ? 1 : 0, q.categories?.length ?? 0, q.metadata && Object.keys(q.metadata).length > 0 ? 1 : 0, q.skipWhenCapped ? 1 : 0].join(':');
  // Same order as the shape's placeholders (scanStatementText).
  parameters.push(q.asOf ? q.asOf.toISOString() : q.now.toISOString());
  if (q.agentId !== undefined) parameters.push(q.agentId);
  if (q.runId !== undefined) parameters.push(q.runId);
  if (q.categories?.length) parameters.push(...q.categories);
  if (q.metadata && Object.keys(q.metadata).length > 0) parameters.push(JSON.stringify(q.metadata));
  let text = scanStatements.get(shape);
  if (text === undefined) scanStatements.set(shape, (text = scanStatementText(q)));
  return { text, parameters };
}

const scanStatements = new Map<string, string>();

/** The text of findRecallSignals' statement for the shape of `q` ($1-$9 fixed, then the scope's). */
function scanStatementText(q: SignalsQuery): string {
  let n = 10;
  const conditions = ['m.tenant_id = $1', 'm.user_id = $2'];
  // As scopeConditions (the large scope's builder): the same conditions, as text.
  if (q.asOf) {
    const asOf = `$${n++}::timestamptz`;
    conditions.push(`m.occurred_at <= ${asOf}`, `(m.valid_to is null or m.valid_to > ${asOf})`, `(m.expires_at is null or m.expires_at > greatest(${asOf}, now()))`);
  } else {
    conditions.push('m.valid_to is null', `(m.expires_at is null or m.expires_at > $${n++}::timestamptz)`);
  }
  if (q.agentId !== undefined) conditions.push(`m.agent_id = $${n++}`);
  if (q.runId !== undefined) conditions.push(`m.run_id = $${n++}`);
  if (q.categories?.length) conditions.push(`m.category in (${q.categories.map(() => `$${n++}`).join(', ')})`);
  if (q.metadata && Object.keys(q.metadata).length > 0) conditions.push(`m.metadata @> $${n++}::jsonb`);
  const skip = q.skipWhenCapped ? ' and (select cardinality(p.rows) from picked p) <= $7' : '';
  // A scope too large to scan is known without reading its wide rows: when the user's current
  // memories (their word counts' total) pass the limit, the scope is counted up to the limit (on the
  // covering index, index-only once vacuum has marked the pages all-visible), and past it none is
  // picked. With a filter that index lacks (agent, run, category, metadata) the newest are picked
  // straight away, as counting first would read the rows twice.
  const where = conditions.join(' and ');
  const pickNewest = `array(select m.ctid from memories m where ${where} order by m.occurred_at desc nulls last, m.id desc nulls last limit $7 + 1)`;
  const picked =
    q.skipWhenCapped && !hasFilter(q)
      ? `case when coalesce((select s.documents from memory_lexeme_stats s where s.tenant_id = $1 and s.user_id = $2 and s.lexeme = ''), 0) > $7
                   and (select count(*) from (select 1 from memories m where ${where} limit $7 + 1) c) > $7
              then null else ${pickNewest} end`
      : pickNewest;
  return `
      with
      words as materialized (
        select u.lexeme, u.positions[1] as pos, u.n
        from unnest(to_tsvector('english', $3)) with ordinality as u(lexeme, positions, weights, n)
      ),
      kept as materialized (select lexeme, n from words order by pos, n limit $4),
      forms as materialized (
        select u.lexeme, f.grp
        from jsonb_to_recordset($5::jsonb) as f(form text, grp int)
        cross join lateral unnest(to_tsvector('english', f.form)) u
      ),
      lexemes as materialized (
        (select lexeme, null::int as grp from kept order by n)
        union all
        select lexeme, grp from forms
        where (select count(*) from words) <= $4 or grp in (select grp from forms where lexeme in (select lexeme from kept))
      ),
      query as materialized (select array_agg(distinct lexeme) as lexemes from lexemes),
      picked as materialized (select ${picked} as rows),
      scope as materialized (
        select m.id, m.importance, m.occurred_at, m.embedding <=> $6::vector as distance,
               length(m.search_text) as dl, ts_filter(setweight(m.search_text, 'A', q.lexemes), '{a}') as hit
        from memories m
        cross join query q
        where m.ctid = any((select p.rows[1:$7] from picked p)::tid[]) and m.tenant_id = $1
          and vector_dims(m.embedding) = $8${skip}
      )
      select (select json_agg(json_build_array(lexeme, grp))::text from lexemes) as lexemes,
             (select count(*) from scope) as documents,
             (select coalesce(cardinality(rows) > $7, true) from picked) as capped,
             (select avg(dl)::float8 from scope) as average_length,
             (select string_agg(${MEMORY_LINE}, e'\\n')
              from scope s
              where length(s.hit) > 0 or s.id in (select id from scope order by distance, id limit $9)) as memories`;
}

/**
 * The vector as pgvector's text, once per vector: a repeated query's vector is the same array
 * (query-embeddings.ts), and 1,536 numbers written out cost more than the rest of the statement.
 */
const vectorLiterals = new WeakMap<readonly number[], string>();
function vectorLiteral(embedding: readonly number[]): string {
  let text = vectorLiterals.get(embedding);
  if (text === undefined) vectorLiterals.set(embedding, (text = vectorText(embedding)));
  return text;
}

/**
 * How many memories the vector arm of a large scope re-ranks by their full vectors, the nearest by
 * the Hamming distance of the quantized ones (`npm run bench -- scale`).
 */
export const QUANTIZED_RERANK = 400;
/** At most this many memories holding one set of query terms join the text arm of a large scope, the newest. */
export const LARGE_SCOPE_MATCHES_PER_TERM = 300;
/**
 * A query term held by more of the user's memories than this brings none to a large scope's text
 * arm (unless it is the query's rarest): reading them all to keep the newest would cost more than
 * such a common word is worth to BM25. It still counts in the score of every memory read, and the
 * sets of several terms still find the memories holding it with others. 1,000 and 2,000 give the
 * same recall@10 with `npm run bench -- biguser` (README, "Users with many memories").
 */
export const LARGE_SCOPE_TERM_READ_LIMIT = 1000;
/**
 * How many memories the text arm of a large scope reads in full, the best by BM25 on their narrow
 * copies (at least the pool, so that the text arm's top by BM25 is exact). Measured with
 * `npm run bench -- biguser` at 100,000 memories (README, "Users with many memories"): 100, 150
 * and 300 give the same recall@10 against the exact scan, and each wide row read costs time.
 */
export const LARGE_SCOPE_TEXT_RERANK = 100;
/** Up to this many query terms, the text arm also reads the memories holding all of them but two. */
export const LARGE_SCOPE_SUBSET_TERMS = 8;
/** A large scope's size (BM25's N) is counted up to this many memories; a larger one counts as this. */
export const LARGE_SCOPE_COUNT_LIMIT = 20_000;

/**
 * The signals of a scope too large to scan (more than the scan limit), over all of it:
 * - vector arm: each memory's quantized embedding (`embedding_bits`, a bit a dimension, migration
 *   0009) compared by Hamming distance exactly, on the covering (tenant, user) index (an
 *   index-only scan: the wide rows are not read), or through an HNSW index on the bits with
 *   pgvector's iterative scan where an operator has made one (README, "Users with many
 *   memories": faster recall, slower inserts); the nearest QUANTIZED_RERANK are re-ranked by
 *   their full vectors' cosine (not when `nearestByBits` is false: see there);
 * - text arm: through the GIN index of memory_search (migration 0011, narrow copies of the
 *   memories' words, kept by triggers), the newest LARGE_SCOPE_MATCHES_PER_TERM memories
 *   of each set of query terms (a term: a lexeme, or an irregular word's forms as alternatives, as
 *   BM25 counts them): each term held by at most LARGE_SCOPE_TERM_READ_LIMIT of the user's
 *   memories (and the rarest), all of them, all but one, all but two (up to
 *   LARGE_SCOPE_SUBSET_TERMS terms), found by engram_recall_text_rows (migration 0013: as the
 *   owner, within the current tenant, since row-level security keeps @@ from using the index;
 *   smallest sets first, skipping a set that holds one already read whole), each with its length
 *   and its words cut to the query's, from the copies; of these only the
 *   best LARGE_SCOPE_TEXT_RERANK by BM25 are read again in full (cosine, importance, time), in a
 *   second statement with the pass's nearest; with a filter (agent, run, category, metadata:
 *   columns the copies lack) every one is, and the filter applied then;
 * - N, avgdl and each lexeme's df are the user's current memories', from memory_lexeme_stats
 *   (migration 0010, kept by triggers on every write), so a common word is not overrated for
 *   having been read in part; a user with none current (an as_of before a supersede) falls back
 *   to the scope counted up to LARGE_SCOPE_COUNT_LIMIT and the memories read.
 * With the pass, on a scope no larger than either re-rank every memory is read, and the answer is the scan's.
 */
export async function findLargeScopeSignals(tx: Db, q: SignalsQuery): Promise<RecallSignals> {
  if (q.nearestByBits === false && !hasFilter(q)) {
    const byWords = await readLargeScope(tx, q, false);
    if (byWords.rows.length >= q.poolSize) return byWords;
    // Too few, and a word the user holds was too common to read alone (a rare word beside it found
    // the few): its newest memories are read too before the pass, which costs ~100 ms at 100,000.
    const readLimit = q.largeScope?.termReadLimit ?? LARGE_SCOPE_TERM_READ_LIMIT;
    if ([...(byWords.frequencies?.values() ?? [])].some((n) => n > readLimit)) {
      const everyWord = await readLargeScope(tx, { ...q, largeScope: { ...q.largeScope, termReadLimit: EVERY_TERM } }, false);
      if (everyWord.rows.length >= q.poolSize) return everyWord;
    }
  }
  return readLargeScope(tx, q, true);
}

/** A read limit no term passes (an int4, as the statement compares it). */
const EVERY_TERM = 2_147_483_647;

async function readLargeScope(tx: Db, q: SignalsQuery, nearestByBits: boolean): Promise<RecallSignals> {
  const bounds: LargeScopeBounds = {
    rerank: QUANTIZED_RERANK,
    perSet: LARGE_SCOPE_MATCHES_PER_TERM,
    termReadLimit: LARGE_SCOPE_TERM_READ_LIMIT,
    textRerank: LARGE_SCOPE_TEXT_RERANK,
    ...q.largeScope,
  };
  const vector = vectorLiteral(q.embedding);
  const where = scopeConditions(q);
  // The query's vector and bits in scalar subqueries, computed once: the driver prepares statements,
  // and PostgreSQL's generic plan (after five runs) would otherwise parse and quantize them per row.
  // A literal, so the planner can match a partial index on one size (an integer: no injection).
  const dims = sql.raw(String(Math.trunc(q.embedding.length)));
  // An HNSW index on the bits, where an operator made one, is walked with iterative scans (SET LOCAL).
  // No parallel workers for the rest of the transaction, the Hamming pass above all: starting them
  // cost more than they saved (README, "Users with many memories"), and other requests use the cores.
  // The settings, the pass and the text arm go down together (one round trip).
  const settings = query(
    tx,
    sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', ${String(Math.max(1, bounds.rerank))}, true), set_config('max_parallel_workers_per_gather', '0', true)`,
  );
  const near = nearestByBits
    ? query<{ ids: string | null }>(
        tx,
        sql`select string_agg(n.id::text, ',') as ids from (
                select m.id from memories m
                where ${where} and length(m.embedding_bits) = ${dims}
                order by m.embedding_bits::bit(${dims}) <~> (select binary_quantize(${vector}::vector)::bit(${dims}))
                limit ${bounds.rerank}) n`,
      )
    : Promise.resolve([]);
  const [, nearRows, [raw]] = await Promise.all([settings, near, query<RawSignals>(tx, textArmStatement(q, bounds, where))]);
  const found = parseRecallSignals(raw, 'words');
  // N is at least the memories found in scope: more than the user's current ones where an as_of
  // scope holds memories since superseded. The cut and the final BM25 then count with the same N.
  const words = { ...found, documents: Math.max(found.documents, found.rows.length) };
  const frequencies = frequenciesWithRead(words);
  // Only the text arm's best by BM25 (on the copies' words) are read again in full, with the pass's:
  // their wide rows (cosine, importance, time) were most of a large scope's cost. With a filter,
  // whose columns are not copied, every one is read and the filter applied then.
  const kept = hasFilter(q) ? words.rows : bestByText(words, frequencies, Math.max(bounds.textRerank, q.poolSize));
  const ids = new Set(kept.map((r) => r.id));
  for (const id of nearRows[0]?.ids?.split(',') ?? []) ids.add(id);
  const full = ids.size === 0 ? undefined : (await query<RawSignals>(tx, rereadStatement(q, where, [...ids], words.lexemes)))[0];
  return { ...words, frequencies, rows: parseRecallSignals(full).rows };
}

/** The user's current memories' count of each lexeme, or those read holding it where more (an as_of scope). */
function frequenciesWithRead(signals: RecallSignals): Map<string, number> {
  const counted = new Map<string, number>();
  for (const row of signals.rows) for (const lexeme of row.hits.keys()) counted.set(lexeme, (counted.get(lexeme) ?? 0) + 1);
  const merged = new Map(signals.frequencies ?? []);
  for (const [lexeme, n] of counted) if (n > (merged.get(lexeme) ?? 0)) merged.set(lexeme, n);
  return merged;
}

/** The `n` rows of the best BM25 (bm25.ts, as recall scores them), ties by id. */
function bestByText(signals: RecallSignals, frequencies: Map<string, number>, n: number): SignalRow[] {
  const scores = bm25Scores(
    queryTerms(signals.lexemes),
    signals.rows.map((r) => ({ id: r.id, length: r.length, lexemes: r.hits })),
    { documents: signals.documents, averageLength: signals.averageLength, frequencies },
  );
  return topBy(signals.rows, (r) => scores.get(r.id) ?? 0, n);
}

/**
 * The text arm of a large scope on the narrow copies (memory_search): the query's lexemes, the
 * user's counts, and the memories holding each set of terms (the newest `perSet` a set), as lines
 * `id dl hit` (parseRecallSignals, 'words').
 */
function textArmStatement(q: SignalsQuery, bounds: LargeScopeBounds, where: SQL): SQL {
  return sql`
      with ${queryLexemeCtes(q)},
      stats as materialized (
        -- A lookup a lexeme (the limit keeps it from being flattened): as one "= any(...)", the
        -- generic plan of the prepared statement read every word count of the user (3,600 rows, ~3.7 ms).
        select l.lexeme, s.documents, s.lengths
        from unnest(array_append((select lexemes from query), '')) as l(lexeme)
        cross join lateral (
          select s.documents, s.lengths from memory_lexeme_stats s
          where s.tenant_id = ${q.tenantId} and s.user_id = ${q.userId} and s.lexeme = l.lexeme
          limit 1
        ) s
      ),
      -- A term per query word: a lexeme, or the forms of one irregular word as alternatives ('person'
      -- | 'peopl'), as BM25 counts them (bm25.ts queryTerms). Keyed by lexeme, or by chr(1) and the
      -- group (no lexeme holds a control character); held by at most the sum of its lexemes' counts.
      -- The rarest is the rarest the user holds: a term held by none finds nothing read alone.
      quoted as materialized (
        select t.lexeme, t.term, t.documents, row_number() over (order by t.documents = 0, t.documents, t.lexeme) as rarest
        from (
          select coalesce(chr(1) || g.grp, l.lexeme) as lexeme,
                 '(' || string_agg(chr(39) || replace(replace(l.lexeme, chr(92), chr(92) || chr(92)), chr(39), chr(39) || chr(39)) || chr(39), ' | ' order by l.lexeme) || ')' as term,
                 sum(coalesce(s.documents, 0)) as documents
          from unnest((select lexemes from query)) as l(lexeme)
          left join stats s on s.lexeme = l.lexeme
          left join lateral (select min(x.grp) as grp from lexemes x where x.lexeme = l.lexeme) g on true
          group by 1
        ) t
      ),
      -- Each set of terms as a tsquery, with its terms' keys joined by chr(2) (no key holds one),
      -- so that the function can tell a set holding another (migration 0013).
      term_sets as materialized (
        select term as query, lexeme as terms from quoted
        where documents <= ${bounds.termReadLimit} or rarest = 1 or not exists (select 1 from stats where lexeme = '')
        union
        select string_agg(term, ' & ' order by lexeme), string_agg(lexeme, chr(2) order by lexeme) from quoted having count(*) >= 2
        union
        select string_agg(q.term, ' & ' order by q.lexeme), string_agg(q.lexeme, chr(2) order by q.lexeme) from quoted o cross join quoted q
        where q.lexeme <> o.lexeme group by o.lexeme having count(*) >= 2
        union
        select string_agg(q.term, ' & ' order by q.lexeme), string_agg(q.lexeme, chr(2) order by q.lexeme)
        from quoted o1 join quoted o2 on o1.lexeme < o2.lexeme cross join quoted q
        where q.lexeme <> o1.lexeme and q.lexeme <> o2.lexeme and (select count(*) from quoted) <= ${LARGE_SCOPE_SUBSET_TERMS}
        group by o1.lexeme, o2.lexeme having count(*) >= 2
      ),
      scope as materialized (
        select distinct on (t.id) t.id, length(t.search_text) as dl, ts_filter(setweight(t.search_text, 'A', (select lexemes from query)), '{a}') as hit
        from engram_recall_text_rows(${q.userId}, array(select query from term_sets order by terms), array(select terms from term_sets order by terms), ${bounds.perSet},
          ${q.asOf ? q.asOf.toISOString() : null}::timestamptz, ${q.now.toISOString()}::timestamptz) t
        order by t.id
      )
      select (select json_agg(json_build_array(lexeme, grp))::text from lexemes) as lexemes,
             -- The user's current memories, counted on write; else (none current, e.g. an as_of
             -- before a supersede) the scope counted on the narrow index, up to a bound.
             coalesce((select documents from stats where lexeme = ''), (select count(*) from (select 1 from memories m where ${where} limit ${LARGE_SCOPE_COUNT_LIMIT}) c))::int as documents,
             false as capped,
             coalesce((select lengths::float8 / nullif(documents, 0) from stats where lexeme = ''), (select avg(dl) from scope))::float8 as average_length,
             (select json_object_agg(lexeme, documents)::text from stats where lexeme <> '') as frequencies,
             (select string_agg(concat_ws(' ', s.id, s.dl, s.hit), e'\n') from scope s) as memories`;
}

/**
 * The given memories of the scope read in full, as findRecallSignals' lines: those holding a query
 * lexeme, and of the others the `poolSize` nearest by cosine.
 */
function rereadStatement(q: SignalsQuery, where: SQL, ids: readonly string[], lexemes: readonly QueryLexeme[]): SQL {
  const vector = vectorLiteral(q.embedding);
  return sql`
      with scope as materialized (
        select m.id, m.importance, m.occurred_at, m.embedding <=> (select ${vector}::vector) as distance,
               length(m.search_text) as dl,
               ts_filter(setweight(m.search_text, 'A', (select array_agg(l) from jsonb_array_elements_text(${JSON.stringify(lexemes.map((l) => l.lexeme))}::jsonb) l)), '{a}') as hit
        from memories m
        where ${where} and m.id = any(${`{${ids.join(',')}}`}::uuid[]) and vector_dims(m.embedding) = ${q.embedding.length}
      )
      select string_agg(${sql.raw(MEMORY_LINE)}, e'\n') as memories
      from scope s
      where length(s.hit) > 0 or s.id in (select id from scope order by distance, id limit ${q.poolSize})`;
}

/** The statement's row as recall's signals (pure, so it can be measured and tested alone). */
export function parseRecallSignals(raw: Partial<RawSignals> | undefined, lines: 'full' | 'words' = 'full'): RecallSignals {
  const signals: RecallSignals = { lexemes: [], documents: 0, capped: false, averageLength: 0, rows: [] };
  if (!raw) return signals;
  for (const [lexeme, group] of JSON.parse(raw.lexemes ?? '[]') as Array<[string, number | null]>) signals.lexemes.push({ lexeme, group });
  signals.documents = Number(raw.documents);
  signals.capped = raw.capped === true || raw.capped === 't' || raw.capped === 'true';
  signals.averageLength = raw.average_length === null ? 0 : Number(raw.average_length);
  if (raw.frequencies) signals.frequencies = new Map(Object.entries(JSON.parse(raw.frequencies) as Record<string, number | string>).map(([l, n]) => [l, Number(n)]));
  const text = raw.memories ?? '';
  // Each line: `id dl distance importance occurred_ms hit` ('words': `id dl hit`), read with indexes
  // (no split arrays). A 'words' row has no cosine, importance or time yet: similarity 0, the rest 0.
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const s1 = text.indexOf(' ', start);
    const s2 = text.indexOf(' ', s1 + 1);
    if (lines === 'words') {
      const hitEnd = s2 === -1 || s2 > end ? end : s2;
      signals.rows.push({
        id: text.slice(start, s1),
        length: Number(text.slice(s1 + 1, hitEnd)),
        similarity: 0,
        importance: 0,
        occurredAt: new Date(0),
        hits: hitEnd < end ? parseTsvector(text.slice(hitEnd + 1, end)) : new Map(),
      });
      start = end + 1;
      continue;
    }
    const s3 = text.indexOf(' ', s2 + 1);
    const s4 = text.indexOf(' ', s3 + 1);
    const s5 = text.indexOf(' ', s4 + 1);
    const hitEnd = s5 === -1 || s5 > end ? end : s5;
    signals.rows.push({
      id: text.slice(start, s1),
      length: Number(text.slice(s1 + 1, s2)),
      similarity: 1 - Number(text.slice(s2 + 1, s3)),
      importance: Number(text.slice(s3 + 1, s4)),
      occurredAt: new Date(Number(text.slice(s4 + 1, hitEnd))),
      hits: hitEnd < end ? parseTsvector(text.slice(hitEnd + 1, end)) : new Map(),
    });
    start = end + 1;
  }
  return signals;
}

/** The user's memories with these ids, in no particular order (one deleted meanwhile is missing). */
export async function findMemoriesByIds(tx: Db, tenantId: string, userId: string, ids: readonly string[]): Promise<MemoryFields[]> {
  if (ids.length === 0) return [];
  // One uuid[] parameter (as its text form: both drivers pass a string the same way) rather than
  // one per id: the planner then probes the primary key once per id (measured: 0.2 ms for 50, where
  // an IN list of 50 parameters or a jsonb array cost 1-4 ms).
  const rows = await queryText<RawMemoryRow>(tx, FIND_BY_IDS, [tenantId, userId, `{${ids.join(',')}}`]);
  return rows.map(memoryFromRow);
}

const FIND_BY_IDS = `
      select id, user_id, agent_id, run_id, content, importance, category, metadata, occurred_at, created_at, updated_at,
             valid_to, expires_at
      from memories
      where tenant_id = $1 and user_id = $2 and id = any($3::uuid[])`;

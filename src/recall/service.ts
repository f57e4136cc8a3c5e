import { SCOPES, requireScope, resolveUserId } from '../auth/principal.js';
import { minRelevanceFor } from '../config.js';
import { withTenant } from '../db/tenant.js';
import { toMemoryDto } from '../memories/schemas.js';
import type { RequestContext } from '../shared/context.js';
import { lastStatement, type Db } from '../db/client.js';
import { bm25Scores, queryTerms } from './bm25.js';
import { findLargeScopeSignals, findMemoriesByIds, findRecallSignals, hasFilter, type RecallSignals, type SignalsQuery } from './repository.js';
import { RecentMap } from '../shared/recent-map.js';
import { MAX_RECALL_LIMIT, type RecallBody, type RecalledMemory } from './schemas.js';
import {
  DEFAULT_WEIGHTS,
  TEXT_RELEVANCE_WEIGHT,
  TEXT_RELEVANCE_WEIGHTS,
  absoluteRelevance,
  fullTextScore,
  fuseRelevance,
  mergeArms,
  rankCandidates,
  type ArmSignals,
  type RankOptions,
  type RankableCandidate,
  type Ranked,
} from './scoring.js';
import { KeyedLimiter } from './limiter.js';
import { queryWordForms } from './word-forms.js';
import { embedQuery } from './query-embeddings.js';


/**
 * How many candidates each arm contributes, whatever the request's `limit`: the most a request may
 * ask for, so that `limit` only cuts the ranked list (the first 3 of `limit` 3 are the first 3 of
 * `limit` 100) and a user with at most this many memories in scope has every one of them ranked by
 * the weights. Weights reorder the memories the two arms bring, the ones related to the query; a
 * memory neither brings (no shared word, not among the nearest) is not ranked, however important.
 * Measured on LoCoMo (`npm run bench:locomo -- --k 10`): 100 per arm against 50 leaves
 * relevance-only recall@10 at 0.635 and costs the default weights 0.011 (0.551 → 0.540), as a wider
 * pool lets recency pull in more of the barely relevant.
 */
export const CANDIDATES_PER_ARM = MAX_RECALL_LIMIT;

/**
 * The most distinct lexemes of a query that rank (the first in the query; the rest are ignored).
 * LoCoMo's questions have at most 15 (median 5), so none of them is cut; a paragraph-long query
 * keeps its first ~60 words. Each term costs a lookup per memory scanned, in PostgreSQL and here.
 */
export const RECALL_MAX_TERMS = 32;

/**
 * The largest scope recall scans exactly: the scope's every memory read, its cosine and its words.
 * A user with more memories in scope is answered over all of them another way (repository.ts
 * findLargeScopeSignals: quantized vectors re-ranked, the text arm through the GIN index), measured
 * with `npm run bench -- scale` and `npm run bench -- locomo`; see the README's "Recall".
 */
export const RECALL_SCAN_LIMIT = 1000;

/**
 * How recall reads a scope: `scan` every memory of it (the newest RECALL_SCAN_LIMIT when it holds
 * more), `quantized` through the indexes (findLargeScopeSignals), `auto` the scan up to the limit
 * and the indexes past it. The first two exist for tests and benchmarks.
 */
export type RecallStrategy = 'auto' | 'scan' | 'quantized';

/**
 * Recalls of one tenant in the database at once, per process (the rest wait in line): with the
 * work of each bounded, this keeps one tenant from holding the whole pool and every core.
 */
export const RECALL_CONCURRENCY_PER_TENANT = 2;
const tenantLimiter = new KeyedLimiter(RECALL_CONCURRENCY_PER_TENANT);

export interface Candidate extends ArmSignals {
  importance: number;
  occurredAt: Date;
}

/** One request's candidates and its query's full BM25 (scoring.ts fullTextScore). */
export interface CandidatePool {
  candidates: Candidate[];
  fullTextScore: number;
}

/**
 * How many users per process are remembered as past the scan limit (their scope's size then), the
 * most recently asked: a key and a number each, so ~1 MB at most.
 */
export const KNOWN_LARGE_SCOPES = 10_000;

/**
 * Users last found with more current memories than the scan limit (how many, from the word counts),
 * by tenant and user. Their next recall goes to the large-scope path at once, without the scan's
 * first statement, which at their size only counts to learn it (a round trip: ~2 ms at 100,000
 * memories, `npm run bench -- biguser`). The large-scope path counts them again, so a user found
 * since to hold no more than the limit is scanned and forgotten here. Not for a request with a
 * filter or an as_of: its scope may be small whatever the user's size (an as_of to come leaves out
 * what expires before it, which the counts do not).
 */
const knownLargeScopes = new RecentMap<string, number>(KNOWN_LARGE_SCOPES);

/**
 * The hybrid candidate pool of one request, each with both arms' signals: the database's signals
 * (repository.ts), BM25 over them (bm25.ts), then the vector arm's and the text arm's top N merged.
 */
export async function collectCandidates(
  tx: Db,
  q: SignalsQuery,
  /** Told what was read, how, and whether the scan's statement ran (to count the scope, or to scan it). */
  observe?: (signals: RecallSignals, strategy: Exclude<RecallStrategy, 'auto'>, scanned: boolean) => void,
  strategy: RecallStrategy = 'auto',
): Promise<CandidatePool> {
  let signals: RecallSignals | undefined;
  let used: Exclude<RecallStrategy, 'auto'> = 'scan';
  let scanned = false;
  const user = `${q.tenantId}\u0000${q.userId}`;
  const wholeScope = !hasFilter(q) && q.asOf === undefined;
  if (strategy === 'auto' && wholeScope && (knownLargeScopes.get(user) ?? 0) > q.scanLimit) {
    const large = await findLargeScopeSignals(tx, q);
    if (large.documents > q.scanLimit) {
      signals = large;
      used = 'quantized';
    } else knownLargeScopes.delete(user);
  }
  if (!signals && strategy !== 'quantized') {
    // Auto: the scan's first step counts up to the limit; past it nothing was read, and the indexes answer.
    scanned = true;
    signals = await findRecallSignals(tx, { ...q, skipWhenCapped: strategy === 'auto' });
    if (strategy === 'auto' && signals.capped) signals = undefined;
  }
  if (!signals) {
    signals = await findLargeScopeSignals(tx, q);
    used = 'quantized';
  }
  if (strategy === 'auto' && used === 'quantized' && signals.documents > q.scanLimit) knownLargeScopes.set(user, signals.documents);
  observe?.(signals, used, scanned);
  return candidatesFromSignals(signals, q.poolSize);
}

/** The pure part of collectCandidates: BM25 over the signals, then the two arms merged. */
export function candidatesFromSignals(signals: RecallSignals, poolSize: number): CandidatePool {
  const terms = queryTerms(signals.lexemes);
  const documents = signals.rows.filter((r) => r.hits.size > 0).map((r) => ({ id: r.id, length: r.length, lexemes: r.hits }));
  const scores = bm25Scores(terms, documents, { documents: signals.documents, averageLength: signals.averageLength, frequencies: signals.frequencies });
  const rows = signals.rows.map((r) => ({ id: r.id, importance: r.importance, occurredAt: r.occurredAt, similarity: r.similarity, textScore: scores.get(r.id) ?? 0 }));
  return { candidates: mergeArms(rows, poolSize), fullTextScore: fullTextScore(terms, documents, signals.documents, signals.frequencies) };
}

/**
 * Each candidate's relevance from both arms, then the contract's weighted score: the best first.
 * `minRelevance` is held against each one's absolute relevance (scoring.ts absoluteRelevance).
 */
export function rankRecallCandidates(pool: CandidatePool, options: RankOptions, textWeight = TEXT_RELEVANCE_WEIGHT): Array<Ranked<RankableCandidate>> {
  const { candidates } = pool;
  // The text arm's best is among the candidates, so this is the best BM25 over the whole scope.
  let bestTextScore = 0;
  for (const c of candidates) if (c.textScore > bestTextScore) bestTextScore = c.textScore;
  return rankCandidates(
    candidates.map((c) => {
      const signals = { textScore: c.textScore, bestTextScore, similarity: c.similarity, fullTextScore: pool.fullTextScore };
      return {
        id: c.id,
        importance: c.importance,
        occurredAt: c.occurredAt,
        relevance: fuseRelevance(signals, textWeight),
        floorRelevance: absoluteRelevance(signals, textWeight),
      };
    }),
    options,
  );
}

export async function recall(ctx: RequestContext, body: RecallBody): Promise<{ memories: RecalledMemory[] }> {
  requireScope(ctx.principal, SCOPES.read);
  const started = performance.now();
  const userId = resolveUserId(ctx.principal, body.user_id);
  // The schema has checked them and filled the missing ones with 0.
  const weights = body.weights ?? DEFAULT_WEIGHTS;
  const asOf = body.as_of ? new Date(body.as_of) : undefined;
  const now = asOf ?? ctx.services.clock();
  const embedding = await embedQuery(ctx.services.embedder, ctx.principal.tenantId, body.query);
  const halfLifeHours = body.recency_half_life_hours ?? ctx.services.config.recall.halfLifeHours;
  const minRelevance = body.min_relevance ?? minRelevanceFor(ctx.services.config, ctx.services.embedder.kind);
  const { candidates, ranked } = await tenantLimiter.run(ctx.principal.tenantId, () => withTenant(ctx.services.database, ctx.principal.tenantId, async (tx) => {
    const pool = await collectCandidates(tx, {
      tenantId: ctx.principal.tenantId,
      userId,
      embedding,
      text: body.query,
      wordForms: queryWordForms(body.query),
      asOf,
      now,
      poolSize: CANDIDATES_PER_ARM,
      maxTerms: RECALL_MAX_TERMS,
      scanLimit: RECALL_SCAN_LIMIT,
      nearestByBits: ctx.services.embedder.kind !== 'lexical',
      agentId: body.filters?.agent_id,
      runId: body.filters?.run_id,
      categories: body.filters?.categories,
      metadata: body.filters?.metadata,
    });
    const textWeight = TEXT_RELEVANCE_WEIGHTS[ctx.services.embedder.kind];
    const scored = rankRecallCandidates(pool, { weights, halfLifeHours, now, minScore: body.min_score, minRelevance, limit: body.limit }, textWeight);
    // Only the memories that made the cut are read in full, the transaction's last statement.
    lastStatement(tx);
    const rows = new Map((await findMemoriesByIds(tx, ctx.principal.tenantId, userId, scored.map((c) => c.id))).map((m) => [m.id, m]));
    const ranked = scored.flatMap((c) => {
      const memory = rows.get(c.id);
      return memory ? [{ ...toMemoryDto(memory), score: c.score, scores: c.scores }] : [];
    });
    return { candidates: pool.candidates, ranked };
  }, { readOnly: true }));
  ctx.services.metrics?.observeRecall(performance.now() - started, candidates.length);
  return { memories: ranked };
}

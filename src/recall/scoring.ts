import type { EmbedderKind } from '../config.js';
import { bm25Idf, termDocumentFrequency, termsByLexeme } from './bm25.js';

/**
 * Recall's scoring core: pure functions, no I/O. Every component is in [0, 1] before weighting, so
 * the final score is in [0, 1] too and `min_score` means the same thing for every request.
 */

export interface RecallWeights {
  recency: number;
  importance: number;
  relevance: number;
}

/**
 * The contract's defaults. Measured on LoCoMo (`npm run bench:locomo -- --weights default`): 0.1 /
 * 0.1 / 0.8 gives recall@10 0.634 against 0.635 for relevance alone, where 0.3 / 0.2 / 0.5 let a
 * memory one half-life newer beat one up to 0.30 more relevant and gave 0.540.
 */
export const DEFAULT_WEIGHTS: Readonly<RecallWeights> = Object.freeze({
  recency: 0.1,
  importance: 0.1,
  relevance: 0.8,
});

export interface ComponentScores {
  recency: number;
  importance: number;
  relevance: number;
}

export interface RankableCandidate {
  id: string;
  /** 1–10. */
  importance: number;
  occurredAt: Date;
  /** Already in [0, 1] (see fuseRelevance). */
  relevance: number;
  /**
   * What `minRelevance` is compared with (see absoluteRelevance); the relevance itself when absent.
   * Never above `relevance`, so a memory shown with a relevance below the floor is always left out.
   */
  floorRelevance?: number;
}

export interface RankOptions {
  weights: RecallWeights;
  halfLifeHours: number;
  now: Date;
  minScore?: number;
  /** Leaves out candidates whose floorRelevance (else relevance) is below it; 0 keeps every one. */
  minRelevance?: number;
  limit: number;
}

export type Ranked<T> = T & { score: number; scores: ComponentScores };

export class InvalidWeightsError extends Error {
  readonly code = 'invalid_weights';
  /** The weight at fault, when one is (not when all three are 0). */
  readonly key: keyof RecallWeights | undefined;
  constructor(message: string, key?: keyof RecallWeights) {
    super(message);
    this.name = 'InvalidWeightsError';
    this.key = key;
  }
}

const WEIGHT_KEYS = ['recency', 'importance', 'relevance'] as const;
const MS_PER_HOUR = 3_600_000;

/** NaN counts as 0, so one bad input cannot poison the sort. */
function clamp01(value: number): number {
  if (!(value > 0)) return 0;
  return value > 1 ? 1 : value;
}

/**
 * The contract's rule: a weights object replaces the defaults whole, a missing key is 0; a
 * negative or non-finite weight, or all three 0, is refused.
 */
export function validateWeights(weights: Partial<RecallWeights>): RecallWeights {
  const result: RecallWeights = { recency: 0, importance: 0, relevance: 0 };
  for (const key of WEIGHT_KEYS) {
    const value = weights[key] ?? 0;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new InvalidWeightsError(`weights.${key} must be a finite number`, key);
    }
    if (value < 0) throw new InvalidWeightsError(`weights.${key} must not be negative`, key);
    result[key] = value;
  }
  if (result.recency + result.importance + result.relevance === 0) {
    throw new InvalidWeightsError('at least one weight must be greater than 0');
  }
  return result;
}

/** 1 at the moment it occurred, 0.5 one half-life later; a future `occurred_at` counts as now. */
export function recencyScore(occurredAt: Date, now: Date, halfLifeHours: number): number {
  if (!(halfLifeHours > 0) || !Number.isFinite(halfLifeHours)) {
    throw new RangeError(`halfLifeHours must be a positive finite number, got ${halfLifeHours}`);
  }
  const ageHours = Math.max(0, (now.getTime() - occurredAt.getTime()) / MS_PER_HOUR);
  return Math.exp((-Math.LN2 * ageHours) / halfLifeHours);
}

/** Importance 1–10 onto [0, 1]. */
export function importanceScore(importance: number): number {
  return clamp01((importance - 1) / 9);
}

/**
 * Cosine similarity onto [0, 1]. A fixed mapping rather than min-max over the candidate set, so a
 * score means the same across requests and a lone weak candidate is not promoted to 1.
 * Anti-correlated vectors carry no more relevance than orthogonal ones, hence the floor at 0.
 */
export function relevanceFromCosine(cosine: number): number {
  return clamp01(cosine);
}

/**
 * How the two arms make one relevance: the full-text (BM25) arm carries most of it. Measured on
 * LoCoMo with the offline lexical embedder, whose vectors mostly repeat what BM25 sees, text
 * weights from 0.5 to 1.0 all give recall@10 0.633–0.638 (noise: one question is 0.001), and
 * reciprocal rank fusion does worse (0.54 at k = 60, 0.59 at k = 10). 0.8 leaves the vector arm a
 * real say, which a semantic embedder will need; re-measure the split with one.
 */
export const TEXT_RELEVANCE_WEIGHT = 0.8;
export const VECTOR_RELEVANCE_WEIGHT = 1 - TEXT_RELEVANCE_WEIGHT;

/**
 * The text arm's share by embedder: the one place where the fusion depends on it. A semantic
 * embedder's cosine says what BM25 cannot (other words, same meaning), so it earns a larger share.
 * Local (USE lite) on LoCoMo (`npm run bench -- fusion`), recall@10 for a text share of 0.2 / 0.3 /
 * 0.4 / 0.5 / 0.6 / 0.7 / 0.8 / 1.0 without a floor: relevance only 0.655 / 0.665 / 0.665 / 0.662 /
 * 0.660 / 0.651 / 0.648 / 0.637; weights 0.1/0.1/0.8 0.612 / 0.640 / 0.646 / 0.646 / 0.645 / 0.644
 * / 0.639 / 0.636. But the cosine of unrelated text is ~0.3, so the more cosine in the relevance,
 * the higher the floor that keeps another user's questions to ~3 memories. Swept in steps of 0.01
 * (README, "Choosing the offline embedder"), share 0.5 with floor 0.26 keeps the most under both
 * rules (loss ≤ 0.01, unrelated ≤ 3). An OpenAI-compatible endpoint keeps the lexical split until
 * measured with one.
 */
export const TEXT_RELEVANCE_WEIGHTS: Readonly<Record<EmbedderKind, number>> = {
  lexical: TEXT_RELEVANCE_WEIGHT,
  local: 0.5,
  openai: TEXT_RELEVANCE_WEIGHT,
};

export interface RelevanceSignals {
  /** The candidate's BM25 score (0 when it shares no term with the query). */
  textScore: number;
  /** The best BM25 score among the user's memories in scope for this query (0 when none matched). */
  bestTextScore: number;
  /** Cosine similarity of the embeddings, in [-1, 1]. */
  similarity: number;
  /** The query's full BM25 (see fullTextScore): only absoluteRelevance reads it. */
  fullTextScore?: number;
}

/**
 * The relevance component, in [0, 1]: 0.8 · BM25 / best BM25 + 0.2 · max(0, cosine).
 *
 * BM25 has no fixed upper bound (it grows with the query's length and its terms' rarity), so it is
 * divided by the best BM25 of the request: the memory that matches the query best gets the full
 * text share, the others their fraction of it. That makes the text share relative to the request
 * (the best match of a vague query scores as high as the best match of a precise one), which is
 * what lets recency and importance be weighed against it on the same [0, 1] scale. Measured on
 * LoCoMo with the default weights, a saturating map x / (x + 5) leaves the text share so small
 * that recency buries the answer: recall@10 0.33, against 0.54 with the division by the best (the
 * same 0.634 with relevance alone). The cosine part stays absolute, so a request whose words match
 * nothing has relevance at most 0.2.
 */
export function fuseRelevance(signals: RelevanceSignals, textWeight = TEXT_RELEVANCE_WEIGHT): number {
  const text = signals.bestTextScore > 0 ? clamp01(signals.textScore / signals.bestTextScore) : 0;
  return clamp01(textWeight * text + (1 - textWeight) * relevanceFromCosine(signals.similarity));
}

/**
 * The relevance `min_relevance` is compared with: fuseRelevance with BM25 divided by the larger of
 * the request's best BM25 and the query's full BM25, the score of a memory holding every word of
 * the query once. fuseRelevance's text share is relative, so the best match of an off-topic query
 * still gets 0.8 and a floor on it would never leave that one out; this one says how much of the
 * query the memory matches. Dividing by at least the best keeps it at most fuseRelevance.
 * Measured on LoCoMo (README, "Recall"): asked another user's questions at limit 10, a floor of
 * 0.17 on it returns 2.97 memories on average instead of 10, at a cost of 0.008 in recall@10 with
 * the default weights, where the same floor on the relative relevance returns 10.
 */
export function absoluteRelevance(signals: RelevanceSignals, textWeight = TEXT_RELEVANCE_WEIGHT): number {
  const full = signals.fullTextScore ?? 0;
  return fuseRelevance({ ...signals, bestTextScore: full > signals.bestTextScore ? full : signals.bestTextScore }, textWeight);
}

/**
 * The query's full BM25: Σ idf over its terms, what a memory of average length holding each term
 * once would score (tf 1 at dl = avgdl gives idf · 1). A term no memory holds counts with df 0, so
 * a query about something the user never mentioned has a large full score that no memory comes
 * near. `documents` must hold every memory in scope that shares a term with the query, or
 * `frequencies` count them (repository.ts, a large scope).
 */
export function fullTextScore(
  terms: ReadonlyArray<readonly string[]>,
  documents: ReadonlyArray<{ lexemes: ReadonlyMap<string, number> }>,
  documentCount: number,
  frequencies?: ReadonlyMap<string, number>,
): number {
  // Linear in the documents' lexemes, as bm25Scores is, not terms × documents.
  const termsOf = termsByLexeme(terms);
  const df = new Array<number>(terms.length).fill(0);
  for (const d of documents) {
    const held = new Set<number>();
    for (const [lexeme, occurrences] of d.lexemes) if (occurrences > 0) for (const index of termsOf.get(lexeme) ?? []) held.add(index);
    for (const index of held) df[index]!++;
  }
  const collection = { documents: documentCount, frequencies };
  return df.reduce((full, n, index) => full + bm25Idf(Math.max(documentCount, n), termDocumentFrequency(n, terms[index]!, collection)), 0);
}

export interface ArmSignals {
  id: string;
  /** Cosine similarity, in [-1, 1]: the vector arm orders by it. */
  similarity: number;
  /** BM25, 0 when no term is shared: the text arm orders by it. */
  textScore: number;
}

/**
 * The candidate pool: the vector arm's top `poolSize` by similarity and the text arm's top
 * `poolSize` by BM25 (memories with a positive BM25 only), merged; ties by id ascending. Given
 * every memory of the scope that either arm could pick, this is exactly the two arms' union.
 */
export function mergeArms<T extends ArmSignals>(rows: readonly T[], poolSize: number): T[] {
  const vector = topBy(rows, (r) => r.similarity, poolSize);
  const text = topBy(
    rows.filter((r) => r.textScore > 0),
    (r) => r.textScore,
    poolSize,
  );
  return [...new Set([...vector, ...text])];
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The `n` rows with the highest key, ties by id ascending; a NaN key counts as the lowest. A
 * numeric sort of the keys alone finds the n-th highest, and only the rows tied with it are sorted
 * by id: sorting every row with a comparator cost ~150 µs a recall on LoCoMo (~430 rows), a fifth
 * of its time in ranking code.
 */
export function topBy<T extends { id: string }>(rows: readonly T[], key: (row: T) => number, n: number): T[] {
  if (n <= 0) return [];
  if (rows.length <= n) return [...rows];
  const keys = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const k = key(rows[i]!);
    keys[i] = Number.isNaN(k) ? Number.NEGATIVE_INFINITY : k;
  }
  const threshold = keys.slice().sort()[rows.length - n]!;
  const above: T[] = [];
  const tied: T[] = [];
  for (let i = 0; i < rows.length; i++) {
    if (keys[i]! > threshold) above.push(rows[i]!);
    else if (keys[i] === threshold) tied.push(rows[i]!);
  }
  tied.sort(byId);
  for (let i = 0; above.length < n; i++) above.push(tied[i]!);
  return above;
}

/**
 * Scores, filters and orders candidates: best first, ties by `id` ascending (code-unit order, not
 * locale order, so the same request always gives the same list).
 */
export function rankCandidates<T extends RankableCandidate>(candidates: readonly T[], opts: RankOptions): Array<Ranked<T>> {
  const given = validateWeights(opts.weights);
  // The score is invariant to the weights' scale; dividing by the largest keeps the sum finite and
  // non-zero (1e308 + 1e308 would be Infinity and every score NaN, a denormal weight would be 0).
  const largest = Math.max(given.recency, given.importance, given.relevance);
  const weights = { recency: given.recency / largest, importance: given.importance / largest, relevance: given.relevance / largest };
  const total = weights.recency + weights.importance + weights.relevance;
  const minScore = opts.minScore;
  const minRelevance = opts.minRelevance;
  const limit = Math.max(0, Math.floor(opts.limit));

  // Scored first and copied onto the candidate's fields only for those kept: a pool holds up to
  // two arms of candidates, most of which do not make the cut.
  const scored: Array<{ candidate: T; score: number; scores: ComponentScores }> = [];
  for (const candidate of candidates) {
    if (minRelevance !== undefined && minRelevance > 0 && clamp01(candidate.floorRelevance ?? candidate.relevance) < minRelevance) continue;
    const scores: ComponentScores = {
      recency: recencyScore(candidate.occurredAt, opts.now, opts.halfLifeHours),
      importance: importanceScore(candidate.importance),
      relevance: clamp01(candidate.relevance),
    };
    const score =
      (weights.recency * scores.recency + weights.importance * scores.importance + weights.relevance * scores.relevance) /
      total;
    if (minScore !== undefined && score < minScore) continue;
    scored.push({ candidate, score, scores });
  }
  scored.sort((a, b) => b.score - a.score || byId(a.candidate, b.candidate));
  const kept = scored.length > limit ? scored.slice(0, limit) : scored;
  return kept.map(({ candidate, score, scores }) => ({ ...candidate, score, scores }));
}

import { describe, expect, it } from 'vitest';
import { DEFAULT_WEIGHTS, fuseRelevance, rankCandidates, type RecallWeights } from '../../src/recall/scoring.js';

/**
 * A fixed candidate set with orders worked out by hand (half-life 30 days, so recency is
 * 2^(-age_days / 30)). A change to the scoring formula that moves any of these orders must be a
 * deliberate one: update the literals only after checking the new order is the intended one.
 */
const NOW = new Date('2024-06-01T00:00:00Z');
const HALF_LIFE_HOURS = 720;

const CANDIDATES = [
  // 366 days old (2024 is a leap year): recency ~0.0002.
  { id: 'm-allergy', importance: 10, occurredAt: new Date('2023-06-01T00:00:00Z'), relevance: 0.62 },
  // 12 hours old: recency ~0.9885.
  { id: 'm-coffee', importance: 3, occurredAt: new Date('2024-05-31T12:00:00Z'), relevance: 0.35 },
  // Identical to m-coffee but for the id: the tie must break by id.
  { id: 'm-cafe', importance: 3, occurredAt: new Date('2024-05-31T12:00:00Z'), relevance: 0.35 },
  // 61 days: recency ~0.2443.
  { id: 'm-berlin', importance: 7, occurredAt: new Date('2024-04-01T00:00:00Z'), relevance: 0.81 },
  // Exactly one half-life: recency 0.5.
  { id: 'm-sister', importance: 6, occurredAt: new Date('2024-05-02T00:00:00Z'), relevance: 0.52 },
  // 7 days: recency ~0.8507.
  { id: 'm-guitar', importance: 4, occurredAt: new Date('2024-05-25T00:00:00Z'), relevance: 0.2 },
  // 138 days: recency ~0.0412.
  { id: 'm-marathon', importance: 8, occurredAt: new Date('2024-01-15T00:00:00Z'), relevance: 0.74 },
  // 16 days: recency ~0.6910.
  { id: 'm-cat', importance: 5, occurredAt: new Date('2024-05-16T00:00:00Z'), relevance: 0.5 },
  // Occurs after "now": recency clamps to 1.
  { id: 'm-future', importance: 2, occurredAt: new Date('2024-06-03T00:00:00Z'), relevance: 0.1 },
];

function rank(weights: RecallWeights) {
  return rankCandidates(CANDIDATES, { weights, halfLifeHours: HALF_LIFE_HOURS, now: NOW, limit: 100 });
}

describe('recall scoring golden set', () => {
  it('orders by the default weights 0.1 / 0.1 / 0.8: relevance leads, recency and importance break near-ties', () => {
    expect(DEFAULT_WEIGHTS).toEqual({ recency: 0.1, importance: 0.1, relevance: 0.8 });
    const ranked = rank(DEFAULT_WEIGHTS);
    expect(ranked.map((c) => c.id)).toEqual([
      'm-berlin',
      'm-marathon',
      'm-allergy',
      'm-sister',
      'm-cat',
      'm-cafe',
      'm-coffee',
      'm-guitar',
      'm-future',
    ]);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    // berlin: 0.1 · 0.2443 + 0.1 · 6/9 + 0.8 · 0.81; allergy: 0.1 · 0.0002 + 0.1 · 1 + 0.8 · 0.62.
    expect(scores['m-berlin']).toBeCloseTo(0.7391, 4);
    expect(scores['m-marathon']).toBeCloseTo(0.6739, 4);
    expect(scores['m-allergy']).toBeCloseTo(0.596, 4);
    expect(scores['m-sister']).toBeCloseTo(0.5216, 4);
    expect(scores['m-cat']).toBeCloseTo(0.5135, 4);
    expect(scores['m-cafe']).toBeCloseTo(0.4011, 4);
    expect(scores['m-guitar']).toBeCloseTo(0.2784, 4);
    expect(scores['m-future']).toBeCloseTo(0.1911, 4);
  });

  it('orders by the weights 0.3 / 0.2 / 0.5 (the defaults before v1.1)', () => {
    const ranked = rank({ recency: 0.3, importance: 0.2, relevance: 0.5 });
    expect(ranked.map((c) => c.id)).toEqual([
      'm-berlin',
      'm-cat',
      'm-marathon',
      'm-sister',
      'm-cafe',
      'm-coffee',
      'm-allergy',
      'm-guitar',
      'm-future',
    ]);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    expect(scores['m-berlin']).toBeCloseTo(0.6116, 4);
    expect(scores['m-cat']).toBeCloseTo(0.5462, 4);
    expect(scores['m-marathon']).toBeCloseTo(0.5379, 4);
    expect(scores['m-sister']).toBeCloseTo(0.5211, 4);
    expect(scores['m-cafe']).toBeCloseTo(0.516, 4);
    expect(scores['m-allergy']).toBeCloseTo(0.5101, 4);
    expect(scores['m-guitar']).toBeCloseTo(0.4219, 4);
    expect(scores['m-future']).toBeCloseTo(0.3722, 4);
  });

  it('orders by relevance alone with weights 0 / 0 / 1', () => {
    const ranked = rank({ recency: 0, importance: 0, relevance: 1 });
    expect(ranked.map((c) => c.id)).toEqual([
      'm-berlin',
      'm-marathon',
      'm-allergy',
      'm-sister',
      'm-cat',
      'm-cafe',
      'm-coffee',
      'm-guitar',
      'm-future',
    ]);
    expect(ranked.map((c) => c.score)).toEqual([0.81, 0.74, 0.62, 0.52, 0.5, 0.35, 0.35, 0.2, 0.1]);
  });

  it('orders mostly by recency with weights 0.8 / 0.1 / 0.1', () => {
    const ranked = rank({ recency: 0.8, importance: 0.1, relevance: 0.1 });
    expect(ranked.map((c) => c.id)).toEqual([
      'm-cafe',
      'm-coffee',
      'm-future',
      'm-guitar',
      'm-cat',
      'm-sister',
      'm-berlin',
      'm-marathon',
      'm-allergy',
    ]);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    expect(scores['m-cafe']).toBeCloseTo(0.848, 3);
    expect(scores['m-future']).toBeCloseTo(0.8211, 4);
    expect(scores['m-allergy']).toBeCloseTo(0.1622, 4);
  });

  it('gives the same order whatever order the candidates arrive in', () => {
    const weights = { recency: 0.3, importance: 0.2, relevance: 0.5 };
    const forward = rank(weights).map((c) => c.id);
    const reversed = rankCandidates([...CANDIDATES].reverse(), {
      weights,
      halfLifeHours: HALF_LIFE_HOURS,
      now: NOW,
      limit: 100,
    }).map((c) => c.id);
    expect(reversed).toEqual(forward);
  });
});

/**
 * The same, one step earlier: candidates as the two arms deliver them (a raw BM25 score and a
 * cosine similarity), fused into relevance = 0.8 · BM25 / best BM25 + 0.2 · max(0, cosine), then
 * ranked. Relevance by hand (best BM25 9.6): allergy 0.8 + 0.084 = 0.884, marathon 0.7 + 0.03 =
 * 0.73, berlin 0.6 + 0.11 = 0.71, sister 0.4 + 0.04 = 0.44, guitar 0.2 + 0.122 = 0.322, coffee and
 * cafe (no shared term) 0.076, unrelated (negative cosine) 0.
 */
const ARMS = [
  { id: 'f-allergy', importance: 10, occurredAt: new Date('2023-06-01T00:00:00Z'), textScore: 9.6, similarity: 0.42 },
  { id: 'f-coffee', importance: 3, occurredAt: new Date('2024-05-31T12:00:00Z'), textScore: 0, similarity: 0.38 },
  { id: 'f-cafe', importance: 3, occurredAt: new Date('2024-05-31T12:00:00Z'), textScore: 0, similarity: 0.38 },
  { id: 'f-berlin', importance: 7, occurredAt: new Date('2024-04-01T00:00:00Z'), textScore: 7.2, similarity: 0.55 },
  { id: 'f-sister', importance: 6, occurredAt: new Date('2024-05-02T00:00:00Z'), textScore: 4.8, similarity: 0.2 },
  { id: 'f-guitar', importance: 4, occurredAt: new Date('2024-05-25T00:00:00Z'), textScore: 2.4, similarity: 0.61 },
  { id: 'f-marathon', importance: 8, occurredAt: new Date('2024-01-15T00:00:00Z'), textScore: 8.4, similarity: 0.15 },
  { id: 'f-unrelated', importance: 5, occurredAt: new Date('2024-05-16T00:00:00Z'), textScore: 0, similarity: -0.3 },
];

function rankFused(weights: RecallWeights) {
  const bestTextScore = Math.max(...ARMS.map((c) => c.textScore));
  const candidates = ARMS.map((c) => ({ ...c, relevance: fuseRelevance({ textScore: c.textScore, bestTextScore, similarity: c.similarity }) }));
  return rankCandidates(candidates, { weights, halfLifeHours: HALF_LIFE_HOURS, now: NOW, limit: 100 });
}

describe('recall scoring golden set, from the arms\' raw signals', () => {
  it('fuses BM25 and cosine into the relevance worked out by hand', () => {
    const relevance = Object.fromEntries(rankFused({ recency: 0, importance: 0, relevance: 1 }).map((c) => [c.id, c.scores.relevance]));
    expect(relevance['f-allergy']).toBeCloseTo(0.884, 12);
    expect(relevance['f-marathon']).toBeCloseTo(0.73, 12);
    expect(relevance['f-berlin']).toBeCloseTo(0.71, 12);
    expect(relevance['f-sister']).toBeCloseTo(0.44, 12);
    expect(relevance['f-guitar']).toBeCloseTo(0.322, 12);
    expect(relevance['f-coffee']).toBeCloseTo(0.076, 12);
    expect(relevance['f-unrelated']).toBe(0);
  });

  it('orders by the default weights 0.1 / 0.1 / 0.8', () => {
    const ranked = rankFused(DEFAULT_WEIGHTS);
    expect(ranked.map((c) => c.id)).toEqual(['f-allergy', 'f-marathon', 'f-berlin', 'f-sister', 'f-guitar', 'f-cafe', 'f-coffee', 'f-unrelated']);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    expect(scores['f-allergy']).toBeCloseTo(0.8072, 4);
    expect(scores['f-marathon']).toBeCloseTo(0.6659, 4);
    expect(scores['f-berlin']).toBeCloseTo(0.6591, 4);
    expect(scores['f-guitar']).toBeCloseTo(0.376, 4);
    expect(scores['f-unrelated']).toBeCloseTo(0.1135, 4);
  });

  it('orders by the weights 0.3 / 0.2 / 0.5 (the defaults before v1.1)', () => {
    const ranked = rankFused({ recency: 0.3, importance: 0.2, relevance: 0.5 });
    expect(ranked.map((c) => c.id)).toEqual(['f-allergy', 'f-berlin', 'f-marathon', 'f-guitar', 'f-sister', 'f-cafe', 'f-coffee', 'f-unrelated']);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    expect(scores['f-allergy']).toBeCloseTo(0.6421, 4);
    expect(scores['f-berlin']).toBeCloseTo(0.5616, 4);
    expect(scores['f-guitar']).toBeCloseTo(0.4829, 4);
    expect(scores['f-sister']).toBeCloseTo(0.4811, 4);
    expect(scores['f-unrelated']).toBeCloseTo(0.2962, 4);
  });

  it('orders by relevance alone with weights 0 / 0 / 1: BM25 leads, cosine only adds', () => {
    const ranked = rankFused({ recency: 0, importance: 0, relevance: 1 });
    expect(ranked.map((c) => c.id)).toEqual(['f-allergy', 'f-marathon', 'f-berlin', 'f-sister', 'f-guitar', 'f-cafe', 'f-coffee', 'f-unrelated']);
  });

  it('orders mostly by recency with weights 0.8 / 0.1 / 0.1', () => {
    const ranked = rankFused({ recency: 0.8, importance: 0.1, relevance: 0.1 });
    expect(ranked.map((c) => c.id)).toEqual(['f-cafe', 'f-coffee', 'f-guitar', 'f-unrelated', 'f-sister', 'f-berlin', 'f-allergy', 'f-marathon']);
    const scores = Object.fromEntries(ranked.map((c) => [c.id, c.score]));
    expect(scores['f-cafe']).toBeCloseTo(0.8206, 4);
    expect(scores['f-marathon']).toBeCloseTo(0.1838, 4);
  });
});

import { describe, expect, it } from 'vitest';
import {
  DEFAULT_WEIGHTS,
  InvalidWeightsError,
  TEXT_RELEVANCE_WEIGHT,
  VECTOR_RELEVANCE_WEIGHT,
  absoluteRelevance,
  fullTextScore,
  fuseRelevance,
  importanceScore,
  mergeArms,
  rankCandidates,
  recencyScore,
  relevanceFromCosine,
  validateWeights,
} from '../../src/recall/scoring.js';
import { bm25Idf } from '../../src/recall/bm25.js';

const NOW = new Date('2024-06-01T00:00:00Z');
const hoursAgo = (hours: number) => new Date(NOW.getTime() - hours * 3_600_000);

describe('recencyScore', () => {
  it('is 1 at age 0, 0.5 after one half-life and 0.25 after two', () => {
    expect(recencyScore(NOW, NOW, 24)).toBe(1);
    expect(recencyScore(hoursAgo(24), NOW, 24)).toBeCloseTo(0.5, 12);
    expect(recencyScore(hoursAgo(48), NOW, 24)).toBeCloseTo(0.25, 12);
  });

  it('scales with the half-life', () => {
    expect(recencyScore(hoursAgo(720), NOW, 720)).toBeCloseTo(0.5, 12);
    expect(recencyScore(hoursAgo(720), NOW, 240)).toBeCloseTo(0.125, 12);
  });

  it('clamps a future occurred_at to 1 rather than above it', () => {
    expect(recencyScore(new Date(NOW.getTime() + 86_400_000), NOW, 24)).toBe(1);
  });

  it('decreases strictly with age', () => {
    expect(recencyScore(hoursAgo(1), NOW, 720)).toBeGreaterThan(recencyScore(hoursAgo(2), NOW, 720));
  });

  it('refuses a half-life that is not positive', () => {
    expect(() => recencyScore(NOW, NOW, 0)).toThrow(RangeError);
    expect(() => recencyScore(NOW, NOW, -5)).toThrow(RangeError);
    expect(() => recencyScore(NOW, NOW, Number.NaN)).toThrow(RangeError);
  });
});

describe('importanceScore', () => {
  it('maps 1..10 linearly onto 0..1', () => {
    expect(importanceScore(1)).toBe(0);
    expect(importanceScore(10)).toBe(1);
    expect(importanceScore(5.5)).toBeCloseTo(0.5, 12);
    expect(importanceScore(4)).toBeCloseTo(1 / 3, 12);
  });

  it('clamps values outside 1..10', () => {
    expect(importanceScore(0)).toBe(0);
    expect(importanceScore(-3)).toBe(0);
    expect(importanceScore(12)).toBe(1);
  });
});

describe('relevanceFromCosine', () => {
  it('keeps [0, 1] as is and floors negative similarity at 0', () => {
    expect(relevanceFromCosine(0.73)).toBe(0.73);
    expect(relevanceFromCosine(0)).toBe(0);
    expect(relevanceFromCosine(-0.4)).toBe(0);
    expect(relevanceFromCosine(-1)).toBe(0);
  });

  it('caps rounding overshoot at 1 and treats NaN as no relevance', () => {
    expect(relevanceFromCosine(1.0000000002)).toBe(1);
    expect(relevanceFromCosine(Number.NaN)).toBe(0);
  });
});

describe('fuseRelevance', () => {
  it('weighs the text arm 0.8 and the vector arm 0.2', () => {
    expect(TEXT_RELEVANCE_WEIGHT).toBe(0.8);
    expect(TEXT_RELEVANCE_WEIGHT + VECTOR_RELEVANCE_WEIGHT).toBeCloseTo(1, 15);
  });

  it('gives the best BM25 the full text share and the others their fraction of it', () => {
    expect(fuseRelevance({ textScore: 7.5, bestTextScore: 7.5, similarity: 0.5 })).toBeCloseTo(0.8 + 0.2 * 0.5, 12);
    expect(fuseRelevance({ textScore: 3, bestTextScore: 12, similarity: 0.25 })).toBeCloseTo(0.8 * 0.25 + 0.2 * 0.25, 12);
  });

  it('is the vector share alone when nothing shares a term with the query', () => {
    expect(fuseRelevance({ textScore: 0, bestTextScore: 0, similarity: 0.6 })).toBeCloseTo(0.12, 12);
    expect(fuseRelevance({ textScore: 0, bestTextScore: 4, similarity: 0.6 })).toBeCloseTo(0.12, 12);
  });

  it('stays in [0, 1]: negative cosine floors at 0, rounding and bad inputs cannot escape', () => {
    expect(fuseRelevance({ textScore: 0, bestTextScore: 0, similarity: -0.9 })).toBe(0);
    expect(fuseRelevance({ textScore: 5.0000001, bestTextScore: 5, similarity: 1.0000001 })).toBe(1);
    expect(fuseRelevance({ textScore: Number.NaN, bestTextScore: 5, similarity: Number.NaN })).toBe(0);
    expect(fuseRelevance({ textScore: 1, bestTextScore: Number.POSITIVE_INFINITY, similarity: 0.5 })).toBeCloseTo(0.1, 12);
  });

  it('orders by BM25 first, with cosine breaking near-ties', () => {
    const best = 10;
    const a = fuseRelevance({ textScore: 9, bestTextScore: best, similarity: 0.1 });
    const b = fuseRelevance({ textScore: 8, bestTextScore: best, similarity: 0.6 });
    const c = fuseRelevance({ textScore: 6, bestTextScore: best, similarity: 0.9 });
    // A tenth of the best BM25 (0.08) is worth 0.4 of cosine: 0.74 < 0.76, and 0.66 below both.
    expect(a).toBeCloseTo(0.74, 12);
    expect(b).toBeGreaterThan(a);
    expect(a).toBeGreaterThan(c);
  });
});

describe('absoluteRelevance and fullTextScore', () => {
  it("divides BM25 by the query's full score when no memory comes near it, so an off-topic best match stays low", () => {
    // The best match holds a fifth of the query's full BM25: relative relevance calls it 0.8.
    const signals = { textScore: 2, bestTextScore: 2, similarity: 0.1, fullTextScore: 10 };
    expect(fuseRelevance(signals)).toBeCloseTo(0.8 + 0.02, 12);
    expect(absoluteRelevance(signals)).toBeCloseTo(0.8 * 0.2 + 0.02, 12);
  });

  it('equals the relative relevance when the best match reaches the full score, and never exceeds it', () => {
    expect(absoluteRelevance({ textScore: 6, bestTextScore: 12, similarity: 0.5, fullTextScore: 9 })).toBeCloseTo(0.8 * 0.5 + 0.1, 12);
    for (const [t, best, full, cos] of [[1, 3, 0, 0.2], [3, 3, 40, 0.9], [0, 0, 7, 0.4], [5, 5, 5, 1]] as const) {
      const signals = { textScore: t, bestTextScore: best, similarity: cos, fullTextScore: full };
      expect(absoluteRelevance(signals)).toBeLessThanOrEqual(fuseRelevance(signals));
    }
  });

  it('sums the idf of every query term, a term no memory holds at df 0', () => {
    const docs = [{ lexemes: new Map([['pizza', 1]]) }, { lexemes: new Map([['pizza', 2], ['rome', 1]]) }];
    const full = fullTextScore([['pizza'], ['rome'], ['franc']], docs, 10);
    expect(full).toBeCloseTo(bm25Idf(10, 2) + bm25Idf(10, 1) + bm25Idf(10, 0), 12);
    expect(fullTextScore([], docs, 10)).toBe(0);
    // A term made of an irregular word's forms counts once, held by a memory holding any form.
    expect(fullTextScore([['meet', 'met']], [{ lexemes: new Map([['met', 1]]) }], 4)).toBeCloseTo(bm25Idf(4, 1), 12);
  });
});

describe('mergeArms', () => {
  const row = (id: string, similarity: number, textScore: number) => ({ id, similarity, textScore });
  const rows = [row('a', 0.9, 0), row('b', 0.1, 8), row('c', 0.5, 2), row('d', 0.5, 0), row('e', 0.2, 8), row('f', 0.05, 0)];

  it('unites the top N by similarity and the top N by BM25', () => {
    expect(mergeArms(rows, 2).map((r) => r.id).sort()).toEqual(['a', 'b', 'c', 'e']); // c beats d on id
    expect(mergeArms(rows, 1).map((r) => r.id).sort()).toEqual(['a', 'b']);
  });

  it('breaks ties by id in both arms, and takes no BM25 candidate that shares no term', () => {
    // c and d tie on similarity, b and e on BM25: the lower id wins each.
    expect(mergeArms([row('d', 0.5, 0), row('c', 0.5, 0)], 1).map((r) => r.id)).toEqual(['c']);
    expect(mergeArms([row('e', 0, 8), row('b', 0, 8)], 1).map((r) => r.id)).toEqual(['b']);
    expect(mergeArms([row('x', 0.3, 0), row('y', 0.2, 0)], 1).map((r) => r.id)).toEqual(['x']);
  });

  it('picks what sorting every row would, with many ties and NaN counted lowest', () => {
    // The reference: each arm sorted whole (similarity, then BM25, descending; ties by id).
    let seed = 7;
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    const many = Array.from({ length: 400 }, (_, i) =>
      row(`m${(i * 7919) % 400}`, i % 37 === 0 ? Number.NaN : Math.round(random() * 20) / 20, random() < 0.4 ? 0 : Math.round(random() * 10)),
    );
    const key = (k: number) => (Number.isNaN(k) ? Number.NEGATIVE_INFINITY : k);
    const reference = (n: number) => {
      const byKey = (pick: (r: (typeof many)[number]) => number) => (a: (typeof many)[number], b: (typeof many)[number]) =>
        key(pick(b)) - key(pick(a)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      const vector = [...many].sort(byKey((r) => r.similarity)).slice(0, n);
      const text = many.filter((r) => r.textScore > 0).sort(byKey((r) => r.textScore)).slice(0, n);
      return [...new Set([...vector, ...text])].map((r) => r.id).sort();
    };
    for (const n of [1, 5, 50, 399, 400]) expect(mergeArms(many, n).map((r) => r.id).sort()).toEqual(reference(n));
    expect(mergeArms([row('nan', Number.NaN, 0), row('low', -0.5, 0)], 1).map((r) => r.id)).toEqual(['low']);
  });

  it('keeps everyone when the pool is larger than the set, each once', () => {
    const merged = mergeArms(rows, 100);
    expect(merged).toHaveLength(rows.length);
    expect(new Set(merged).size).toBe(rows.length);
  });
});

describe('validateWeights', () => {
  it('treats a missing key as 0 instead of falling back to the default', () => {
    expect(validateWeights({ relevance: 1 })).toEqual({ recency: 0, importance: 0, relevance: 1 });
    expect(validateWeights({ recency: 2, importance: 1 })).toEqual({ recency: 2, importance: 1, relevance: 0 });
  });

  it('accepts the defaults unchanged', () => {
    expect(validateWeights(DEFAULT_WEIGHTS)).toEqual({ recency: 0.1, importance: 0.1, relevance: 0.8 });
  });

  it('refuses a negative weight, naming it', () => {
    expect(() => validateWeights({ recency: -0.1, relevance: 1 })).toThrow(InvalidWeightsError);
    expect(() => validateWeights({ recency: -0.1, relevance: 1 })).toThrow(/recency/);
  });

  it('refuses non-finite weights', () => {
    expect(() => validateWeights({ importance: Number.POSITIVE_INFINITY })).toThrow(InvalidWeightsError);
    expect(() => validateWeights({ relevance: Number.NaN, recency: 1 })).toThrow(/relevance/);
  });

  it('refuses all-zero and empty weights', () => {
    expect(() => validateWeights({ recency: 0, importance: 0, relevance: 0 })).toThrow(InvalidWeightsError);
    expect(() => validateWeights({})).toThrow(InvalidWeightsError);
  });

  it('carries a code for the HTTP layer to map', () => {
    try {
      validateWeights({});
      expect.unreachable('validateWeights({}) should throw');
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidWeightsError);
      expect((error as InvalidWeightsError).code).toBe('invalid_weights');
    }
  });
});

describe('rankCandidates', () => {
  const base = { weights: DEFAULT_WEIGHTS, halfLifeHours: 720, now: NOW, limit: 10 };

  it('computes the weighted mean of the components and reports each component', () => {
    const [only] = rankCandidates([{ id: 'a', importance: 10, occurredAt: hoursAgo(720), relevance: 0.4 }], base);
    expect(only).toBeDefined();
    expect(only!.scores.recency).toBeCloseTo(0.5, 12);
    expect(only!.scores.importance).toBe(1);
    expect(only!.scores.relevance).toBe(0.4);
    // (0.1·0.5 + 0.1·1 + 0.8·0.4) / 1.0
    expect(only!.score).toBeCloseTo(0.47, 12);
  });

  it('divides by the sum of the weights, so scaling every weight changes nothing', () => {
    const candidate = { id: 'a', importance: 7, occurredAt: hoursAgo(100), relevance: 0.6 };
    const [one] = rankCandidates([candidate], base);
    const [ten] = rankCandidates([candidate], { ...base, weights: { recency: 1, importance: 1, relevance: 8 } });
    expect(ten!.score).toBeCloseTo(one!.score, 12);
  });

  it('keeps the candidate fields on the result', () => {
    const [only] = rankCandidates(
      [{ id: 'a', importance: 5, occurredAt: NOW, relevance: 0.5, content: 'likes tea' }],
      base,
    );
    expect(only!.content).toBe('likes tea');
    expect(only!.id).toBe('a');
  });

  it('breaks ties by id ascending in code-unit order, whatever the input order', () => {
    const same = { importance: 5, occurredAt: hoursAgo(10), relevance: 0.5 };
    const input = [
      { id: 'b', ...same },
      { id: 'B', ...same },
      { id: 'a', ...same },
      { id: 'a0', ...same },
    ];
    expect(rankCandidates(input, base).map((c) => c.id)).toEqual(['B', 'a', 'a0', 'b']);
    expect(rankCandidates([...input].reverse(), base).map((c) => c.id)).toEqual(['B', 'a', 'a0', 'b']);
  });

  it('drops candidates below minScore and keeps those exactly at it', () => {
    const weights = { recency: 0, importance: 0, relevance: 1 };
    const input = [
      { id: 'low', importance: 5, occurredAt: NOW, relevance: 0.2 },
      { id: 'edge', importance: 5, occurredAt: NOW, relevance: 0.5 },
      { id: 'high', importance: 5, occurredAt: NOW, relevance: 0.9 },
    ];
    expect(rankCandidates(input, { ...base, weights, minScore: 0.5 }).map((c) => c.id)).toEqual(['high', 'edge']);
    expect(rankCandidates(input, { ...base, weights }).map((c) => c.id)).toEqual(['high', 'edge', 'low']);
  });

  it('leaves out a candidate whose floor relevance is below minRelevance, however recent or important; 0 keeps all', () => {
    const input = [
      // Fresh and of the highest importance, but its absolute relevance is under the floor.
      { id: 'fresh', importance: 10, occurredAt: NOW, relevance: 0.9, floorRelevance: 0.1 },
      { id: 'edge', importance: 1, occurredAt: hoursAgo(5000), relevance: 0.6, floorRelevance: 0.3 },
      // Without a floor relevance the relevance itself is held against the floor.
      { id: 'plain', importance: 5, occurredAt: hoursAgo(10), relevance: 0.2 },
    ];
    expect(rankCandidates(input, { ...base, minRelevance: 0.3 }).map((c) => c.id)).toEqual(['edge']);
    expect(rankCandidates(input, { ...base, minRelevance: 0 }).map((c) => c.id)).toEqual(['fresh', 'edge', 'plain']);
    expect(rankCandidates(input, base).map((c) => c.id)).toEqual(['fresh', 'edge', 'plain']);
    // The floor reads the floor relevance; the score still weighs the relevance.
    expect(rankCandidates(input, { ...base, minRelevance: 0.3 })[0]!.scores.relevance).toBe(0.6);
  });

  it('returns at most limit, the best ones', () => {
    const input = Array.from({ length: 20 }, (_, i) => ({
      id: `m${String(i).padStart(2, '0')}`,
      importance: 5,
      occurredAt: NOW,
      relevance: i / 20,
    }));
    const ranked = rankCandidates(input, { ...base, limit: 3 });
    expect(ranked.map((c) => c.id)).toEqual(['m19', 'm18', 'm17']);
    expect(rankCandidates(input, { ...base, limit: 0 })).toEqual([]);
  });

  it('applies minScore before limit', () => {
    const weights = { recency: 0, importance: 0, relevance: 1 };
    const input = [
      { id: 'a', importance: 5, occurredAt: NOW, relevance: 0.9 },
      { id: 'b', importance: 5, occurredAt: NOW, relevance: 0.1 },
      { id: 'c', importance: 5, occurredAt: NOW, relevance: 0.8 },
    ];
    expect(rankCandidates(input, { ...base, weights, minScore: 0.5, limit: 5 }).map((c) => c.id)).toEqual(['a', 'c']);
  });

  it('relevance-only and recency-only weightings reverse an old-but-relevant vs new-but-vague pair', () => {
    const input = [
      { id: 'old-relevant', importance: 5, occurredAt: hoursAgo(24 * 365), relevance: 0.95 },
      { id: 'new-vague', importance: 5, occurredAt: hoursAgo(1), relevance: 0.05 },
      { id: 'middle', importance: 5, occurredAt: hoursAgo(24 * 30), relevance: 0.5 },
    ];
    const byRelevance = rankCandidates(input, { ...base, weights: { recency: 0, importance: 0, relevance: 1 } });
    const byRecency = rankCandidates(input, { ...base, weights: { recency: 1, importance: 0, relevance: 0 } });
    expect(byRelevance.map((c) => c.id)).toEqual(['old-relevant', 'middle', 'new-vague']);
    expect(byRecency.map((c) => c.id)).toEqual(['new-vague', 'middle', 'old-relevant']);
  });

  it('importance-only weighting follows importance', () => {
    const input = [
      { id: 'x', importance: 2, occurredAt: NOW, relevance: 1 },
      { id: 'y', importance: 9, occurredAt: hoursAgo(10_000), relevance: 0 },
    ];
    const ranked = rankCandidates(input, { ...base, weights: { recency: 0, importance: 1, relevance: 0 } });
    expect(ranked.map((c) => c.id)).toEqual(['y', 'x']);
  });

  it('refuses invalid weights with InvalidWeightsError', () => {
    const input = [{ id: 'a', importance: 5, occurredAt: NOW, relevance: 0.5 }];
    expect(() => rankCandidates(input, { ...base, weights: { recency: 0, importance: 0, relevance: 0 } })).toThrow(
      InvalidWeightsError,
    );
    expect(() => rankCandidates(input, { ...base, weights: { recency: -1, importance: 1, relevance: 1 } })).toThrow(
      InvalidWeightsError,
    );
  });

  it('does not reorder or mutate its input', () => {
    const input = [
      { id: 'b', importance: 1, occurredAt: NOW, relevance: 0.1 },
      { id: 'a', importance: 10, occurredAt: NOW, relevance: 0.9 },
    ];
    rankCandidates(input, base);
    expect(input.map((c) => c.id)).toEqual(['b', 'a']);
    expect(input[0]).not.toHaveProperty('score');
  });
});

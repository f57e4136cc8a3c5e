import { describe, expect, it } from 'vitest';
import { rankCandidates, type RecallWeights } from '../../src/recall/scoring.js';

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
  it('orders by the default weights 0.3 / 0.2 / 0.5', () => {
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

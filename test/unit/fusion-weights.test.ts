import { describe, expect, it } from 'vitest';
import { TEXT_RELEVANCE_WEIGHTS, fuseRelevance } from '../../src/recall/scoring.js';

describe('the text arm / vector arm split depends on the embedder', () => {
  it('gives a semantic embedder a larger share than the lexical one, and fuses with the share given', () => {
    expect(TEXT_RELEVANCE_WEIGHTS.lexical).toBe(0.8);
    expect(TEXT_RELEVANCE_WEIGHTS.local).toBeLessThan(TEXT_RELEVANCE_WEIGHTS.lexical);
    // A paraphrase: no shared word, cosine 0.8.
    const paraphrase = { textScore: 0, bestTextScore: 5, similarity: 0.8 };
    expect(fuseRelevance(paraphrase)).toBeCloseTo(0.2 * 0.8, 12);
    expect(fuseRelevance(paraphrase, TEXT_RELEVANCE_WEIGHTS.local)).toBeCloseTo((1 - TEXT_RELEVANCE_WEIGHTS.local) * 0.8, 12);
    expect(fuseRelevance({ textScore: 5, bestTextScore: 5, similarity: 0.1 }, 0.5)).toBeCloseTo(0.55, 12);
  });
});

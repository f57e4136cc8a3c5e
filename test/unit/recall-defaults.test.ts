import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_MIN_RELEVANCE, loadConfig, minRelevanceFor } from '../../src/config.js';

describe('the relevance floor by embedder', () => {
  it('is the serving embedder’s own when RECALL_MIN_RELEVANCE is unset', () => {
    const config = loadConfig({});
    expect(config.recall.minRelevance).toBeUndefined();
    expect(minRelevanceFor(config, 'lexical')).toBe(DEFAULT_MIN_RELEVANCE.lexical);
    expect(minRelevanceFor(config, 'local')).toBe(DEFAULT_MIN_RELEVANCE.local);
    // A semantic embedder's cosine is larger for unrelated text too, so its floor is higher.
    expect(DEFAULT_MIN_RELEVANCE.local).toBeGreaterThan(DEFAULT_MIN_RELEVANCE.lexical);
  });

  it('is RECALL_MIN_RELEVANCE whatever the embedder when set, 0 included', () => {
    expect(minRelevanceFor(loadConfig({ RECALL_MIN_RELEVANCE: '0.3' }), 'lexical')).toBe(0.3);
    expect(minRelevanceFor(loadConfig({ RECALL_MIN_RELEVANCE: '0' }), 'local')).toBe(0);
    expect(() => loadConfig({ RECALL_MIN_RELEVANCE: '1.5' })).toThrow(ConfigError);
  });
});

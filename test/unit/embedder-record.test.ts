import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { EmbedderMismatchError, settleEmbedder, type EmbedderRecord, type StoredEmbedding } from '../../src/db/embedder-record.js';

const config = (env: Record<string, string> = {}) => loadConfig(env);
const record = (kind: EmbedderRecord['kind'], model: string, dimensions: number, target?: EmbedderRecord['target']): EmbedderRecord => ({
  kind,
  model,
  dimensions,
  target,
  resumeAfter: undefined,
});
const LEXICAL_64: StoredEmbedding = { record: record('lexical', 'hashed-word-features', 64), storedDimensions: 64 };
const LOCAL: StoredEmbedding = { record: record('local', 'universal-sentence-encoder-lite', 512), storedDimensions: 512 };

function refusal(env: Record<string, string>, stored: StoredEmbedding): string {
  try {
    settleEmbedder(config(env), stored);
  } catch (error) {
    expect(error).toBeInstanceOf(EmbedderMismatchError);
    return (error as Error).message;
  }
  throw new Error('start-up was not refused');
}

describe('settleEmbedder: a database keeps the embedder it was filled with', () => {
  it('an empty database takes the configured embedder and records it', () => {
    expect(settleEmbedder(config({ EMBEDDINGS: 'local' }), { record: undefined, storedDimensions: undefined })).toEqual({
      spec: { kind: 'local', model: 'universal-sentence-encoder-lite', dimensions: 512 },
      record: true,
    });
    expect(settleEmbedder(config(), { record: undefined, storedDimensions: undefined }).spec.kind).toBe('lexical');
    // Nothing stored yet: a record of another embedder is simply replaced, nothing can mix.
    expect(settleEmbedder(config({ EMBEDDINGS: 'lexical', EMBEDDING_DIMENSIONS: '32' }), { record: record('local', 'x', 512), storedDimensions: undefined })).toEqual({
      spec: { kind: 'lexical', model: 'hashed-word-features', dimensions: 32 },
      record: true,
    });
  });

  it('with EMBEDDINGS unset, a filled database goes on with its own embedder and size, whatever the default', () => {
    expect(settleEmbedder(config(), LOCAL).spec).toEqual({ kind: 'local', model: 'universal-sentence-encoder-lite', dimensions: 512 });
    expect(settleEmbedder(config(), LEXICAL_64)).toEqual({ spec: { kind: 'lexical', model: 'hashed-word-features', dimensions: 64 }, record: false });
    expect(settleEmbedder(config({ OPENAI_API_KEY: 'k' }), LEXICAL_64).spec.kind).toBe('lexical');
    expect(settleEmbedder(config({ EMBEDDINGS: 'lexical' }), LEXICAL_64).spec.dimensions).toBe(64);
  });

  it('a database filled before the record existed is taken as the old default filled it, at the size found', () => {
    expect(settleEmbedder(config(), { record: undefined, storedDimensions: 1536 })).toEqual({
      spec: { kind: 'lexical', model: 'hashed-word-features', dimensions: 1536 },
      record: true,
    });
    expect(settleEmbedder(config({ OPENAI_API_KEY: 'k', EMBEDDING_MODEL: 'm' }), { record: undefined, storedDimensions: 256 }).spec).toEqual({
      kind: 'openai',
      model: 'm',
      dimensions: 256,
    });
  });

  it('an explicit other embedder, size or model stops start-up with one line naming both', () => {
    const kind = refusal({ EMBEDDINGS: 'local' }, LEXICAL_64);
    expect(kind).toMatch(/^EMBEDDINGS=local does not match: this database was filled by lexical:hashed-word-features \(64 dimensions\)/);
    expect(kind).toContain('npm run db:reembed');
    expect(kind).not.toContain('\n');
    expect(refusal({ EMBEDDING_DIMENSIONS: '128' }, LEXICAL_64)).toMatch(/^EMBEDDING_DIMENSIONS=128 does not match/);
    expect(refusal({ EMBEDDINGS: 'lexical' }, LOCAL)).toMatch(/^EMBEDDINGS=lexical does not match: this database was filled by local:/);
    const openai: StoredEmbedding = { record: record('openai', 'text-embedding-3-small', 1536), storedDimensions: 1536 };
    expect(refusal({ OPENAI_API_KEY: 'k', EMBEDDING_MODEL: 'text-embedding-3-large' }, openai)).toMatch(/^EMBEDDING_MODEL=text-embedding-3-large does not match/);
    // Filled through an endpoint that is no longer configured: nothing could embed a query alike.
    expect(refusal({}, openai)).toMatch(/set OPENAI_API_KEY or OPENAI_BASE_URL to go on with it/);
  });

  it('an unfinished re-embed stops start-up until it is finished', () => {
    const midway: StoredEmbedding = { record: record('lexical', 'hashed-word-features', 64, { kind: 'local', model: 'universal-sentence-encoder-lite', dimensions: 512 }), storedDimensions: 64 };
    expect(refusal({}, midway)).toMatch(/re-embed of this database to local:universal-sentence-encoder-lite \(512 dimensions\) is unfinished/);
  });

  it('config refuses EMBEDDINGS=openai without an endpoint and a size the local model does not have', () => {
    expect(() => config({ EMBEDDINGS: 'openai' })).toThrow(/^Invalid configuration: EMBEDDINGS may be "openai" only with OPENAI_API_KEY or OPENAI_BASE_URL set$/);
    expect(() => config({ EMBEDDINGS: 'local', EMBEDDING_DIMENSIONS: '256' })).toThrow(/^Invalid configuration: EMBEDDING_DIMENSIONS must be 512/);
    expect(() => config({ EMBEDDINGS: 'semantic' })).toThrow(/^Invalid configuration: EMBEDDINGS must be one of: openai, local, lexical$/);
    expect(config({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }).embeddings).toEqual({ kind: 'openai', explicit: false, dimensionsExplicit: false, modelExplicit: false });
  });
});

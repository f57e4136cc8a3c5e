import { describe, expect, it } from 'vitest';
import { LexicalEmbedder } from '../../src/llm/lexical-embedder.js';
import { ProviderUnavailableError } from '../../src/llm/types.js';
import { QUERY_EMBEDDING_CACHE_SIZE, embedQuery } from '../../src/recall/query-embeddings.js';

/** The real lexical embedder, counting its calls, and failing while `down` is set. */
class CountingEmbedder extends LexicalEmbedder {
  calls = 0;
  down = false;
  override async embed(texts: readonly string[]): Promise<number[][]> {
    this.calls += 1;
    if (this.down) throw new ProviderUnavailableError('embedding_unavailable', 'the provider is down');
    return super.embed(texts);
  }
}

describe('embedQuery', () => {
  it('embeds a repeated query once, with the same vector as the embedder gives', async () => {
    const embedder = new CountingEmbedder(64);
    const first = await embedQuery(embedder, 't1', 'what does the user drink?');
    const again = await embedQuery(embedder, 't1', 'what does the user drink?');
    expect(again).toBe(first);
    expect(first).toEqual(new LexicalEmbedder(64).embedOne('what does the user drink?'));
    expect(embedder.calls).toBe(1);
    await embedQuery(embedder, 't1', 'where does the user live?');
    expect(embedder.calls).toBe(2);
  });

  it('keeps each embedder apart', async () => {
    const small = new CountingEmbedder(16);
    const large = new CountingEmbedder(32);
    expect((await embedQuery(small, 't1', 'tea')).length).toBe(16);
    expect((await embedQuery(large, 't1', 'tea')).length).toBe(32);
  });

  it("keeps each tenant's queries apart: another tenant's repeat is a call of its own, not a faster hit", async () => {
    const embedder = new CountingEmbedder(16);
    const mine = await embedQuery(embedder, 't1', 'does the user have a diagnosis?');
    const theirs = await embedQuery(embedder, 't2', 'does the user have a diagnosis?');
    expect(embedder.calls).toBe(2);
    expect(theirs).toEqual(mine);
    expect(theirs).not.toBe(mine);
  });

  it('never remembers a failure', async () => {
    const embedder = new CountingEmbedder(16);
    embedder.down = true;
    await expect(embedQuery(embedder, 't1', 'tea')).rejects.toBeInstanceOf(ProviderUnavailableError);
    embedder.down = false;
    expect((await embedQuery(embedder, 't1', 'tea')).length).toBe(16);
    expect(embedder.calls).toBe(2);
  });

  it('forgets the least recently used query past its size', async () => {
    const embedder = new CountingEmbedder(8);
    await embedQuery(embedder, 't1', 'q0');
    for (let i = 1; i <= QUERY_EMBEDDING_CACHE_SIZE; i++) {
      await embedQuery(embedder, 't1', `q${i}`);
      if (i === 1) await embedQuery(embedder, 't1', 'q0'); // used again: now the most recent
    }
    const calls = embedder.calls;
    await embedQuery(embedder, 't1', 'q0');
    expect(embedder.calls).toBe(calls);
    await embedQuery(embedder, 't1', 'q1');
    expect(embedder.calls).toBe(calls + 1);
  });
});

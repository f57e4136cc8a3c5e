import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { OfflineResolver } from '../../src/extraction/offline-resolver.js';
import type { CandidateMemory, ExtractedFact } from '../../src/extraction/types.js';
import { emptyUsage } from '../../src/llm/types.js';

function fact(content: string): ExtractedFact {
  return { content, importance: 5, category: null, occurred_at: null };
}

function candidate(content: string, similarity?: number): CandidateMemory {
  return { id: randomUUID(), content, occurredAt: new Date('2024-01-01T00:00:00Z'), importance: 5, similarity };
}

describe('OfflineResolver', () => {
  it('NOOPs a fact whose best candidate reaches the threshold, ADDs one below it', async () => {
    const close = candidate('I live in Paris, France.', 0.95);
    const far = candidate('I like tea.', 0.91);
    const result = await new OfflineResolver().resolve(
      {
        facts: [
          { fact: fact('I live in Paris.'), candidates: [close] },
          { fact: fact('I like coffee.'), candidates: [far] },
        ],
      },
      emptyUsage(),
    );
    expect(result.operations).toEqual([
      { factIndex: 0, operation: 'NOOP', targetMemoryId: close.id },
      { factIndex: 1, operation: 'ADD' },
    ]);
    expect(result.dropped).toEqual([]);
  });

  it('treats the threshold as inclusive and honours a custom one', async () => {
    const c = candidate('I live in Paris.', 0.8);
    const input = { facts: [{ fact: fact('I am based in Paris.'), candidates: [c] }] };
    expect((await new OfflineResolver({ noopThreshold: 0.8 }).resolve(input, emptyUsage())).operations[0]).toEqual({
      factIndex: 0,
      operation: 'NOOP',
      targetMemoryId: c.id,
    });
    expect((await new OfflineResolver().resolve(input, emptyUsage())).operations[0]!.operation).toBe('ADD');
  });

  it('NOOPs on identical normalised text even without (or with a low) similarity, preferring that candidate', async () => {
    const similar = candidate('I live in Paris now.', 0.97);
    const identical = candidate('i live in paris');
    const result = await new OfflineResolver().resolve(
      { facts: [{ fact: fact('I live in Paris!'), candidates: [similar, identical] }] },
      emptyUsage(),
    );
    expect(result.operations).toEqual([{ factIndex: 0, operation: 'NOOP', targetMemoryId: identical.id }]);
  });

  it('picks the most similar of several candidates above the threshold', async () => {
    const a = candidate('I live in Paris.', 0.93);
    const b = candidate('I live in Paris, France.', 0.99);
    const result = await new OfflineResolver().resolve(
      { facts: [{ fact: fact('I live in Paris (France).'), candidates: [a, b] }] },
      emptyUsage(),
    );
    expect(result.operations[0]).toEqual({ factIndex: 0, operation: 'NOOP', targetMemoryId: b.id });
  });

  it('NOOPs a fact that repeats an earlier fact of the same job', async () => {
    const result = await new OfflineResolver().resolve(
      {
        facts: [
          { fact: fact('I have a dog.'), candidates: [] },
          { fact: fact('I have a cat.'), candidates: [] },
          { fact: fact('i have a DOG'), candidates: [] },
        ],
      },
      emptyUsage(),
    );
    expect(result.operations).toEqual([
      { factIndex: 0, operation: 'ADD' },
      { factIndex: 1, operation: 'ADD' },
      { factIndex: 2, operation: 'NOOP' },
    ]);
  });

  it('never updates or deletes, even for a contradiction', async () => {
    const paris = candidate('I live in Paris.', 0.7);
    const result = await new OfflineResolver().resolve(
      { facts: [{ fact: fact('I no longer live in Paris.'), candidates: [paris] }] },
      emptyUsage(),
    );
    expect(result.operations).toEqual([{ factIndex: 0, operation: 'ADD' }]);
  });

  it('rejects a threshold outside the cosine range', () => {
    expect(() => new OfflineResolver({ noopThreshold: 1.5 })).toThrow(RangeError);
    expect(() => new OfflineResolver({ noopThreshold: Number.NaN })).toThrow(RangeError);
  });

  it('has the documented name and spends nothing', async () => {
    const usage = emptyUsage();
    const resolver = new OfflineResolver();
    await resolver.resolve({ facts: [{ fact: fact('I like tea.'), candidates: [] }] }, usage);
    expect(resolver.name).toBe('offline:similarity');
    expect(usage).toEqual(emptyUsage());
  });
});

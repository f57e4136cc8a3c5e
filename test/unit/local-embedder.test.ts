import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEmbedder } from '../../src/llm/local-embedder.js';
import { ProviderUnavailableError } from '../../src/llm/types.js';

// One model for the whole file: loading it costs about a second and ~150 MB.
const embedder = new LocalEmbedder();

beforeAll(async () => {
  await embedder.embed(['warm up']);
}, 60_000);
afterAll(async () => {
  await embedder.close();
});

const dot = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);

describe('LocalEmbedder (Universal Sentence Encoder lite, bundled)', () => {
  it('gives 512-dimensional unit vectors that put paraphrases close and unrelated text far', async () => {
    const [car, automobile, weather] = await embedder.embed(['I bought a new car', 'I purchased an automobile', 'The weather is cold today']);
    for (const v of [car!, automobile!, weather!]) {
      expect(v).toHaveLength(512);
      expect(Math.abs(dot(v, v) - 1)).toBeLessThan(1e-6);
    }
    expect(dot(car!, automobile!)).toBeGreaterThan(0.7);
    expect(dot(car!, automobile!) - dot(car!, weather!)).toBeGreaterThan(0.3);
  });

  it('answers concurrent callers in order, batched, with the vectors a lone call gives', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `Melanie painted sunset number ${i} by the lake`);
    const together = await Promise.all(texts.map((t) => embedder.embed([t])));
    const alone = await embedder.embed([texts[7]!]);
    const again = await embedder.embed([texts[33]!]);
    expect(dot(together[7]![0]!, alone[0]!)).toBeGreaterThan(0.9999);
    expect(dot(together[33]![0]!, again[0]!)).toBeGreaterThan(0.9999);
    expect(dot(together[7]![0]!, together[33]![0]!)).toBeLessThan(0.9999);
  });

  it('gives a text with nothing to encode a fixed unit vector without shifting its neighbours', async () => {
    const [before, empty, after] = await embedder.embed(['I keep bees', '', 'I bought a new car']);
    expect(empty![0]).toBe(1);
    expect(dot(empty!, empty!)).toBe(1);
    const [bees, car] = await embedder.embed(['I keep bees', 'I bought a new car']);
    expect(dot(before!, bees!)).toBeGreaterThan(0.9999);
    expect(dot(after!, car!)).toBeGreaterThan(0.9999);
  });

  it('loads without the network: its worker refuses any fetch, so the downloading model source fails', async () => {
    const remote = new LocalEmbedder({ modelModule: createRequire(import.meta.url).resolve('../support/remote-model-source.cjs') });
    try {
      const failure = await remote.embed(['anything']).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ProviderUnavailableError);
      expect(String((failure as Error).message)).toMatch(/never uses the network/);
    } finally {
      await remote.close();
    }
  }, 60_000);

  it('refuses work once closed', async () => {
    const closed = new LocalEmbedder();
    await closed.close();
    await expect(closed.embed(['x'])).rejects.toBeInstanceOf(ProviderUnavailableError);
  });
});

import { describe, expect, it } from 'vitest';
import { LexicalEmbedder, stem, tokenize } from '../../src/llm/lexical-embedder.js';
import { emptyUsage } from '../../src/llm/types.js';

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

function norm(v: readonly number[]): number {
  return Math.sqrt(cosine(v, v));
}

describe('LexicalEmbedder', () => {
  const embedder = new LexicalEmbedder(256);

  it('names itself and reports its dimensions', () => {
    expect(embedder.name).toBe('offline:lexical');
    expect(embedder.dimensions).toBe(256);
  });

  it('returns vectors of exactly the configured dimension', () => {
    for (const dims of [8, 256, 1536]) {
      expect(new LexicalEmbedder(dims).embedOne('Alice moved to Berlin last spring')).toHaveLength(dims);
    }
  });

  it('returns unit vectors', () => {
    for (const text of ['Alice moved to Berlin', 'x', 'the of and', 'Ünïcödé 東京タワー', 'a '.repeat(2000)]) {
      expect(norm(embedder.embedOne(text))).toBeCloseTo(1, 9);
    }
  });

  it('is deterministic across calls and across instances', () => {
    const text = 'My sister Katherine lives in Berlin and loves hiking.';
    const first = embedder.embedOne(text);
    embedder.embedOne('something else entirely, to disturb any reused state');
    expect(embedder.embedOne(text)).toEqual(first);
    expect(new LexicalEmbedder(256).embedOne(text)).toEqual(first);
  });

  it('gives the same vector after a text large enough to grow its scratch space', () => {
    const fresh = new LexicalEmbedder(64);
    const text = 'Bob likes green tea';
    const before = fresh.embedOne(text);
    fresh.embedOne(Array.from({ length: 5000 }, (_, i) => `token${i}`).join(' '));
    expect(fresh.embedOne(text)).toEqual(before);
  });

  it('embed() keeps order, matches embedOne and spends no usage', async () => {
    const usage = emptyUsage();
    const texts = ['first text', 'second text', ''];
    const vectors = await embedder.embed(texts, usage);
    expect(vectors).toEqual(texts.map((t) => embedder.embedOne(t)));
    expect(usage).toEqual(emptyUsage());
  });

  it('ranks a text sharing words above unrelated text', () => {
    const query = embedder.embedOne('Where does Alice go hiking?');
    const related = embedder.embedOne('Alice loves hiking in the mountains');
    const unrelated = embedder.embedOne('The quarterly tax report is due on Friday');
    expect(cosine(query, related)).toBeGreaterThan(cosine(query, unrelated) + 0.2);
  });

  it('matches a misspelt name more closely than an unrelated word', () => {
    const name = embedder.embedOne('Katherine');
    expect(cosine(name, embedder.embedOne('Catherine'))).toBeGreaterThan(cosine(name, embedder.embedOne('potato')) + 0.1);
    const fact = embedder.embedOne('My sister Katherine lives in Berlin');
    expect(cosine(fact, embedder.embedOne('Where does Catherine live?'))).toBeGreaterThan(
      cosine(fact, embedder.embedOne('What is the weather like today?')),
    );
  });

  it('matches inflections through stemming', () => {
    const hike = embedder.embedOne('hike');
    expect(cosine(hike, embedder.embedOne('hiking'))).toBeGreaterThan(0.5);
    expect(cosine(hike, embedder.embedOne('banana'))).toBeLessThan(0.2);
  });

  it('weights content words above stop words', () => {
    const text = embedder.embedOne('the cat is on the mat');
    const sharesContent = embedder.embedOne('a cat and a mat');
    const sharesStopWords = embedder.embedOne('the dog is on the rug');
    expect(cosine(text, sharesContent)).toBeGreaterThan(cosine(text, sharesStopWords));
  });

  it('uses word order through bigrams', () => {
    const text = embedder.embedOne('new york pizza');
    expect(cosine(text, embedder.embedOne('new york pizza'))).toBeCloseTo(1, 9);
    expect(cosine(text, embedder.embedOne('pizza york new'))).toBeLessThan(0.99);
  });

  it('is case- and accent-insensitive', () => {
    expect(embedder.embedOne('ZOË LIKES CAFÉS')).toEqual(embedder.embedOne('zoe likes cafes'));
  });

  it('gives empty and punctuation-only text a finite unit vector', () => {
    for (const text of ['', '   ', '?!...', '—']) {
      const v = embedder.embedOne(text);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(norm(v)).toBeCloseTo(1, 12);
    }
  });

  it('gives an all-stop-word text its own non-degenerate vector', () => {
    const v = embedder.embedOne('it is what it is');
    expect(v.every(Number.isFinite)).toBe(true);
    expect(norm(v)).toBeCloseTo(1, 9);
    expect(v).not.toEqual(embedder.embedOne(''));
  });

  it('refuses a non-positive dimension', () => {
    expect(() => new LexicalEmbedder(0)).toThrow(RangeError);
    expect(() => new LexicalEmbedder(2.5)).toThrow(RangeError);
  });
});

describe('tokenize', () => {
  it('lower-cases, drops possessives and inner apostrophes, folds Latin accents', () => {
    expect(tokenize("Alice's café: don't PANIC, Zoë!")).toEqual(['alice', 'cafe', 'dont', 'panic', 'zoe']);
  });

  it('splits Han and kana into single characters but keeps other scripts whole', () => {
    expect(tokenize('東京 Москва 123')).toEqual(['東', '京', 'москва', '123']);
  });
});

describe('stem', () => {
  it('maps inflections of a word to one key', () => {
    expect(new Set(['hike', 'hikes', 'hiked', 'hiking'].map(stem)).size).toBe(1);
    expect(stem('families')).toBe(stem('family'));
    expect(stem('running')).toBe(stem('run'));
    expect(stem('agreed')).toBe(stem('agree'));
  });

  it('leaves short words, numbers and -ss/-us words alone', () => {
    expect(stem('bus')).toBe('bus');
    expect(stem('class')).toBe('class');
    expect(stem('status')).toBe('status');
    expect(stem('2024')).toBe('2024');
    expect(stem('need')).toBe('need');
  });
});

import { describe, expect, it } from 'vitest';
import {
  BM25_B,
  BM25_K1,
  bm25Idf,
  bm25Scores,
  bm25TermFrequency,
  parseTsvector,
  queryTerms,
  termDocumentFrequency,
  type Bm25Collection,
  type Bm25Document,
} from '../../src/recall/bm25.js';

/** A document that lists all its lexemes, so its length is their number. */
const doc = (id: string, lexemes: Record<string, number>): Bm25Document => ({ id, length: Object.keys(lexemes).length, lexemes: new Map(Object.entries(lexemes)) });
const collectionOf = (docs: Bm25Document[]): Bm25Collection => ({
  documents: docs.length,
  averageLength: docs.reduce((sum, d) => sum + d.length, 0) / docs.length,
});

describe('bm25Idf', () => {
  it('is ln(1 + (N - df + 0.5) / (df + 0.5))', () => {
    expect(bm25Idf(10, 1)).toBeCloseTo(Math.log(1 + 9.5 / 1.5), 12);
    expect(bm25Idf(600, 300)).toBeCloseTo(Math.log(1 + 300.5 / 300.5), 12);
  });

  it('falls as a term gets commoner and stays positive even in every document', () => {
    expect(bm25Idf(100, 1)).toBeGreaterThan(bm25Idf(100, 10));
    expect(bm25Idf(100, 10)).toBeGreaterThan(bm25Idf(100, 99));
    expect(bm25Idf(100, 100)).toBeGreaterThan(0);
    expect(bm25Idf(1, 1)).toBeGreaterThan(0);
  });
});

describe('bm25TermFrequency', () => {
  it('is 0 for an absent term and 1 for one occurrence in a document of average length', () => {
    expect(bm25TermFrequency(0, 10, 10)).toBe(0);
    expect(bm25TermFrequency(1, 10, 10)).toBeCloseTo(1, 12);
  });

  it('saturates towards k1 + 1 as the term repeats', () => {
    const values = [1, 2, 4, 8, 1000].map((tf) => bm25TermFrequency(tf, 10, 10));
    for (let i = 1; i < values.length; i++) expect(values[i]!).toBeGreaterThan(values[i - 1]!);
    expect(values[values.length - 1]!).toBeLessThan(BM25_K1 + 1);
    expect(values[values.length - 1]!).toBeGreaterThan(BM25_K1 + 1 - 0.01);
  });

  it('penalises length by b: none at b = 0, more in longer documents otherwise', () => {
    expect(bm25TermFrequency(1, 40, 10, 1.2, 0)).toBeCloseTo(bm25TermFrequency(1, 5, 10, 1.2, 0), 12);
    expect(bm25TermFrequency(1, 5, 10)).toBeGreaterThan(bm25TermFrequency(1, 40, 10));
    expect(bm25TermFrequency(1, 20, 10, 1.2, 0.75)).toBeCloseTo((1 * 2.2) / (1 + 1.2 * (0.25 + 0.75 * 2)), 12);
  });

  it('uses the module parameters by default', () => {
    expect(bm25TermFrequency(2, 7, 11)).toBeCloseTo((2 * (BM25_K1 + 1)) / (2 + BM25_K1 * (1 - BM25_B + (BM25_B * 7) / 11)), 12);
  });
});

describe('bm25Scores', () => {
  const docs = [
    doc('a', { alic: 1, cello: 2, orchestra: 1 }),
    doc('b', { alic: 1, ski: 1, norway: 1, winter: 1 }),
    doc('c', { bob: 1, met: 1, alic: 1, rome: 1 }),
    doc('d', { weather: 1 }),
  ];
  const all = collectionOf(docs);

  it('matches a hand computation', () => {
    const scores = bm25Scores([['cello'], ['alic']], docs, all);
    const avgdl = (3 + 4 + 4 + 1) / 4;
    const idfCello = Math.log(1 + (4 - 1 + 0.5) / 1.5);
    const idfAlice = Math.log(1 + (4 - 3 + 0.5) / 3.5);
    const tf = (n: number, dl: number) => (n * 2.2) / (n + 1.2 * (1 - BM25_B + (BM25_B * dl) / avgdl));
    expect(scores.get('a')).toBeCloseTo(idfCello * tf(2, 3) + idfAlice * tf(1, 3), 12);
    expect(scores.get('b')).toBeCloseTo(idfAlice * tf(1, 4), 12);
    expect(scores.get('d')).toBe(0);
  });

  it('ranks the memory holding the rare term first', () => {
    const scores = bm25Scores([['rome'], ['alic']], docs, all);
    expect(scores.get('c')).toBeGreaterThan(scores.get('a')!);
  });

  it('gives the same scores when the documents sharing no term are left out, and when only the query lexemes are listed', () => {
    const full = bm25Scores([['cello'], ['alic']], docs, all);
    const hits = docs
      .filter((d) => d.lexemes.has('cello') || d.lexemes.has('alic'))
      .map((d) => ({ id: d.id, length: d.length, lexemes: new Map([...d.lexemes].filter(([l]) => l === 'cello' || l === 'alic')) }));
    const partial = bm25Scores([['cello'], ['alic']], hits, all);
    expect(partial.size).toBe(3);
    for (const [id, score] of partial) expect(score).toBeCloseTo(full.get(id)!, 12);
  });

  it('counts the lexemes of one term together: tf summed, df of the union', () => {
    const more = [...docs, doc('e', { meet: 1, alic: 1 })];
    const grouped = bm25Scores([['meet', 'met']], more, collectionOf(more));
    expect(grouped.get('c')).toBeGreaterThan(0);
    const n = 5;
    const avgdl = (3 + 4 + 4 + 1 + 2) / n;
    const idf = Math.log(1 + (n - 2 + 0.5) / 2.5); // two documents hold the term
    expect(grouped.get('e')).toBeCloseTo((idf * 2.2) / (1 + 1.2 * (1 - BM25_B + (BM25_B * 2) / avgdl)), 12);
  });

  it('gives every document 0 for a query without terms, and copes with no documents', () => {
    expect([...bm25Scores([], docs, all).values()]).toEqual([0, 0, 0, 0]);
    expect(bm25Scores([['x']], [], { documents: 0, averageLength: 0 }).size).toBe(0);
  });

  it('equals a plain loop over the terms, bit for bit, on random documents and terms (grouped, shared, repeated)', () => {
    // A seeded generator, so a failure can be replayed.
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    const vocabulary = Array.from({ length: 30 }, (_, i) => `w${i}`);
    for (let round = 0; round < 50; round++) {
      const terms = Array.from({ length: 1 + Math.floor(random() * 12) }, () => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(vocabulary)));
      const documents = Array.from({ length: Math.floor(random() * 40) }, (_, i) => {
        const lexemes = new Map<string, number>();
        for (let k = Math.floor(random() * 8); k > 0; k--) lexemes.set(pick(vocabulary), 1 + Math.floor(random() * 3));
        return { id: `d${i}`, length: lexemes.size + Math.floor(random() * 5), lexemes };
      });
      const frequencies = new Map(vocabulary.map((w) => [w, Math.floor(random() * 60)] as const));
      const collection = { documents: documents.length + 20, averageLength: 1 + random() * 6, frequencies };
      const averageLength = Math.max(1, collection.averageLength);
      const tfOf = (d: Bm25Document, term: readonly string[]) => {
        let tf = 0;
        for (const [lexeme, n] of d.lexemes) if (new Set(term).has(lexeme)) tf += n;
        return tf;
      };
      const idf = terms.map((term) => {
        const n = documents.filter((d) => tfOf(d, term) > 0).length;
        return n === 0 ? 0 : bm25Idf(Math.max(collection.documents, n), termDocumentFrequency(n, term, collection));
      });
      const got = bm25Scores(terms, documents, collection);
      for (const d of documents) {
        let expected = 0;
        terms.forEach((term, t) => {
          const tf = tfOf(d, term);
          if (tf > 0) expected += idf[t]! * bm25TermFrequency(tf, d.length, averageLength);
        });
        expect(got.get(d.id)).toBe(expected);
      }
    }
  });

  it('floors the average length at 1 so a scope of memories without lexemes cannot divide by zero', () => {
    const scores = bm25Scores([['x']], [doc('x', { x: 1 })], { documents: 10, averageLength: 0 });
    expect(Number.isFinite(scores.get('x')!)).toBe(true);
    expect(scores.get('x')!).toBeGreaterThan(0);
  });
});

describe('queryTerms', () => {
  it('makes each lexeme a term, and the lexemes of one irregular word a single term', () => {
    const terms = queryTerms([
      { lexeme: 'alic', group: null },
      { lexeme: 'meet', group: null },
      { lexeme: 'bob', group: null },
      { lexeme: 'meet', group: 7 },
      { lexeme: 'met', group: 7 },
    ]);
    expect(terms).toEqual([['alic'], ['bob'], ['meet', 'met']]);
  });

  it('lists a lexeme once, and gives one claimed by two words to the first', () => {
    expect(queryTerms([{ lexeme: 'x', group: null }, { lexeme: 'x', group: null }])).toEqual([['x']]);
    expect(queryTerms([{ lexeme: 'left', group: 1 }, { lexeme: 'leav', group: 1 }, { lexeme: 'left', group: 2 }, { lexeme: 'l', group: 2 }])).toEqual([
      ['left', 'leav'],
      ['l'],
    ]);
    expect(queryTerms([])).toEqual([]);
  });
});

describe('parseTsvector', () => {
  it('counts positions per lexeme', () => {
    expect(parseTsvector("'adopt':5A 'jame':1A,9A,12A")).toEqual(
      new Map([
        ['adopt', 1],
        ['jame', 3],
      ]),
    );
  });

  it('undoubles quotes and backslashes inside a lexeme', () => {
    expect(parseTsvector("'it''s':1 'a\\\\b':2,3 'x y':4")).toEqual(
      new Map([
        ["it's", 1],
        ['a\\b', 2],
        ['x y', 1],
      ]),
    );
  });

  it('counts a lexeme without positions (a stripped tsvector) once, and reads an empty tsvector as nothing', () => {
    expect(parseTsvector("'a' 'b':3")).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
      ]),
    );
    expect(parseTsvector('')).toEqual(new Map());
  });
});

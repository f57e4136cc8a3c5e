/**
 * Okapi BM25 over PostgreSQL's `english` lexemes: the full-text arm of recall.
 *
 * The database supplies the signals (repository.ts): the query's lexemes, and for each of the
 * user's memories in scope its length and the occurrences of those lexemes. The statistics are
 * those of the memories in scope (the request's filters, validity and `as_of`), not of the whole
 * table: N memories, each one's length `dl` (its distinct lexemes, `length(search_text)`), their
 * mean `avgdl`, and for each query term the number of memories holding it (`df`). A term is a group
 * of lexemes that count as one word (a lexeme on its own, or the forms of an irregular word: see
 * word-forms.ts); its `tf` in a memory is the sum of its lexemes' occurrences there.
 *
 *   score(memory) = Σ_terms idf(df) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl))
 *   idf(df)       = ln(1 + (N − df + 0.5) / (df + 0.5))          (never negative)
 *
 * Measured on LoCoMo (bench/locomo.ts): PostgreSQL's stemming and a real BM25 instead of ts_rank
 * give most of the gain; a low length penalty pays, as memories are short and of similar length
 * (recall@10 0.621 at b 0.75, 0.626 at 0.5, 0.632 at 0.3, 0.635 at 0.2 and 0.1, 0.636 at 0); k1
 * 0.9, 1.2 and 2.0 all give 0.635.
 */

/** Term-frequency saturation. */
export const BM25_K1 = 1.2;
/** Length normalisation: 0 ignores length, 1 divides by it fully. */
export const BM25_B = 0.2;

/** Inverse document frequency (the Lucene form: positive even for a term in every memory). */
export function bm25Idf(documents: number, documentFrequency: number): number {
  return Math.log(1 + (documents - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/** One term's saturated, length-normalised frequency (multiply by its idf). */
export function bm25TermFrequency(tf: number, length: number, averageLength: number, k1 = BM25_K1, b = BM25_B): number {
  if (!(tf > 0)) return 0;
  return (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / averageLength));
}

export interface Bm25Document {
  id: string;
  /** The memory's length: its distinct lexemes, all of them (not only the query's). */
  length: number;
  /** Occurrences of the query's lexemes in it (others may be left out). */
  lexemes: ReadonlyMap<string, number>;
}

export interface Bm25Collection {
  /** How many memories are in scope (those sharing no term with the query included). */
  documents: number;
  /** Their mean length; floored at 1, so memories without lexemes cannot divide by zero. */
  averageLength: number;
  /**
   * How many memories in scope hold each lexeme, where that is known beyond the documents given
   * (a large scope reads only some of those that share a common word: repository.ts).
   */
  frequencies?: ReadonlyMap<string, number> | undefined;
}

/**
 * A term's df: the documents given that hold it, or the known count when larger (a term of several
 * forms: their counts summed, as a memory rarely holds two forms of one word; at most N).
 */
export function termDocumentFrequency(counted: number, term: readonly string[], collection: Pick<Bm25Collection, 'documents' | 'frequencies'>): number {
  const known = collection.frequencies;
  if (!known) return counted;
  let sum = 0;
  for (const lexeme of new Set(term)) sum += known.get(lexeme) ?? 0;
  return Math.max(counted, Math.min(sum, collection.documents));
}

/** Each lexeme → the indexes of the query terms it belongs to, so a document's lexemes are looked up once. */
export function termsByLexeme(terms: ReadonlyArray<readonly string[]>): Map<string, number[]> {
  const termsOf = new Map<string, number[]>();
  terms.forEach((term, index) => {
    for (const lexeme of new Set(term)) termsOf.set(lexeme, [...(termsOf.get(lexeme) ?? []), index]);
  });
  return termsOf;
}

const NO_TERMS: readonly number[] = [];

/**
 * Every given document's BM25 for a query given as terms, each a set of lexemes. Documents that
 * share no term with the query may be left out: they score 0 and do not change any df.
 *
 * Linear in the documents' lexemes, not terms × documents: each document's lexemes are looked up
 * once (a query of hundreds of terms over thousands of memories held the event loop for seconds).
 * A document's terms are summed in the terms' order, so the scores are those of a loop over terms.
 */
export function bm25Scores(
  terms: ReadonlyArray<readonly string[]>,
  documents: readonly Bm25Document[],
  collection: Bm25Collection,
  k1 = BM25_K1,
  b = BM25_B,
): Map<string, number> {
  const averageLength = Math.max(1, collection.averageLength);
  const termsOf = termsByLexeme(terms);
  const termCount = terms.length;
  // Each document's terms and tfs, in the terms' order, laid end to end (a document's run from
  // starts[i]): no Map or sorted key list a document, which at ~1,000 documents a request were most
  // of recall's garbage (and its GC pauses, its tail).
  const starts = new Int32Array(documents.length + 1);
  const termAt: number[] = [];
  const tfAt: number[] = [];
  const tf = new Float64Array(termCount);
  const seenIn = new Int32Array(termCount);
  const held = new Int32Array(termCount);
  const df = new Array<number>(termCount).fill(0);
  documents.forEach((d, i) => {
    let count = 0;
    for (const [lexeme, occurrences] of d.lexemes) {
      for (const index of termsOf.get(lexeme) ?? NO_TERMS) {
        if (seenIn[index] !== i + 1) {
          seenIn[index] = i + 1;
          tf[index] = 0;
          held[count++] = index;
        }
        tf[index]! += occurrences;
      }
    }
    if (count > 1) held.subarray(0, count).sort();
    for (let k = 0; k < count; k++) {
      const index = held[k]!;
      if (tf[index]! > 0) df[index]!++;
      termAt.push(index);
      tfAt.push(tf[index]!);
    }
    starts[i + 1] = termAt.length;
  });
  const idf = df.map((n, index) => (n === 0 ? 0 : bm25Idf(Math.max(collection.documents, n), termDocumentFrequency(n, terms[index]!, collection))));
  const scores = new Map<string, number>();
  documents.forEach((d, i) => {
    let score = 0;
    for (let k = starts[i]!; k < starts[i + 1]!; k++) {
      const frequency = tfAt[k]!;
      if (frequency > 0) score += idf[termAt[k]!]! * bm25TermFrequency(frequency, d.length, averageLength, k1, b);
    }
    scores.set(d.id, score);
  });
  return scores;
}

export interface QueryLexeme {
  lexeme: string;
  /** The irregular word (word-forms.ts group) the lexeme is a form of, or null. */
  group: number | null;
}

/**
 * The query's terms: each lexeme is a term of its own, except that the lexemes of one irregular
 * word's forms make a single term (a lexeme claimed by two words goes with the first).
 */
export function queryTerms(lexemes: readonly QueryLexeme[]): string[][] {
  const groupOf = new Map<string, number>();
  for (const { lexeme, group } of lexemes) if (group !== null && !groupOf.has(lexeme)) groupOf.set(lexeme, group);
  const byGroup = new Map<number, Set<string>>();
  const alone = new Set<string>();
  for (const { lexeme } of lexemes) {
    const group = groupOf.get(lexeme);
    if (group === undefined) alone.add(lexeme);
    else byGroup.set(group, (byGroup.get(group) ?? new Set<string>()).add(lexeme));
  }
  return [...[...alone].map((lexeme) => [lexeme]), ...[...byGroup.values()].map((set) => [...set])];
}

/**
 * Occurrences per lexeme of a tsvector in PostgreSQL's text form: `'a':1A,4 'it''s':2 'b'`.
 * Inside the quotes a quote and a backslash come doubled; a lexeme without positions (a stripped
 * tsvector) counts once.
 */
export function parseTsvector(text: string): Map<string, number> {
  const QUOTE = 39;
  const BACKSLASH = 92;
  const counts = new Map<string, number>();
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (text.charCodeAt(i) !== QUOTE) {
      i++;
      continue;
    }
    // Scanned with indexes and sliced once (a lexeme built a character at a time cost more than
    // the rest of recall's parsing together).
    let j = i + 1;
    let from = j;
    let lexeme = '';
    while (j < n) {
      const c = text.charCodeAt(j);
      if ((c === QUOTE || c === BACKSLASH) && text.charCodeAt(j + 1) === c) {
        lexeme += text.slice(from, j + 1);
        j += 2;
        from = j;
      } else if (c === QUOTE) {
        break;
      } else {
        j++;
      }
    }
    lexeme += text.slice(from, j);
    i = j + 1;
    let occurrences = 1;
    if (text.charCodeAt(i) === 58 /* ':' */) {
      let end = text.indexOf(' ', i);
      if (end === -1) end = n;
      for (let k = i; k < end; k++) if (text.charCodeAt(k) === 44 /* ',' */) occurrences++;
      i = end;
    }
    counts.set(lexeme, (counts.get(lexeme) ?? 0) + occurrences);
  }
  return counts;
}

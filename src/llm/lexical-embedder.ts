import type { Embedder, Usage } from './types.js';

/**
 * The offline embedder: a deterministic bag of hashed lexical features. Texts that share words
 * (or parts of words: names, misspellings, inflections) get a high cosine; texts that say the same
 * thing in other words do not. It finds shared words, not meaning.
 *
 * Features, each family with a fixed weight:
 * - word unigrams of the stemmed word,
 * - word bigrams of consecutive stemmed words (word order and phrases),
 * - character 3- and 4-grams of each surface word with boundary markers, so "Katherine" and
 *   "Catherine", or "hiking" and "hikes", still overlap.
 * English stop words keep a small weight rather than none, so a query made only of them still
 * has a vector. Term frequency is sub-linear (1 + ln tf), the signed hashing trick spreads the
 * features over `dimensions` buckets, and the result is L2-normalised.
 */

const WEIGHT_UNIGRAM = 1.0;
const WEIGHT_BIGRAM = 0.5;
// Char-gram weights are per word and divided by sqrt(grams in that word), so a long word does not
// drown the word-level features by sheer count.
const WEIGHT_CHAR3 = 0.5;
const WEIGHT_CHAR4 = 0.6;
const STOP_WORD_FACTOR = 0.15;

// Distinct seeds keep "abc" the unigram apart from "abc" the character gram.
const SEED_UNIGRAM = 0x811c9dc5;
const SEED_BIGRAM = 0x3c6ef372;
const SEED_CHAR3 = 0x9e3779b9;
const SEED_CHAR4 = 0x1b873593;

const CHAR_GRAM_FAMILIES: ReadonlyArray<readonly [n: number, seed: number, weight: number]> = [
  [3, SEED_CHAR3, WEIGHT_CHAR3],
  [4, SEED_CHAR4, WEIGHT_CHAR4],
];

const FNV_PRIME = 0x01000193;
const BOUNDARY = 0x02; // a code point no token contains
const SEPARATOR = 0x20;

const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below ' +
    'between both but by can could did do does doing down during each few for from further had has have ' +
    'having he her here hers herself him himself his how i if in into is it its itself just me more most my ' +
    'myself no nor not now of off on once only or other our ours ourselves out over own same she should so ' +
    'some such than that the their theirs them themselves then there these they this those through to too ' +
    'under until up very was we were what when where which while who whom why will with would you your ' +
    'yours yourself yourselves also im ive id ill youre youve theyre dont doesnt didnt isnt arent wasnt ' +
    'cant wont shouldnt wouldnt couldnt lets thats theres whats'
  ).split(' '),
);

// Han and kana are written without spaces; each character becomes a token and the word bigrams
// then give the usual CJK character-bigram features.
const CJK_CHAR = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
const TOKEN_PATTERN = new RegExp(
  `[${CJK_CHAR}]|(?:(?![${CJK_CHAR}])[\\p{L}\\p{N}\\p{M}])+(?:['\u2019](?:(?![${CJK_CHAR}])[\\p{L}\\p{N}\\p{M}])+)*`,
  'gu',
);
const ASCII_TOKEN_PATTERN = /[a-z0-9]+(?:['\u2019][a-z0-9]+)*/g;
const NON_ASCII = /[^\u0000-\u007f]/;
// Accents on Latin, Greek and Cyrillic letters are dropped ("Zoë" finds "Zoe"); marks of other
// scripts carry meaning and stay.
const FOLDABLE_MARKS = /(?<=[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]\p{Mn}*)\p{Mn}/gu;
const APOSTROPHES = /['\u2019]/g;
const ASCII_WORD = /^[a-z]+$/;

/** murmur3's finaliser: FNV-1a alone leaves the low bits (the bucket) poorly mixed. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function fnvString(h: number, s: string, from = 0, to = s.length): number {
  for (let i = from; i < to; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  }
  return h;
}

function isVowel(code: number): boolean {
  // a e i o u
  return code === 97 || code === 101 || code === 105 || code === 111 || code === 117;
}

function hasVowel(s: string, end: number): boolean {
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    if (isVowel(c) || (c === 121 && i > 0)) return true;
  }
  return false;
}

/**
 * A light English suffix stripper (a small part of Porter's steps 1 and 5). It only has to map
 * the inflections of one word to the same key, not produce real words: "hikes", "hiked",
 * "hiking" and "hike" all become "hik"; "families" and "family" become "famili".
 */
export function stem(word: string): string {
  if (word.length <= 3 || !ASCII_WORD.test(word)) return word;
  let w = word;
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies') && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);

  let stripped = false;
  if (w.endsWith('eed')) {
    // "agreed" -> "agree", but "need" and "feed" are not past tenses.
    if (w.length > 4) w = w.slice(0, -1);
  } else if (w.endsWith('ing') && w.length - 3 >= 3 && hasVowel(w, w.length - 3)) {
    w = w.slice(0, -3);
    stripped = true;
  } else if (w.endsWith('ed') && w.length - 2 >= 3 && hasVowel(w, w.length - 2)) {
    w = w.slice(0, -2);
    stripped = true;
  }
  if (stripped) {
    const last = w.charCodeAt(w.length - 1);
    // "running" -> "runn" -> "run"; l, s and z double in the base form too ("fall", "pass").
    if (last === w.charCodeAt(w.length - 2) && !isVowel(last) && last !== 108 && last !== 115 && last !== 122) {
      w = w.slice(0, -1);
    }
  }
  if (w.length > 3) {
    const last = w.charCodeAt(w.length - 1);
    if (last === 121 && !isVowel(w.charCodeAt(w.length - 2))) w = `${w.slice(0, -1)}i`;
    else if (last === 101) w = w.slice(0, -1);
  }
  return w;
}

/** Lower-cased tokens; possessive 's and inner apostrophes dropped ("Alice's" -> "alice", "don't" -> "dont"). */
export function tokenize(text: string): string[] {
  let lower = text.toLowerCase();
  const ascii = !NON_ASCII.test(lower);
  if (!ascii) {
    lower = lower.normalize('NFKD').replace(FOLDABLE_MARKS, '').normalize('NFC');
  }
  const matches = lower.match(ascii ? ASCII_TOKEN_PATTERN : TOKEN_PATTERN);
  if (matches === null) return [];
  for (let i = 0; i < matches.length; i++) {
    let token = matches[i]!;
    if (token.length > 2 && (token.endsWith("'s") || token.endsWith('\u2019s'))) token = token.slice(0, -2);
    if (token.includes("'") || token.includes('\u2019')) token = token.replace(APOSTROPHES, '');
    matches[i] = token;
  }
  return matches;
}

export class LexicalEmbedder implements Embedder {
  readonly name = 'offline:lexical';
  readonly kind = 'lexical';
  readonly dimensions: number;

  // Scratch space reused across calls: an open-addressing table from feature hash to slot, and
  // per-slot weight sums and counts. A table entry is live only if its generation is the current
  // call's, so nothing needs clearing between calls.
  private tableGeneration = new Uint32Array(1024);
  private tableHash = new Uint32Array(1024);
  private tableSlot = new Uint32Array(1024);
  private generation = 0;
  private hashes = new Uint32Array(512);
  private sums = new Float64Array(512);
  private counts = new Uint32Array(512);
  private used = 0;

  constructor(dimensions: number) {
    if (!Number.isInteger(dimensions) || dimensions < 1) {
      throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
    }
    this.dimensions = dimensions;
  }

  async embed(texts: readonly string[], usage?: Usage): Promise<number[][]> {
    void usage; // offline: nothing is spent
    return texts.map((text) => this.embedOne(text));
  }

  /** The synchronous core: the same text always gives the same vector. */
  embedOne(text: string): number[] {
    this.startGeneration();

    const tokens = tokenize(text);
    let previousStem: string | undefined;
    let previousFactor = 0;
    for (const token of tokens) {
      const factor = STOP_WORDS.has(token) ? STOP_WORD_FACTOR : 1;
      const stemmed = stem(token);
      this.add(fmix32(fnvString(SEED_UNIGRAM, stemmed)), WEIGHT_UNIGRAM * factor);
      if (previousStem !== undefined) {
        let h = fnvString(SEED_BIGRAM, previousStem);
        h = Math.imul(h ^ SEPARATOR, FNV_PRIME);
        this.add(fmix32(fnvString(h, stemmed)), WEIGHT_BIGRAM * Math.min(factor, previousFactor));
      }
      previousStem = stemmed;
      previousFactor = factor;
      this.addCharGrams(token, factor);
    }
    return this.project();
  }

  private addCharGrams(token: string, factor: number): void {
    // The word padded with boundary markers, hashed without building the padded string.
    const last = token.length + 1;
    for (const [n, seed, weight] of CHAR_GRAM_FAMILIES) {
      const grams = last + 2 - n;
      if (grams < 1) continue;
      const w = (weight * factor) / Math.sqrt(grams);
      for (let start = 0; start < grams; start++) {
        let h = seed;
        for (let i = start; i < start + n; i++) {
          const code = i === 0 || i === last ? BOUNDARY : token.charCodeAt(i - 1);
          h = Math.imul(h ^ code, FNV_PRIME);
        }
        this.add(fmix32(h), w);
      }
    }
  }

  private startGeneration(): void {
    this.used = 0;
    this.generation = (this.generation + 1) >>> 0;
    if (this.generation === 0) {
      this.tableGeneration.fill(0);
      this.generation = 1;
    }
  }

  private add(hash: number, weight: number): void {
    // Grown before probing (even if the feature turns out to be known) so the probe stays valid.
    if (this.used === this.hashes.length) this.growSlots();
    const mask = this.tableHash.length - 1;
    let i = hash & mask;
    while (this.tableGeneration[i] === this.generation) {
      if (this.tableHash[i] === hash) {
        const slot = this.tableSlot[i]!;
        this.sums[slot]! += weight;
        this.counts[slot]! += 1;
        return;
      }
      i = (i + 1) & mask;
    }
    const slot = this.used++;
    this.tableGeneration[i] = this.generation;
    this.tableHash[i] = hash;
    this.tableSlot[i] = slot;
    this.hashes[slot] = hash;
    this.sums[slot] = weight;
    this.counts[slot] = 1;
  }

  /** Doubles the slot arrays and the table (kept at most half full so probes stay short). */
  private growSlots(): void {
    const size = this.hashes.length * 2;
    const hashes = new Uint32Array(size);
    hashes.set(this.hashes);
    const sums = new Float64Array(size);
    sums.set(this.sums);
    const counts = new Uint32Array(size);
    counts.set(this.counts);
    this.hashes = hashes;
    this.sums = sums;
    this.counts = counts;

    const tableSize = size * 2;
    const mask = tableSize - 1;
    this.tableGeneration = new Uint32Array(tableSize);
    this.tableHash = new Uint32Array(tableSize);
    this.tableSlot = new Uint32Array(tableSize);
    this.generation = 1;
    for (let slot = 0; slot < this.used; slot++) {
      const hash = hashes[slot]!;
      let i = hash & mask;
      while (this.tableGeneration[i] === 1) i = (i + 1) & mask;
      this.tableGeneration[i] = 1;
      this.tableHash[i] = hash;
      this.tableSlot[i] = slot;
    }
  }

  private project(): number[] {
    const dims = this.dimensions;
    const vector = new Array<number>(dims).fill(0);
    for (let i = 0; i < this.used; i++) {
      const hash = this.hashes[i]!;
      const count = this.counts[i]!;
      // Mean weight of the occurrences times the sub-linear term frequency 1 + ln(tf).
      const value = (this.sums[i]! / count) * (1 + Math.log(count));
      // The sign comes from bits the bucket does not use, so colliding features tend to cancel
      // rather than pile up.
      const sign = fmix32(hash ^ 0x5bd1e995) & 1 ? -1 : 1;
      const bucket = hash % dims;
      vector[bucket]! += sign * value;
    }
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += vector[i]! * vector[i]!;
    if (norm === 0) {
      // Nothing to index (empty or punctuation only): a fixed unit vector keeps cosine defined.
      vector[0] = 1;
      return vector;
    }
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < dims; i++) vector[i]! *= scale;
    return vector;
  }
}

import { LexicalEmbedder } from '../src/llm/lexical-embedder.js';
import { normaliseFactText } from '../src/extraction/normalise.js';
import { aboutTheUser } from '../src/extraction/third-person.js';

/**
 * The facts a scenario sends: each job carries one user sentence that the offline extractor keeps
 * verbatim, built from invented words so that no two facts of one user are near-identical (the
 * offline resolver would NOOP the second one and the harness would report a false loss).
 */

export interface PlannedJob {
  /** Index in the scenario's plan; also the Idempotency-Key's suffix. */
  index: number;
  userId: string;
  /** The user sentence sent; the memory the job must leave behind (normalised to compare). */
  fact: string;
  /** Near-duplicate race: the pair this job belongs to (both members name the same pair). */
  pair?: number;
}

/** mulberry32: a small seeded generator, so a run can be repeated with `--seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ONSETS = ['b', 'd', 'f', 'g', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'dr', 'kl', 'pr', 'st', 'tr', 'zh', 'gl'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ei'];
const CODAS = ['', '', 'n', 'r', 'l', 'x', 'k', 'm'];

/** Words no dictionary or stemmer knows, unique within one generator. */
export class WordMaker {
  private readonly used = new Set<string>();
  constructor(private readonly random: () => number) {}

  word(capitalised = false): string {
    for (;;) {
      const syllables = 3 + Math.floor(this.random() * 2);
      let w = '';
      for (let i = 0; i < syllables; i++) w += this.pick(ONSETS) + this.pick(VOWELS) + this.pick(CODAS);
      if (this.used.has(w)) continue;
      this.used.add(w);
      return capitalised ? w[0]!.toUpperCase() + w.slice(1) : w;
    }
  }

  private pick(items: readonly string[]): string {
    return items[Math.floor(this.random() * items.length)]!;
  }
}

// Declarative, first person, no question or request: the offline extractor keeps each one whole.
const TEMPLATES: ReadonlyArray<(w: WordMaker) => string> = [
  (w) => `I collect rare ${w.word()} stamps from ${w.word(true)} and ${w.word(true)}.`,
  (w) => `My neighbour ${w.word(true)} grows ${w.word()} beans near ${w.word(true)}.`,
  (w) => `I play the ${w.word()} on Sundays with ${w.word(true)} in ${w.word(true)}.`,
  (w) => `My favourite dish is ${w.word()} soup from ${w.word(true)} with ${w.word()} bread.`,
  (w) => `I once hiked from ${w.word(true)} to ${w.word(true)} carrying a ${w.word()} lantern.`,
];

/** `count` jobs over `users` users (round robin), one distinct fact each. */
export function uniqueFactJobs(count: number, users: number, prefix: string, random: () => number): PlannedJob[] {
  const words = new WordMaker(random);
  return Array.from({ length: count }, (_, index) => ({
    index,
    userId: `${prefix}-user-${index % users}`,
    fact: TEMPLATES[index % TEMPLATES.length]!(words),
  }));
}

/**
 * The race: `pairs` pairs spread over `users` users; the two jobs of a pair carry near-identical
 * facts (one inserts "the"; cosine ≈ 0.99 with the offline embedder, above the 0.92 NOOP
 * threshold; different text, so the unique index on content does not decide for the service).
 */
export function nearDuplicateJobs(pairs: number, users: number, prefix: string, random: () => number): PlannedJob[] {
  const words = new WordMaker(random);
  const jobs: PlannedJob[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const userId = `${prefix}-user-${pair % users}`;
    const [a, b, c] = [words.word(), words.word(true), words.word(true)];
    const first = `I collect rare ${a} stamps from ${b} and ${c}.`;
    const second = `I collect the rare ${a} stamps from ${b} and ${c}.`;
    jobs.push({ index: jobs.length, userId, fact: first, pair }, { index: jobs.length + 1, userId, fact: second, pair });
  }
  return jobs;
}

export const normalise = normaliseFactText;

/** The memory a job must leave behind: the offline extractor writes the user's sentence about the user. */
export function storedFact(job: PlannedJob): string {
  return normalise(aboutTheUser(job.fact));
}

/**
 * Checks the plan against the embedder the service runs offline, before anything is sent: facts
 * of different pairs (or of a user's different jobs) must stay well under the NOOP threshold, and
 * the members of a pair well over it. A plan that fails this would make the verdict meaningless.
 */
export function checkPlan(jobs: readonly PlannedJob[], noopThreshold = 0.92): string | undefined {
  const embedder = new LexicalEmbedder(1536);
  const byUser = new Map<string, Array<{ job: PlannedJob; vector: number[] }>>();
  for (const job of jobs) {
    const list = byUser.get(job.userId) ?? [];
    list.push({ job, vector: embedder.embedOne(job.fact) });
    byUser.set(job.userId, list);
  }
  const margin = 0.05;
  for (const list of byUser.values()) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const a = list[i]!;
        const b = list[j]!;
        const similarity = a.vector.reduce((sum, x, k) => sum + x * b.vector[k]!, 0);
        const samePair = a.job.pair !== undefined && a.job.pair === b.job.pair;
        if (samePair && similarity < noopThreshold + margin) return `pair ${a.job.pair} is not near-identical (${similarity.toFixed(3)})`;
        if (!samePair && similarity > noopThreshold - margin) return `"${a.job.fact}" and "${b.job.fact}" are too similar (${similarity.toFixed(3)})`;
        if (samePair && normalise(a.job.fact) === normalise(b.job.fact)) return `pair ${a.job.pair} has identical text`;
      }
    }
  }
  return undefined;
}

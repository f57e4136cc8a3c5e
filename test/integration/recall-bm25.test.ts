import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTenant } from '../../src/db/tenant.js';
import { bm25Scores, type Bm25Document } from '../../src/recall/bm25.js';
import { findRecallSignals } from '../../src/recall/repository.js';
import { RECALL_MAX_TERMS, RECALL_SCAN_LIMIT, collectCandidates, type Candidate } from '../../src/recall/service.js';
import { queryWordForms } from '../../src/recall/word-forms.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * The full-text arm end to end, on both backends: the database's signals (the query's lexemes,
 * each memory's length and its occurrences of them, N and avgdl of the scope) must give the same
 * BM25 as the reference fed with everything the database knows (every lexeme of every memory, read
 * past the application with unnest).
 */

let app: TestApp;
let stored: Array<{ id: string; content: string }> = [];
/** The id of the memory whose content starts so. */
const idOf = (start: string) => stored.find((m) => m.content.startsWith(start))!.id;
const tenant = uniqueTenant('bm25');
const user = 'alice';

const MEMORIES = [
  { content: 'Alice met Bob in Rome last spring', category: 'travel' },
  { content: 'Bob meets Alice for coffee every Tuesday, and they meet again on Fridays', category: 'social' },
  { content: 'The children went to the zoo with their grandmother', category: 'family' },
  { content: "Alice's child goes to school by bus", category: 'family' },
  { content: 'Alice is allergic to shellfish', category: 'health' },
  { content: 'Alice plays the cello in a community orchestra on Thursdays', category: 'hobby' },
  { content: 'Alice and Bob went hiking in Norway and hiked for six hours', category: 'travel' },
  { content: 'Bob bought a red bicycle', category: 'social' },
  { content: "O'Brien's server is at \\\\files\\share, it's said", category: 'work' },
  { content: 'Ok!', category: 'social' },
];

beforeAll(async () => {
  app = await startTestApp();
  const token = await tokenFor({ tenant, user });
  const res = await app.call('POST', '/memories', { token, body: { memories: MEMORIES } });
  expect(res.status).toBe(201);
  stored = res.body.memories;
});
afterAll(async () => {
  await app?.close();
});

const queryOf = (text: string, categories?: string[]) => ({
  tenantId: tenant,
  userId: user,
  text,
  wordForms: queryWordForms(text),
  asOf: undefined,
  now: new Date(),
  poolSize: 100,
  maxTerms: RECALL_MAX_TERMS,
  scanLimit: RECALL_SCAN_LIMIT,
  categories,
});

async function candidates(text: string, categories?: string[]): Promise<Candidate[]> {
  const [embedding] = await app.runtime.services.embedder.embed([text]);
  const pool = await withTenant(app.runtime.services.database, tenant, (tx) => collectCandidates(tx, { ...queryOf(text, categories), embedding: embedding! }));
  return pool.candidates;
}

/** The reference, fed with every lexeme of every memory in scope as the database stores them. */
async function referenceScores(text: string, categories?: string[]): Promise<Map<string, number>> {
  const rows = await app.ownerQuery<{ id: string; category: string; lexeme: string | null; tf: number | null }>(
    `select m.id, m.category, u.lexeme, cardinality(u.positions) as tf
     from memories m left join lateral unnest(m.search_text) u on true
     where m.tenant_id = $1 and m.user_id = $2 and m.valid_to is null`,
    [tenant, user],
  );
  const docs = new Map<string, Map<string, number>>();
  for (const r of rows) {
    if (categories && !categories.includes(r.category)) continue;
    const lexemes = docs.get(r.id) ?? new Map<string, number>();
    if (r.lexeme !== null) lexemes.set(r.lexeme, Number(r.tf));
    docs.set(r.id, lexemes);
  }
  const lexemesOf = async (words: string) =>
    (await app.ownerQuery<{ lexeme: string }>(`select lexeme from unnest(to_tsvector('english', $1))`, [words])).map((r) => r.lexeme);
  // Lexemes of an irregular word's forms make one term; every other query lexeme is a term alone.
  const grouped = new Map<number, Set<string>>();
  for (const { form, group } of queryWordForms(text)) {
    for (const lexeme of await lexemesOf(form)) grouped.set(group, (grouped.get(group) ?? new Set()).add(lexeme));
  }
  const inGroup = new Set([...grouped.values()].flatMap((g) => [...g]));
  const terms = [...[...grouped.values()].map((g) => [...g]), ...(await lexemesOf(text)).filter((l) => !inGroup.has(l)).map((l) => [l])];
  const documents: Bm25Document[] = [...docs].map(([id, lexemes]) => ({ id, length: lexemes.size, lexemes }));
  const averageLength = documents.reduce((sum, d) => sum + d.length, 0) / documents.length;
  return bm25Scores(terms, documents, { documents: documents.length, averageLength });
}

describe('the full-text arm', () => {
  it.each([
    ['When did Alice meet Bob?'],
    ['Where did the children go?'],
    ['hiking trips in Norway'],
    ['What did Bob buy?'],
    ['shellfish allergy'],
    ["Where is O'Brien's \\\\files\\share server? It's said so"],
  ])('gives the reference BM25 for %j', async (text) => {
    const got = await candidates(text);
    const expected = await referenceScores(text);
    expect(got).toHaveLength(MEMORIES.length); // a small user: the vector arm brings everyone
    for (const c of got) expect(c.textScore).toBeCloseTo(expected.get(c.id)!, 9);
    expect(got.some((c) => c.textScore > 0)).toBe(true);
  });

  it('reads the lexemes and their occurrences from the database as it stores them', async () => {
    const text = 'Bob meets Alice';
    const [embedding] = await app.runtime.services.embedder.embed([text]);
    const signals = await withTenant(app.runtime.services.database, tenant, (tx) => findRecallSignals(tx, { ...queryOf(text), embedding: embedding! }));
    expect(signals.documents).toBe(MEMORIES.length);
    const coffee = signals.rows.find((r) => r.hits.get('meet') === 2)!;
    expect(coffee).toBeDefined();
    expect(coffee.hits.get('bob')).toBe(1);
    expect(coffee.hits.get('alic')).toBe(1);
    expect(signals.lexemes.filter((l) => l.group !== null).map((l) => l.lexeme).sort()).toEqual(['meet', 'met']);
  });

  it('joins irregular forms: "meet" finds "met" and "meets", "children" finds "child"', async () => {
    const meet = await candidates('meet');
    const scoreOf = (rows: Candidate[], start: string) => rows.find((c) => c.id === idOf(start))!.textScore;
    expect(scoreOf(meet, 'Alice met Bob')).toBeGreaterThan(0);
    expect(scoreOf(meet, 'Bob meets Alice')).toBeGreaterThan(scoreOf(meet, 'Alice met Bob')); // tf 2
    const children = await candidates('children');
    expect(scoreOf(children, "Alice's child")).toBeGreaterThan(0);
    expect(scoreOf(children, 'The children went')).toBeGreaterThan(0);
  });

  it('takes N, avgdl and df over the memories in scope (here: a category filter)', async () => {
    const text = 'Alice went to Rome';
    const got = await candidates(text, ['travel', 'family']);
    const expected = await referenceScores(text, ['travel', 'family']);
    expect(got).toHaveLength(4);
    for (const c of got) expect(c.textScore).toBeCloseTo(expected.get(c.id)!, 9);
    // Not the same memory's score over all memories: the statistics moved.
    const all = await candidates(text);
    const rome = idOf('Alice met Bob');
    expect(Math.abs(got.find((c) => c.id === rome)!.textScore - all.find((c) => c.id === rome)!.textScore)).toBeGreaterThan(1e-6);
  });

  it('scores nothing for a query of stop words, yet still returns the vector arm', async () => {
    const got = await candidates('what is it that they were doing?');
    expect(got).toHaveLength(MEMORIES.length);
    for (const c of got) expect(c.textScore).toBe(0);
  });

  it('takes quotes, backslashes and tsquery operators in the query as plain text', async () => {
    const token = await tokenFor({ tenant, user });
    for (const query of ["O'Brien's \\\\server\\share & | ! ( ) <-> :* 'cello'", "'''", '\\', 'cello:*A & !orchestra']) {
      const res = await app.call('POST', '/memories/recall', { token, body: { query, weights: { relevance: 1 }, min_relevance: 0 } });
      expect(res.status).toBe(200);
      expect(res.body.memories.length).toBeGreaterThan(0);
    }
    const res = await app.call('POST', '/memories/recall', { token, body: { query: 'cello:*A & !orchestra', weights: { relevance: 1 } } });
    expect(res.body.memories[0].content).toContain('cello');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTenant } from '../../src/db/tenant.js';
import { findRecallSignals, type SignalsQuery } from '../../src/recall/repository.js';
import { RECALL_MAX_TERMS, RECALL_SCAN_LIMIT } from '../../src/recall/service.js';
import { queryWordForms } from '../../src/recall/word-forms.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Recall's work is bounded whatever the request: the query's distinct terms that rank, and the
 * memories scanned per request (the newest in scope). Below both bounds nothing changes (the BM25
 * reference test in recall-bm25.test.ts and the LoCoMo figures hold that).
 */

let app: TestApp;
const tenant = uniqueTenant('bounds');
const user = 'carol';
let token: string;
/** Distinct made-up words, none a stop word or an irregular form. */
const WORDS = Array.from({ length: 60 }, (_, i) => `qx${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}vor`);
/** Memory i occurred i days after the start: the last ones are the newest. */
const day = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString();

beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant, user });
  // Thirty memories, one word each; memory 0 (the oldest) also holds the 40th word of the query.
  const memories = Array.from({ length: 30 }, (_, i) => ({ content: `${WORDS[i]} note ${i === 0 ? WORDS[39] : ''}`.trim(), occurred_at: day(i) }));
  const res = await app.call('POST', '/memories', { token, body: { memories } });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await app?.close();
});

async function signals(text: string, bounds: Pick<SignalsQuery, 'maxTerms' | 'scanLimit'>) {
  const [embedding] = await app.runtime.services.embedder.embed([text]);
  const q: SignalsQuery = { tenantId: tenant, userId: user, embedding: embedding!, text, wordForms: queryWordForms(text), asOf: undefined, now: new Date(), poolSize: 100, ...bounds };
  return withTenant(app.runtime.services.database, tenant, (tx) => findRecallSignals(tx, q));
}

describe('recall bounds its work', () => {
  it('ranks with at most maxTerms of the query distinct lexemes, the first ones in the query', async () => {
    const text = WORDS.slice(0, 45).join(' ');
    const got = await signals(text, { maxTerms: 10, scanLimit: 1000 });
    expect(got.lexemes.map((l) => l.lexeme).sort()).toEqual(WORDS.slice(0, 10).sort());
    // Memory 0 holds word 0 (kept) and word 39 (cut): only word 0 reaches it.
    const oldest = got.rows.find((r) => r.hits.has(WORDS[0]!))!;
    expect([...oldest.hits.keys()]).toEqual([WORDS[0]]);
  });

  it('cuts irregular forms with the words that bring them, not by themselves', async () => {
    const text = `${WORDS.slice(0, 40).join(' ')} went children`;
    const got = await signals(text, { maxTerms: 40, scanLimit: 1000 });
    expect(got.lexemes.length).toBeLessThanOrEqual(40);
    expect(got.lexemes.some((l) => l.group !== null)).toBe(false);
    const short = await signals('Where did the children go?', { maxTerms: 40, scanLimit: 1000 });
    expect(short.lexemes.filter((l) => l.group !== null).map((l) => l.lexeme)).toEqual(expect.arrayContaining(['child', 'children', 'went']));
  });

  it('scans at most scanLimit memories, the newest in scope, and says when it left some out', async () => {
    const capped = await signals(WORDS.slice(0, 30).join(' '), { maxTerms: 60, scanLimit: 10 });
    expect(capped.documents).toBe(10);
    expect(capped.capped).toBe(true);
    // Correct-looking: the newest ten, each matching its word, scored from the ten's statistics.
    const newest = new Set(WORDS.slice(20, 30));
    expect(capped.rows).toHaveLength(10);
    for (const row of capped.rows) expect([...row.hits.keys()].some((l) => newest.has(l))).toBe(true);
    const whole = await signals(WORDS.slice(0, 30).join(' '), { maxTerms: 60, scanLimit: 30 });
    expect(whole.documents).toBe(30);
    expect(whole.capped).toBe(false);
  });

  it('through the API: a word past the service cap ranks nothing, and a small user is unchanged', async () => {
    expect(RECALL_MAX_TERMS).toBeLessThan(39);
    expect(RECALL_SCAN_LIMIT).toBeGreaterThanOrEqual(1000);
    // The query's 40th distinct word is the only one memory 0 shares with it beyond its own word 0;
    // asked alone, that word finds memory 0 first.
    const alone = await app.call('POST', '/memories/recall', { token, body: { query: WORDS[39], limit: 1, weights: { relevance: 1 } } });
    expect(alone.status).toBe(200);
    expect(alone.body.memories[0].content).toContain(WORDS[39]);
    // Past the cap it does not count: memory 0 scores like the others holding one kept word.
    const text = [...WORDS.slice(1, 39), WORDS[39]].join(' ');
    const res = await app.call('POST', '/memories/recall', { token, body: { query: text, limit: 30, weights: { relevance: 1 } } });
    expect(res.status).toBe(200);
    const oldest = res.body.memories.find((m: { content: string }) => m.content.startsWith(`${WORDS[0]} `));
    expect(oldest === undefined || oldest.scores.relevance < 0.5).toBe(true);
  });
});

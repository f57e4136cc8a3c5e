import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { query } from '../../src/db/client.js';
import { withTenant } from '../../src/db/tenant.js';
import type { RecallSignals, SignalsQuery } from '../../src/recall/repository.js';
import { RECALL_MAX_TERMS, RECALL_SCAN_LIMIT, collectCandidates, rankRecallCandidates, type RecallStrategy } from '../../src/recall/service.js';
import { DEFAULT_WEIGHTS } from '../../src/recall/scoring.js';
import { queryWordForms } from '../../src/recall/word-forms.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Recall reads a scope of at most RECALL_SCAN_LIMIT memories by scanning it, and a larger one
 * through the indexes (quantized vectors re-ranked, the text arm through GIN), over all of it. The
 * two must agree where both read every memory, and a user who crosses the limit must go on being
 * answered, older memories included.
 */

let app: TestApp;
const tenant = uniqueTenant('strategy');
const user = 'dora';
let token: string;
/** Made-up words, none a stop word: each memory holds a few, so memories share some and not others. */
const WORDS = Array.from({ length: 12 }, (_, i) => `zq${String.fromCharCode(97 + i)}lomb`);
const day = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString();

beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant, user });
  const memories = Array.from({ length: 40 }, (_, i) => ({
    content: `${WORDS[i % 12]} and ${WORDS[(i * 5) % 12]} at the lake ${i % 3 === 0 ? 'with Anna' : 'alone'} on visit ${i}`,
    occurred_at: day(i),
    importance: 1 + (i % 10),
  }));
  const res = await app.call('POST', '/memories', { token, body: { memories } });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await app?.close();
});

async function pool(text: string, strategy: RecallStrategy, scanLimit = RECALL_SCAN_LIMIT, scope: Partial<SignalsQuery> = {}) {
  const [embedding] = await app.runtime.services.embedder.embed([text]);
  const q: SignalsQuery = { tenantId: tenant, userId: user, embedding: embedding!, text, wordForms: queryWordForms(text), asOf: undefined, now: new Date(), poolSize: 100, maxTerms: RECALL_MAX_TERMS, scanLimit, ...scope };
  let used = '';
  let scanned = false;
  let signals: RecallSignals | undefined;
  const got = await withTenant(app.runtime.services.database, tenant, (tx) =>
    collectCandidates(tx, q, (read, s, counted) => {
      signals = read;
      used = s;
      scanned = counted;
    }, strategy),
  );
  return { ...got, used, scanned, rows: signals!.rows };
}

const byId = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
/** The candidates holding a query word, by id. */
const holding = (p: { candidates: Array<{ id: string; textScore: number }> }) => p.candidates.filter((c) => c.textScore > 0).map((c) => c.id).sort();

describe('recall strategy by the size of the scope', () => {
  it('gives the same candidates and the same ranking from the scan and the indexes on a small scope', async () => {
    for (const text of [`${WORDS[1]} ${WORDS[6]} lake`, 'Who went with Anna?', `${WORDS[3]} visit`, 'nothing in common here']) {
      const scan = await pool(text, 'scan');
      const indexed = await pool(text, 'quantized');
      expect(scan.used).toBe('scan');
      expect(indexed.used).toBe('quantized');
      expect(scan.candidates.length).toBeGreaterThan(0);
      expect(byId(indexed.candidates).map((c) => [c.id, c.textScore.toFixed(9), c.similarity.toFixed(9)])).toEqual(
        byId(scan.candidates).map((c) => [c.id, c.textScore.toFixed(9), c.similarity.toFixed(9)]),
      );
      expect(indexed.fullTextScore).toBeCloseTo(scan.fullTextScore, 9);
      const options = { weights: DEFAULT_WEIGHTS, halfLifeHours: 720, now: new Date(), minRelevance: 0, limit: 10 };
      expect(rankRecallCandidates(indexed, options).map((c) => c.id)).toEqual(rankRecallCandidates(scan, options).map((c) => c.id));
    }
  });

  it('without the pass over the bits (the lexical embedder), reads the memories holding a query word, and falls back to the pass when they are too few', async () => {
    const withHit = (rows: Array<{ id: string; hits: Map<string, number> }>) => rows.filter((r) => r.hits.size > 0).map((r) => r.id).sort();
    const text = `${WORDS[1]} ${WORDS[6]}`;
    const scan = await pool(text, 'scan', RECALL_SCAN_LIMIT, { poolSize: 3 });
    const bits = await pool(text, 'quantized');
    const words = await pool(text, 'quantized', RECALL_SCAN_LIMIT, { poolSize: 3, nearestByBits: false });
    // The pass brings memories by their bits alone; without it every memory read holds a word, and
    // they are the same as the scan's. (That the pass is then not run is speed: bench biguser.)
    expect(bits.rows.some((r) => r.hits.size === 0)).toBe(true);
    expect(words.rows.every((r) => r.hits.size > 0)).toBe(true);
    expect(withHit(words.rows)).toEqual(withHit(scan.rows));
    expect(words.rows.length).toBeGreaterThanOrEqual(3);
    // A query no memory shares a word with: the text arm brings nothing, so the pass answers.
    const none = await pool('nothing in common here', 'quantized', RECALL_SCAN_LIMIT, { nearestByBits: false });
    const noneBits = await pool('nothing in common here', 'quantized');
    expect(none.candidates.length).toBeGreaterThan(0);
    expect(byId(none.candidates).map((c) => c.id)).toEqual(byId(noneBits.candidates).map((c) => c.id));
  });

  it('reads in full only the text arm’s best by BM25, and its top by BM25 stays that of every memory holding a word', async () => {
    const text = `${WORDS[0]} ${WORDS[5]} lake with Anna`;
    const topText = (p: { candidates: Array<{ id: string; textScore: number }> }) =>
      p.candidates.filter((c) => c.textScore > 0).sort((a, b) => b.textScore - a.textScore || (a.id < b.id ? -1 : 1)).slice(0, 3).map((c) => [c.id, c.textScore.toFixed(9)]);
    const all = await pool(text, 'quantized', RECALL_SCAN_LIMIT, { poolSize: 3, nearestByBits: false, largeScope: { textRerank: 1000 } });
    const cut = await pool(text, 'quantized', RECALL_SCAN_LIMIT, { poolSize: 3, nearestByBits: false, largeScope: { textRerank: 3 } });
    // "lake" is in all 40: every memory holds a word, and all of them are read without the cut.
    expect(all.rows.length).toBe(40);
    expect(cut.rows.length).toBe(3);
    expect(topText(cut)).toEqual(topText(all));
    expect(cut.fullTextScore).toBeCloseTo(all.fullTextScore, 9);
    // With a filter (its columns are not in the copies) every memory holding a word is read, the filter
    // applied then (no pass over the bits here, which would bring them all on its own).
    const who = 'cato';
    const memories = Array.from({ length: 10 }, (_, i) => ({ content: `lake walk ${i}`, category: i < 8 ? 'trip' : 'home', occurred_at: day(i) }));
    expect((await app.call('POST', '/memories', { token: await tokenFor({ tenant, user: who }), body: { memories } })).status).toBe(201);
    const bounds = { userId: who, poolSize: 3, nearestByBits: false, largeScope: { textRerank: 3, rerank: 0 } };
    expect((await pool('lake', 'quantized', RECALL_SCAN_LIMIT, bounds)).rows.length).toBe(3);
    expect((await pool('lake', 'quantized', RECALL_SCAN_LIMIT, { ...bounds, categories: ['trip'] })).rows.length).toBe(8);
  });

  it('without the pass, reads a word too common to read alone before falling back to the pass, when a rarer word found too few', async () => {
    const who = 'hana';
    // The pass would bring the near-spellings (no word shared, nearer by their vectors than the
    // long memories holding "lake"); the text arm brings only memories holding a word.
    const filler = 'under grey autumn skies with friends talking about books gardens travel recipes and music';
    const contents = [...Array.from({ length: 6 }, (_, i) => `lake ${filler} ${i}`), 'zqrare stone by the lake', 'zqrarx zqrary one', 'zqrarx zqrary two', 'zqrarx zqrary three'];
    const res = await app.call('POST', '/memories', { token: await tokenFor({ tenant, user: who }), body: { memories: contents.map((content, i) => ({ content, occurred_at: day(i) })) } });
    expect(res.status).toBe(201);
    // "lake" is held by 7, past the read limit of 3; "zqrare" by 1, too few for a pool of 3.
    const got = await pool('zqrare lake', 'quantized', RECALL_SCAN_LIMIT, { userId: who, poolSize: 3, nearestByBits: false, largeScope: { termReadLimit: 3 } });
    expect(got.rows.length).toBe(7);
    expect(got.rows.every((r) => r.hits.size > 0)).toBe(true);
    // A query whose words no memory holds still falls back to the pass.
    const none = await pool('zqabsent', 'quantized', RECALL_SCAN_LIMIT, { userId: who, poolSize: 3, nearestByBits: false, largeScope: { termReadLimit: 3 } });
    expect(none.rows.length).toBeGreaterThan(0);
    expect(none.rows.every((r) => r.hits.size === 0)).toBe(true);
  });

  it('leaves out of the text arm what has expired since an as_of, so it cannot take the place of a valid memory in the cut', async () => {
    const who = 'fred';
    const userToken = await tokenFor({ tenant, user: who });
    // The three that repeat the word rank first by BM25; they expire (unswept) after the as_of.
    const memories = Array.from({ length: 6 }, (_, i) => ({ content: i < 3 ? `heron heron heron on day ${i}` : `heron by the pond on day ${i}`, occurred_at: day(i) }));
    const res = await app.call('POST', '/memories', { token: userToken, body: { memories } });
    expect(res.status).toBe(201);
    const ids = (res.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    await app.ownerQuery(`update memories set expires_at = now() - interval '1 minute' where tenant_id = $1 and id = any($2::uuid[])`, [tenant, ids.slice(0, 3)]);
    const bounds = { userId: who, asOf: new Date(day(20)), poolSize: 3, nearestByBits: false, largeScope: { textRerank: 3, rerank: 0 } };
    const cut = await pool('heron', 'quantized', RECALL_SCAN_LIMIT, bounds);
    expect(holding(cut)).toEqual([...ids.slice(3)].sort());
    expect(holding(cut)).toEqual(holding(await pool('heron', 'scan', RECALL_SCAN_LIMIT, bounds)));
  });

  it('past the scan limit uses the indexes and still finds the oldest memories', async () => {
    // With a limit of 10, the scan alone reads the newest 10 (visits 30-39) and misses visit 0.
    const text = `${WORDS[0]} visit`;
    const capped = await pool(text, 'scan', 10);
    const auto = await pool(text, 'auto', 10);
    expect(auto.used).toBe('quantized');
    const whole = await pool(text, 'scan', 1000);
    // Every memory holding the word comes back, as when the whole scope is scanned.
    expect(holding(auto)).toEqual(holding(whole));
    expect(holding(capped).length).toBeLessThan(holding(whole).length);
    const under = await pool(text, 'auto', 1000);
    expect(under.used).toBe('scan');
  });

  it('goes straight to the indexes for a user found past the limit, and scans one who has fallen back under it', async () => {
    const who = 'ella';
    const userToken = await tokenFor({ tenant, user: who });
    const memories = Array.from({ length: 12 }, (_, i) => ({ content: `${WORDS[i % 4]} by the river on day ${i}`, occurred_at: day(i) }));
    const res = await app.call('POST', '/memories', { token: userToken, body: { memories } });
    expect(res.status).toBe(201);
    const ids = (res.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    const text = `${WORDS[1]} river`;
    const ask = (scope: Partial<SignalsQuery> = {}) => pool(text, 'auto', 10, { userId: who, ...scope });
    const first = await ask();
    expect([first.used, first.scanned]).toEqual(['quantized', true]);
    // Known past the limit now: the scan's statement, which would only count to learn it, is left out.
    const again = await ask();
    expect([again.used, again.scanned]).toEqual(['quantized', false]);
    expect(byId(again.candidates)).toEqual(byId(first.candidates));
    // A scope that may be small whatever the user's size is counted as before: a filter, an as_of
    // past or to come (one to come leaves out what expires before it).
    expect((await ask({ asOf: new Date(day(3)) })).scanned).toBe(true);
    expect((await ask({ asOf: new Date(Date.now() + 86_400_000) })).scanned).toBe(true);
    expect((await ask({ categories: ['none'] })).scanned).toBe(true);
    // Down to 9 memories: the indexes' count shows it, and the scan answers, now and next time.
    for (const id of ids.slice(0, 3)) expect((await app.call('DELETE', `/memories/${id}`, { token: userToken })).status).toBe(204);
    const under = await ask();
    expect([under.used, under.scanned]).toEqual(['scan', true]);
    expect(byId(under.candidates).map((c) => c.id)).toEqual(byId((await pool(text, 'scan', 10, { userId: who })).candidates).map((c) => c.id));
    expect((await ask()).used).toBe('scan');
  });

  it('chooses by the size of the scope itself, not of the user: an as_of or a filter that leaves few memories is scanned', async () => {
    const text = `${WORDS[0]} visit`;
    // The user holds 40 current memories, more than a limit of 10; at day 4 only 5 had occurred.
    const early = await pool(text, 'auto', 10, { asOf: new Date(day(4)) });
    expect(early.used).toBe('scan');
    const earlyScan = await pool(text, 'scan', 1000, { asOf: new Date(day(4)) });
    expect(byId(early.candidates).map((c) => c.id)).toEqual(byId(earlyScan.candidates).map((c) => c.id));
    expect(early.candidates.length).toBeGreaterThan(0);
    // The scope is the filtered one: a filter leaving no memory is scanned, whatever the user holds.
    expect((await pool(text, 'auto', 10, { agentId: 'no-such-agent' })).used).toBe('scan');
    expect((await pool(text, 'auto', 10, { asOf: new Date(day(20)) })).used).toBe('quantized');
  });

  it('counts an as_of scope that holds more than the user now does (memories since superseded) and leaves the scan for it', async () => {
    const who = 'fay';
    const t = await tokenFor({ tenant, user: who });
    const memories = Array.from({ length: 12 }, (_, i) => ({ content: `${WORDS[i % 3]} by the pier on walk ${i}`, occurred_at: day(i) }));
    expect((await app.call('POST', '/memories', { token: t, body: { memories } })).status).toBe(201);
    // Four superseded at day 20 (as an extraction's DELETE does): 8 current, 12 valid at day 15.
    await app.ownerQuery(
      `update memories set valid_to = $3 where id in (select id from memories where tenant_id = $1 and user_id = $2 order by occurred_at limit 4)`,
      [tenant, who, day(20)],
    );
    const text = `${WORDS[0]} walk`;
    const now = await pool(text, 'auto', 10, { userId: who });
    expect(now.used).toBe('scan');
    const then = await pool(text, 'auto', 10, { userId: who, asOf: new Date(day(15)) });
    expect(then.used).toBe('quantized');
    const whole = await pool(text, 'scan', 1000, { userId: who, asOf: new Date(day(15)) });
    expect(holding(then)).toEqual(holding(whole));
    expect(holding(then).length).toBeGreaterThan(holding(now).length);
  });

  it('keeps the lexeme counts (BM25 df, N, avgdl) and the narrow copies of a large scope equal to the memories after every kind of write', async () => {
    const who = 'lex';
    const t = await tokenFor({ tenant, user: who });
    // The counts as the triggers keep them, and as the current memories give them, side by side.
    const kept = () =>
      app.ownerQuery<{ lexeme: string; documents: string; lengths: string }>(
        `select lexeme, documents::text, lengths::text from memory_lexeme_stats where tenant_id = $1 and user_id = $2 order by lexeme`,
        [tenant, who],
      );
    const truth = () =>
      app.ownerQuery<{ lexeme: string; documents: string; lengths: string }>(
        `select lexeme, count(*)::text as documents, (case when lexeme = '' then sum(length(search_text)) else 0 end)::text as lengths
         from memories m cross join lateral unnest(array_append(tsvector_to_array(m.search_text), '')) as u(lexeme)
         where tenant_id = $1 and user_id = $2 and valid_to is null group by lexeme order by lexeme`,
        [tenant, who],
      );
    // The text arm's copies (memory_search) as the triggers keep them, and as the memories give them.
    const copies = (table: string) =>
      app.ownerQuery<Record<string, string>>(
        `select id::text, user_id, occurred_at::text, valid_to::text, expires_at::text, search_text::text from ${table} where tenant_id = $1 and user_id = $2 order by id`,
        [tenant, who],
      );
    const expectKept = async () => {
      expect(await kept()).toEqual(await truth());
      expect(await copies('memory_search')).toEqual(await copies('memories'));
    };
    const added = await app.call('POST', '/memories', {
      token: t,
      body: { memories: [{ content: `${WORDS[0]} ${WORDS[1]} by the lake` }, { content: `${WORDS[1]} ${WORDS[2]} in the hills` }, { content: `${WORDS[2]} alone` }] },
    });
    expect(added.status).toBe(201);
    const ids = (added.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    expect((await kept()).length).toBeGreaterThan(3);
    expect((await copies('memory_search')).length).toBe(3);
    await expectKept();
    // The same fact again supersedes the first (an update of valid_to), a patch changes words, a delete removes them.
    expect((await app.call('POST', '/memories', { token: t, body: { memories: [{ content: `${WORDS[0]} ${WORDS[1]} by the lake` }] } })).status).toBe(201);
    await expectKept();
    expect((await app.call('PATCH', `/memories/${ids[1]}`, { token: t, body: { content: `${WORDS[3]} in the valley` } })).status).toBe(200);
    await expectKept();
    // An expiry set from outside the API (as an operator might) is copied too.
    await app.ownerQuery(`update memories set expires_at = $3 where tenant_id = $1 and id = $2`, [tenant, ids[0], day(400)]);
    await expectKept();
    expect((await app.call('DELETE', `/memories/${ids[2]}`, { token: t })).status).toBeLessThan(300);
    await expectKept();
    const after = await kept();
    // A word no current memory holds any longer leaves no row behind.
    expect(after.map((r) => r.lexeme)).not.toContain(WORDS[2]);
  });

  it("counts an irregular word's forms as one term of the text arm's sets, as BM25 does", async () => {
    const who = 'gil';
    const t = await tokenFor({ tenant, user: who });
    const [a, b, c, e, f] = [WORDS[4], WORDS[5], WORDS[6], WORDS[7], WORDS[8]];
    // The oldest memory holds 4 of the query's 6 terms (people, with its form person, is one). Every
    // term it holds is too common to be read alone, the rare two are read alone (newest first) and
    // bring only newer memories; only a set of all terms but two finds it. Counted as 7 lexemes,
    // the sets of all but two needed 5 of them, which it does not hold.
    const target = { content: `${a} ${b} ${c} people at the fair`, occurred_at: day(0) };
    const filler = [a, b, c, 'people', e, e, e, f, f, f].flatMap((w, i) => (i < 4 ? [0, 1, 2, 3] : [0]).map((k) => `${w} on an ordinary outing ${i}-${k}`));
    const memories = [target, ...filler.map((content, i) => ({ content, occurred_at: day(1 + i) }))];
    const res = await app.call('POST', '/memories', { token: t, body: { memories } });
    expect(res.status).toBe(201);
    const targetId = (res.body as { memories: Array<{ id: string }> }).memories[0]!.id;
    const text = `${a} ${b} ${c} people ${e} ${f}`;
    expect(queryWordForms(text).map((w) => w.form).sort()).toEqual(['people', 'person']);
    // No Hamming re-rank, so the text arm alone must find it; two memories a set; a term held by more than three is not read alone.
    const got = await pool(text, 'quantized', RECALL_SCAN_LIMIT, { userId: who, largeScope: { rerank: 0, perSet: 2, termReadLimit: 3 } });
    expect(got.used).toBe('quantized');
    expect(holding(got)).toContain(targetId);
    const options = { weights: DEFAULT_WEIGHTS, halfLifeHours: 720, now: new Date(), minRelevance: 0, limit: 1 };
    expect(rankRecallCandidates(got, options).map((m) => m.id)).toEqual([targetId]);
  });

  it('skips a set of terms only when a smaller set it holds was read whole, in the text arm', async () => {
    const who = 'ivy';
    const [cedar, dune, rune] = ['zqcedar', 'zqdune', 'zqrune'];
    // The oldest memory holds cedar and dune; newer ones hold one of them, more than a set's two.
    const contents = [`${cedar} ${dune} by the old gate`, ...[1, 2, 3].map((i) => `${cedar} on a walk ${i}`), ...[4, 5].map((i) => `${dune} on a walk ${i}`), `${rune} and ${cedar} at dusk`];
    const res = await app.call('POST', '/memories', { token: await tokenFor({ tenant, user: who }), body: { memories: contents.map((content, i) => ({ content, occurred_at: day(i) })) } });
    expect(res.status).toBe(201);
    const ids = (res.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    // Each word read alone gives its newest two, short of the oldest: only the set of both, read
    // because neither word was read whole, finds it.
    const bounds = { userId: who, poolSize: 3, nearestByBits: false, largeScope: { rerank: 0, perSet: 2, termReadLimit: 10 } };
    expect(holding(await pool(`${cedar} ${dune}`, 'quantized', RECALL_SCAN_LIMIT, bounds))).toContain(ids[0]);
    // Rune is held by one memory, read whole: the set of rune and cedar is skipped, so that memory
    // comes back for rune and for cedar (among its newest two), not a third time for the set of both.
    const sets = [`('${rune}')`, `('${cedar}')`, `('${cedar}') & ('${rune}')`];
    const terms = [rune, cedar, `${cedar}\u0002${rune}`];
    const rows = await withTenant(app.runtime.services.database, tenant, (tx) =>
      query<{ id: string }>(tx, sql`select id::text as id from engram_recall_text_rows(${who}, array[${sql.join(sets.map((x) => sql`${x}`), sql`, `)}]::text[], array[${sql.join(terms.map((x) => sql`${x}`), sql`, `)}]::text[], 2, null, ${new Date().toISOString()}::timestamptz)`),
    );
    expect(rows.map((r) => r.id).sort()).toEqual([ids[6]!, ids[6]!, ids[3]!].sort());
  });

  it('reads a common term alone when the rarest of the query is one the user holds no memory with', async () => {
    const who = 'hal';
    const t = await tokenFor({ tenant, user: who });
    const memories = Array.from({ length: 5 }, (_, i) => ({ content: `${WORDS[9]} on errand ${i}`, occurred_at: day(i) }));
    const res = await app.call('POST', '/memories', { token: t, body: { memories } });
    expect(res.status).toBe(201);
    const ids = (res.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    // WORDS[9] is held by 5 memories, more than 3; WORDS[10] by none. No Hamming re-rank.
    const got = await pool(`${WORDS[9]} ${WORDS[10]}`, 'quantized', RECALL_SCAN_LIMIT, { userId: who, largeScope: { rerank: 0, perSet: 2, termReadLimit: 3 } });
    expect(holding(got)).toEqual([ids[3]!, ids[4]!].sort());
  });

  // One more than the scan limit: on PostgreSQL only, where it takes a few seconds (the embedded
  // backend is checked by the test above, with a small scan limit).
  it.skipIf(TEST_BACKEND === 'pglite')(`through the API: a user crossing ${RECALL_SCAN_LIMIT} memories keeps being answered, the oldest included`, async () => {
    const big = 'erin';
    const bigToken = await tokenFor({ tenant, user: big });
    const oldest = { content: 'Erin keeps a qxvintage zoetrope in the attic', occurred_at: day(0) };
    const filler = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ content: `Erin note ${from + i}: ${WORDS[(from + i) % 12]} on a regular day`, occurred_at: day(1 + from + i) }));
    // Exactly the scan limit, sent in batches of at most 1,000 (an add's largest).
    const all = [oldest, ...filler(0, RECALL_SCAN_LIMIT - 1)];
    for (let start = 0; start < all.length; start += 1000) {
      const res = await app.call('POST', '/memories', { token: bigToken, body: { memories: all.slice(start, start + 1000) } });
      expect(res.status).toBe(201);
    }
    const ask = async () => {
      const res = await app.call('POST', '/memories/recall', { token: bigToken, body: { query: 'Where is the qxvintage zoetrope?', limit: 5 } });
      expect(res.status).toBe(200);
      return res.body.memories as Array<{ content: string }>;
    };
    expect((await ask())[0]?.content).toBe(oldest.content);
    // One more memory: the scope now holds more than the scan limit, and the oldest is still found.
    const more = await app.call('POST', '/memories', { token: bigToken, body: { memories: filler(RECALL_SCAN_LIMIT, 1) } });
    expect(more.status).toBe(201);
    expect((await ask())[0]?.content).toBe(oldest.content);
  });
});

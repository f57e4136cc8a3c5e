import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type Owner, type TestApp } from '../support/harness.js';

/**
 * Recall through the real app and PostgreSQL. The app's clock is fixed, so recency is exactly
 * predictable: recency = exp(-ln2 · age / half-life), with age measured from occurred_at.
 */

const NOW = new Date('2026-02-01T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
const DEFAULT_HALF_LIFE = 720;

let app: TestApp;
const tenant = uniqueTenant('recall');
let owner: Owner;

interface Recalled {
  id: string;
  content: string;
  importance: number;
  occurred_at: string;
  category: string | null;
  score: number;
  scores: { recency: number; importance: number; relevance: number };
}

interface NewMemory {
  content: string;
  importance?: number;
  occurred_at?: string;
  category?: string;
  metadata?: Record<string, unknown>;
}

beforeAll(async () => {
  app = await startTestApp({}, { clock: () => new Date(NOW) });
  owner = app.owner;
});
afterAll(async () => {
  await app.close();
});

async function seed(user: string, memories: NewMemory[], extra: Record<string, unknown> = {}): Promise<Array<{ id: string; content: string }>> {
  const token = await tokenFor({ tenant, user });
  const res = await app.call('POST', '/memories', { token, body: { ...extra, memories } });
  expect(res.status).toBe(201);
  return res.body.memories;
}

async function recall(user: string, body: Record<string, unknown>): Promise<Recalled[]> {
  const res = await recallRaw(user, body);
  expect(res.status).toBe(200);
  const memories = res.body.memories as Recalled[];
  // Best first, always.
  for (let i = 1; i < memories.length; i++) expect(memories[i - 1]!.score).toBeGreaterThanOrEqual(memories[i]!.score);
  return memories;
}

async function recallRaw(user: string, body: Record<string, unknown>) {
  return app.call('POST', '/memories/recall', { token: await tokenFor({ tenant, user }), body });
}

const contents = (memories: Recalled[]) => memories.map((m) => m.content);
const expectedRecency = (occurredAt: string, now: Date, halfLife = DEFAULT_HALF_LIFE) =>
  Math.exp((-Math.LN2 * Math.max(0, now.getTime() - Date.parse(occurredAt))) / HOUR / halfLife);

// The weights' tests send min_relevance 0: they are about ranking every candidate, and the floor
// (its own tests below) would leave out the memories that share no word with the query.
describe('weights change the order as predicted', () => {
  const user = 'orders';
  // Three different orders: by relevance to "cello orchestra", by recency, by importance.
  const CELLO = 'Alice plays the cello in a community orchestra';
  const SKI = 'Alice went skiing in Norway last winter';
  const ALLERGY = 'Alice is allergic to shellfish';

  beforeAll(async () => {
    await seed(user, [
      { content: CELLO, occurred_at: ago(200 * DAY), importance: 1 },
      { content: SKI, occurred_at: ago(1 * DAY), importance: 4 },
      { content: ALLERGY, occurred_at: ago(30 * DAY), importance: 10 },
    ]);
  });

  it('relevance only ranks the memory sharing the query words first', async () => {
    const got = await recall(user, { min_relevance: 0, query: 'cello orchestra', weights: { relevance: 1 } });
    expect(got[0]!.content).toBe(CELLO);
    expect(got[0]!.scores.relevance).toBeGreaterThan(got[1]!.scores.relevance);
    // The same words win for another topic too: the order follows the query, not the data.
    const ski = await recall(user, { min_relevance: 0, query: 'skiing in Norway', weights: { relevance: 1 } });
    expect(ski[0]!.content).toBe(SKI);
  });

  it('recency only ranks the newest occurred_at first, whatever the words', async () => {
    const got = await recall(user, { min_relevance: 0, query: 'cello orchestra', weights: { recency: 1 } });
    expect(contents(got)).toEqual([SKI, ALLERGY, CELLO]);
  });

  it('importance only ranks by importance', async () => {
    const got = await recall(user, { min_relevance: 0, query: 'cello orchestra', weights: { importance: 1 } });
    expect(contents(got)).toEqual([ALLERGY, SKI, CELLO]);
    expect(got.map((m) => m.importance)).toEqual([10, 4, 1]);
  });

  it('a weights object with one key means the others are 0: score is that component', async () => {
    for (const key of ['recency', 'importance', 'relevance'] as const) {
      const got = await recall(user, { min_relevance: 0, query: 'cello orchestra', weights: { [key]: 7 } });
      expect(got).toHaveLength(3);
      for (const m of got) expect(Math.abs(m.score - m.scores[key])).toBeLessThan(1e-12);
    }
  });
});

describe('scores', () => {
  const user = 'scores';

  beforeAll(async () => {
    await seed(user, [
      { content: 'Alice drives a blue electric car', occurred_at: ago(3 * DAY), importance: 7 },
      { content: 'Alice charges the car at night', occurred_at: ago(40 * DAY), importance: 2 },
      { content: 'Alice once visited Kyoto', occurred_at: ago(400 * DAY), importance: 5 },
      { content: 'Alice has a meeting tomorrow', occurred_at: ago(-2 * DAY), importance: 9 }, // in the future: recency 1
    ]);
  });

  it('every component and score is in [0, 1] and score is the contract formula (default weights)', async () => {
    const got = await recall(user, { min_relevance: 0, query: 'electric car' });
    expect(got).toHaveLength(4);
    for (const m of got) {
      for (const v of [m.score, m.scores.recency, m.scores.importance, m.scores.relevance]) {
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThanOrEqual(1);
      }
      const formula = (0.1 * m.scores.recency + 0.1 * m.scores.importance + 0.8 * m.scores.relevance) / 1.0;
      expect(Math.abs(m.score - formula)).toBeLessThan(1e-9);
      expect(Math.abs(m.scores.importance - (m.importance - 1) / 9)).toBeLessThan(1e-12);
      expect(Math.abs(m.scores.recency - expectedRecency(m.occurred_at, NOW))).toBeLessThan(1e-9);
    }
    expect(got.find((m) => m.content.includes('tomorrow'))!.scores.recency).toBe(1);
    expect(got[0]!.content).toBe('Alice drives a blue electric car');
  });

  it('custom weights are normalised by their sum, and the half-life is honoured', async () => {
    const weights = { recency: 2, importance: 1, relevance: 3 };
    const got = await recall(user, { min_relevance: 0, query: 'electric car', weights, recency_half_life_hours: 24 });
    for (const m of got) {
      const formula = (2 * m.scores.recency + 1 * m.scores.importance + 3 * m.scores.relevance) / 6;
      expect(Math.abs(m.score - formula)).toBeLessThan(1e-9);
      expect(Math.abs(m.scores.recency - expectedRecency(m.occurred_at, NOW, 24))).toBeLessThan(1e-9);
    }
    const car = got.find((m) => m.content.includes('blue'))!;
    expect(car.scores.recency).toBeCloseTo(0.125, 12); // 3 days at a one-day half-life
  });

  it('huge weights still give a score in [0, 1] equal to the formula', async () => {
    const weights = { recency: 1e308, importance: 1e308, relevance: 1e308 };
    const got = await recall(user, { min_relevance: 0, query: 'electric car', weights });
    expect(got).toHaveLength(4);
    for (const m of got) {
      expect(typeof m.score).toBe('number');
      const formula = (m.scores.recency + m.scores.importance + m.scores.relevance) / 3;
      expect(Math.abs(m.score - formula)).toBeLessThan(1e-9);
    }
  });

  it('a tiny (denormal) single weight still means score = that component', async () => {
    const got = await recall(user, { min_relevance: 0, query: 'electric car', weights: { relevance: 5e-324 } });
    expect(got).toHaveLength(4);
    for (const m of got) expect(Math.abs(m.score - m.scores.relevance)).toBeLessThan(1e-12);
  });

  it('min_score applies to the final score', async () => {
    const all = await recall(user, { min_relevance: 0, query: 'electric car', weights: { importance: 1 } });
    expect(all.map((m) => m.importance)).toEqual([9, 7, 5, 2]);
    const above = await recall(user, { min_relevance: 0, query: 'electric car', weights: { importance: 1 }, min_score: 0.5 }); // 8/9, 6/9 pass; 4/9, 1/9 do not
    expect(above.map((m) => m.importance)).toEqual([9, 7]);
    const exact = await recall(user, { min_relevance: 0, query: 'electric car', weights: { importance: 1 }, min_score: 4 / 9 });
    expect(exact.map((m) => m.importance)).toEqual([9, 7, 5]);
    expect(await recall(user, { min_relevance: 0, query: 'electric car', weights: { importance: 1 }, min_score: 1 })).toEqual([]);
    expect((await recall(user, { min_relevance: 0, query: 'electric car', weights: { importance: 1 }, min_score: 0 })).length).toBe(4);
  });
});

describe('time: as_of and superseded memories', () => {
  it('as_of leaves out memories that occurred after it, and measures recency from it', async () => {
    const user = 'asof';
    await seed(user, [
      { content: 'Alice adopted a puppy', occurred_at: ago(10 * DAY) },
      { content: 'Alice trained the puppy', occurred_at: ago(5 * DAY) },
      { content: 'Alice entered the puppy in a show', occurred_at: ago(1 * DAY) },
    ]);
    const now = await recall(user, { query: 'puppy' });
    expect(now).toHaveLength(3);

    const asOf = ago(3 * DAY);
    const then = await recall(user, { query: 'puppy', as_of: asOf, weights: { recency: 1 } });
    expect(contents(then)).toEqual(['Alice trained the puppy', 'Alice adopted a puppy']);
    const trained = then[0]!;
    expect(Math.abs(trained.scores.recency - expectedRecency(trained.occurred_at, new Date(asOf)))).toBeLessThan(1e-9);
    expect(trained.scores.recency).toBeCloseTo(Math.exp((-Math.LN2 * 48) / DEFAULT_HALF_LIFE), 12);

    const before = await recall(user, { query: 'puppy', as_of: ago(11 * DAY) });
    expect(before).toEqual([]);
  });

  it('a superseded memory is left out without as_of and included with an as_of before its valid_to', async () => {
    const user = 'superseded';
    const [paris, berlin] = await seed(user, [
      { content: 'Alice lives in Paris', occurred_at: ago(300 * DAY) },
      { content: 'Alice lives in Berlin', occurred_at: ago(2 * DAY) },
    ]);
    await owner`update memories set valid_to = ${ago(2 * DAY)}, superseded_by = ${berlin!.id} where tenant_id = ${tenant} and id = ${paris!.id}`;

    const current = await recall(user, { query: 'where does Alice live' });
    expect(current.map((m) => m.id)).toEqual([berlin!.id]);

    const past = await recall(user, { query: 'where does Alice live', as_of: ago(10 * DAY) });
    expect(past.map((m) => m.id)).toEqual([paris!.id]);
    expect(past[0]!.content).toBe('Alice lives in Paris');

    const justAfter = await recall(user, { query: 'where does Alice live', as_of: ago(1 * DAY) });
    expect(justAfter.map((m) => m.id)).toEqual([berlin!.id]);

    // The list agrees: left out by default, present with include_superseded.
    const token = await tokenFor({ tenant, user });
    const listed = await app.call('GET', '/memories', { token });
    expect(listed.body.memories.map((m: { id: string }) => m.id)).toEqual([berlin!.id]);
    const all = await app.call('GET', '/memories?include_superseded=true', { token });
    expect(all.body.memories.map((m: { id: string }) => m.id).sort()).toEqual([paris!.id, berlin!.id].sort());
  });

  it('a fact stored again with a later occurred_at ends the first at that time (valid time), not at the repeat', async () => {
    const user = 'valid-time';
    const [first] = await seed(user, [{ content: 'Alice lives in Berlin', occurred_at: ago(300 * DAY) }]);
    // Stored again today (the app's clock), saying it became true 100 days ago.
    const [second] = await seed(user, [{ content: 'Alice lives in Berlin', occurred_at: ago(100 * DAY) }]);
    const token = await tokenFor({ tenant, user });
    const old = await app.call('GET', `/memories/${first!.id}`, { token });
    expect(old.body.valid_to).toBe(ago(100 * DAY));

    const query = { query: 'where does Alice live', min_relevance: 0 };
    // Between the two occurred_ats: only the first was valid then.
    expect((await recall(user, { ...query, as_of: ago(200 * DAY) })).map((m) => m.id)).toEqual([first!.id]);
    // After the second began (and before the repeat was stored): only the second.
    expect((await recall(user, { ...query, as_of: ago(50 * DAY) })).map((m) => m.id)).toEqual([second!.id]);
    expect((await recall(user, query)).map((m) => m.id)).toEqual([second!.id]);
  });

  it('within one batch, a repeat ends the earlier copy at its own occurred_at', async () => {
    const user = 'valid-time-batch';
    const [first, second] = await seed(user, [
      { content: 'Alice works at Acme', occurred_at: ago(300 * DAY) },
      { content: 'Alice works at Acme', occurred_at: ago(100 * DAY) },
    ]);
    const query = { query: 'where does Alice work', min_relevance: 0 };
    expect((await recall(user, { ...query, as_of: ago(200 * DAY) })).map((m) => m.id)).toEqual([first!.id]);
    expect((await recall(user, { ...query, as_of: ago(50 * DAY) })).map((m) => m.id)).toEqual([second!.id]);
  });

  it('an expired memory is left out', async () => {
    const user = 'expiry';
    const token = await tokenFor({ tenant, user });
    const res = await app.call('POST', '/memories', {
      token,
      body: { memories: [{ content: 'Alice has a coupon', expires_at: ago(1 * HOUR) }, { content: 'Alice has a voucher' }] },
    });
    expect(res.status).toBe(201);
    expect(contents(await recall(user, { query: 'coupon voucher' }))).toEqual(['Alice has a voucher']);
  });
});

describe('min_relevance: the relevance floor', () => {
  const user = 'floor';
  const PIZZA = 'Alice loves pizza with anchovies';
  const CAPITAL = 'Alice moved her savings into a new bank';
  const DOG = 'Alice walks her dog Rex every morning';

  beforeAll(async () => {
    await seed(user, [
      { content: PIZZA, occurred_at: ago(200 * DAY), importance: 3 },
      // Fresh and important, and unrelated to the questions below.
      { content: CAPITAL, occurred_at: ago(1 * HOUR), importance: 10 },
      { content: DOG, occurred_at: ago(2 * HOUR), importance: 10 },
    ]);
  });

  it('leaves out memories below the default floor, however recent or important', async () => {
    const found = await recall(user, { query: 'which pizza does Alice love' });
    expect(contents(found)).toEqual([PIZZA]);
    expect(found[0]!.scores.relevance).toBeGreaterThanOrEqual(0.17);
  });

  it('min_relevance 0 ranks every candidate again, as before the floor', async () => {
    const found = await recall(user, { query: 'which pizza does Alice love', min_relevance: 0 });
    expect(contents(found).sort()).toEqual([CAPITAL, DOG, PIZZA].sort());
    expect(found[0]!.content).toBe(PIZZA);
  });

  it('an unrelated question finds nothing: 200 with no memories', async () => {
    const res = await recallRaw(user, { query: 'What is the capital of France?' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ memories: [] });
    // The relative relevance alone would have given its best word match the full text share.
    expect((await recall(user, { query: 'What is the capital of France?', min_relevance: 0 })).length).toBe(3);
  });

  it('a floor above a memory leaves it out; every memory returned has at least the floor as relevance', async () => {
    for (const floor of [0.05, 0.3, 0.6, 0.9]) {
      const found = await recall(user, { query: 'Alice dog Rex morning walk', min_relevance: floor });
      for (const m of found) expect(m.scores.relevance).toBeGreaterThanOrEqual(floor);
    }
    expect(contents(await recall(user, { query: 'Alice dog Rex morning walk', min_relevance: 0.3 }))).toEqual([DOG]);
  });

  it('refuses a min_relevance outside 0–1', async () => {
    for (const bad of [-0.1, 1.5, '0.5']) {
      const res = await recallRaw(user, { query: 'pizza', min_relevance: bad });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body.errors)).toContain('/min_relevance');
    }
  });
});

describe('stable order and limits', () => {
  const user = 'ties';
  let ids: string[];

  beforeAll(async () => {
    const same = ago(5 * DAY);
    const made = await seed(
      user,
      Array.from({ length: 6 }, (_, i) => ({ content: `Alice tie memory number ${i}`, occurred_at: same })),
    );
    ids = made.map((m) => m.id);
  });

  it('equal scores break by id ascending, and the same request gives the same order', async () => {
    const body = { query: 'tie memory', weights: { recency: 1 }, limit: 100 };
    const first = await recall(user, body);
    const second = await recall(user, body);
    expect(new Set(first.map((m) => m.score)).size).toBe(1);
    expect(first.map((m) => m.id)).toEqual([...ids].sort());
    expect(second.map((m) => m.id)).toEqual(first.map((m) => m.id));
  });

  it('limit caps the results, keeping the best (here: the lowest ids of a tie)', async () => {
    const got = await recall(user, { query: 'tie memory', weights: { recency: 1 }, limit: 2 });
    expect(got.map((m) => m.id)).toEqual([...ids].sort().slice(0, 2));
    expect(await recall(user, { query: 'tie memory' })).toHaveLength(6); // default limit 10
    expect(await recall(user, { query: 'tie memory', limit: 1 })).toHaveLength(1);
  });

  it.each([[0], [101], [-1], [2.5], ['3'], [null]])('limit %j is a 400', async (limit) => {
    const res = await recallRaw(user, { query: 'tie memory', limit });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(JSON.stringify(res.body.errors)).toContain('/limit');
  });

  it.each([
    [{ recency: -1, relevance: 2 }],
    [{ recency: 0, importance: 0, relevance: 0 }],
    [{}],
    [{ relevance: -0.0001 }],
    [{ relevance: 'high' }],
    [{ freshness: 1 }],
  ])('weights %j are a 400', async (weights) => {
    const res = await recallRaw(user, { query: 'tie memory', weights });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(JSON.stringify(res.body.errors)).toContain('/weights');
  });

  it('names the weight at fault in the error path', async () => {
    const negative = await recallRaw(user, { query: 'tie memory', weights: { recency: -1, relevance: 2 } });
    expect(negative.body.errors).toEqual([expect.objectContaining({ path: '/weights/recency' })]);
    const allZero = await recallRaw(user, { query: 'tie memory', weights: { recency: 0, importance: 0, relevance: 0 } });
    expect(allZero.body.errors).toEqual([expect.objectContaining({ path: '/weights' })]);
  });

  it.each([[-0.1], [1.5]])('min_score %j is a 400', async (minScore) => {
    const res = await recallRaw(user, { query: 'tie memory', min_score: minScore });
    expect(res.status).toBe(400);
  });
});

describe('limit only cuts the ranked list', () => {
  // More memories than one arm brings (100), so the pool is a part of the user's memories.
  const big = 'limit-big';
  const small = 'limit-small';
  let smallTax: string;

  beforeAll(async () => {
    await seed(big, [
      ...Array.from({ length: 250 }, (_, i) => ({
        content: `Carol went walking with friend number ${i} by the river`,
        importance: 1 + (i % 9),
        occurred_at: ago(((i * 37) % 250) * DAY),
      })),
      ...Array.from({ length: 10 }, (_, i) => ({ content: `Tax filing deadline item ${i} is in April`, importance: 10, occurred_at: ago(i * DAY) })),
    ]);
    const made = await seed(small, [
      ...Array.from({ length: 80 }, (_, i) => ({ content: `Carol went walking with friend number ${i} by the river`, importance: 3, occurred_at: ago(DAY) })),
      { content: 'Tax filing deadline is April fifteenth', importance: 10, occurred_at: ago(DAY) },
    ]);
    smallTax = made[80]!.id;
  });

  it.each([[undefined], [{ importance: 1 }], [{ recency: 1 }], [{ relevance: 1 }], [{ recency: 0.5, importance: 0.5 }]])(
    'the first k of limit 100 are the answer at limit k (weights %j)',
    async (weights) => {
      const body = { query: 'walking by the river', min_relevance: 0, ...(weights ? { weights } : {}) };
      const all = (await recall(big, { ...body, limit: 100 })).map((m) => `${m.id} ${m.score}`);
      expect(all).toHaveLength(100);
      for (const limit of [1, 3, 10, 50]) {
        expect((await recall(big, { ...body, limit })).map((m) => `${m.id} ${m.score}`)).toEqual(all.slice(0, limit));
      }
    },
  );

  it('ranks every memory of a user with at most 100: the most important first, though it shares no word', async () => {
    const got = await recall(small, { query: 'walking', weights: { importance: 1 }, limit: 3, min_relevance: 0 });
    expect(got[0]!.id).toBe(smallTax);
    expect(got[0]!.score).toBe(1);
  });
});

describe('filters', () => {
  const user = 'filters';

  beforeAll(async () => {
    await seed(
      user,
      [
        { content: 'Alice likes sushi', category: 'food', metadata: { source: 'chat', lang: 'en' } },
        { content: 'Alice works remotely', category: 'work', metadata: { source: 'chat' } },
      ],
      { agent_id: 'planner', run_id: 'r1' },
    );
    await seed(user, [{ content: 'Alice uses vim', category: 'tools', metadata: { source: 'email', lang: 'en', tags: ['editor'] } }], {
      agent_id: 'coder',
      run_id: 'r2',
    });
    await seed(user, [{ content: 'Alice was born in May' }]);
  });

  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    ['no filter', {}, ['Alice likes sushi', 'Alice uses vim', 'Alice was born in May', 'Alice works remotely']],
    ['agent_id', { agent_id: 'planner' }, ['Alice likes sushi', 'Alice works remotely']],
    ['run_id', { run_id: 'r2' }, ['Alice uses vim']],
    ['categories', { categories: ['food', 'tools'] }, ['Alice likes sushi', 'Alice uses vim']],
    ['metadata (one key)', { metadata: { lang: 'en' } }, ['Alice likes sushi', 'Alice uses vim']],
    ['metadata (two keys)', { metadata: { source: 'chat', lang: 'en' } }, ['Alice likes sushi']],
    ['metadata (nested array)', { metadata: { tags: ['editor'] } }, ['Alice uses vim']],
    ['agent_id and categories', { agent_id: 'planner', categories: ['work'] }, ['Alice works remotely']],
    ['an unknown agent', { agent_id: 'nobody' }, []],
  ];

  it.each(cases)('%s', async (_name, filters, expected) => {
    const got = await recall(user, { query: 'Alice', limit: 100, filters });
    expect(contents(got).sort()).toEqual(expected);
  });
});

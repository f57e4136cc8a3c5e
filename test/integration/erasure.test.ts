import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, startTestApp, tokenFor, uniqueTenant, type Owner, type TestApp } from '../support/harness.js';

/**
 * Erasure of a whole user. The proof is a scan as the owner (a superuser, so RLS does not hide
 * anything) of every public table that has a user_id column, discovered from the catalogue so a
 * table added later is covered without touching this test.
 */

let app: TestApp;
let owner: Owner;
const tenant = uniqueTenant('erase');
const otherTenant = uniqueTenant('erase-other');
// Distinctive ids, so "no row mentions the user" can be checked by text search as well.
const U = `ursula-${randomUUID().slice(0, 8)}`;
const V = `victor-${randomUUID().slice(0, 8)}`;

type Subject = readonly [tenant: string, user: string];
const SUBJECTS: Record<'U' | 'V' | 'otherU', Subject> = { U: [tenant, U], V: [tenant, V], otherU: [otherTenant, U] };

async function userTables(): Promise<string[]> {
  const rows = await owner`
    select c.table_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and c.column_name = 'user_id' and t.table_type = 'BASE TABLE'
    order by c.table_name`;
  return rows.map((r) => r.table_name as string);
}

async function tenantTables(): Promise<string[]> {
  const rows = await owner`
    select c.table_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and c.column_name = 'tenant_id' and t.table_type = 'BASE TABLE'
    order by c.table_name`;
  return rows.map((r) => r.table_name as string);
}

/** Rows of (tenant, user) in every table with a user_id column. */
async function countsOf([t, u]: Subject): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await userTables()) {
    const [row] = await owner.unsafe(`select count(*)::int as n from "${table}" where tenant_id = $1 and user_id = $2`, [t, u]);
    counts[table] = row!.n as number;
  }
  return counts;
}

/** Rows of the tenant, in any tenant table, whose text (any column, JSON included) mentions `needle`. */
async function rowsMentioning(t: string, needle: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const table of await tenantTables()) {
    const [row] = await owner.unsafe(`select count(*)::int as n from "${table}" x where x.tenant_id = $1 and strpos(x::text, $2) > 0`, [t, needle]);
    found[table] = row!.n as number;
  }
  return found;
}

async function insertJob([t, u]: Subject, transcript: string): Promise<void> {
  await owner`
    insert into extraction_jobs (tenant_id, user_id, body_hash, payload, run_after)
    values (${t}, ${u}, ${randomUUID()}, ${owner.json({ messages: [{ role: 'user', content: transcript }] })}, now() + interval '1 day')`;
}

async function give([t, u]: Subject, contents: string[]): Promise<string[]> {
  const token = await tokenFor({ tenant: t, user: u });
  const res = await app.call('POST', '/memories', { token, body: { memories: contents.map((content) => ({ content })) } });
  expect(res.status).toBe(201);
  const ids = res.body.memories.map((m: { id: string }) => m.id) as string[];
  // A patch of the first memory: an UPDATE event, so history holds old content too.
  const patched = await app.call('PATCH', `/memories/${ids[0]}`, { token, body: { content: `${contents[0]} (corrected)` } });
  expect(patched.status).toBe(200);
  return ids;
}

let before: Record<keyof typeof SUBJECTS, Record<string, number>>;
let uMemoryIds: string[];
let vMemoryByU: string;
let eventsOfVActedByU: number;
let result: { status: number; body: Record<string, unknown> };

beforeAll(async () => {
  app = await startTestApp();
  owner = app.owner;
  uMemoryIds = await give(SUBJECTS.U, [`${U} is allergic to penicillin`, `${U} lives at 12 Elm Street`, `${U} banks with Acme`]);
  await give(SUBJECTS.V, [`${V} likes rowing`, `${V} works nights`]);
  await give(SUBJECTS.otherU, [`${U} in the other tenant keeps bees`, `${U} in the other tenant has a boat`]);
  // U, holding act_as, also wrote to V's memories: those events name U as their actor.
  const uActing = await tokenFor({ tenant, user: U, scope: `${ALL_SCOPES} memories:act_as` });
  const forV = await app.call('POST', '/memories', { token: uActing, body: { user_id: V, memories: [{ content: 'the rowing club meets on Tuesdays' }] } });
  expect(forV.status).toBe(201);
  vMemoryByU = forV.body.memories[0].id;
  expect((await app.call('PATCH', `/memories/${vMemoryByU}`, { token: uActing, body: { importance: 7 } })).status).toBe(200);
  // A superseded memory of U: erasure removes history too, not only current rows.
  await owner`update memories set valid_to = now() where tenant_id = ${tenant} and id = ${uMemoryIds[2]!}`;
  // Extraction jobs with transcripts, due only tomorrow: another test file's sweeper (it scans every
  // tenant) would otherwise run them and purge the transcripts this file checks are kept.
  await insertJob(SUBJECTS.U, `my name is ${U} and my passport number is X123`);
  await insertJob(SUBJECTS.U, `${U} again, a second transcript`);
  await insertJob(SUBJECTS.V, `${V} transcript`);
  await insertJob(SUBJECTS.otherU, `${U} in the other tenant, transcript`);

  const [actedByU] = await owner`select count(*)::int as n from memory_events where tenant_id = ${tenant} and user_id = ${V} and actor = ${`user:${U}`}`;
  eventsOfVActedByU = actedByU!.n as number;
  before = { U: await countsOf(SUBJECTS.U), V: await countsOf(SUBJECTS.V), otherU: await countsOf(SUBJECTS.otherU) };
  result = await app.call('POST', '/memories/delete', { token: await tokenFor({ tenant, user: U }), body: {} });
});

afterAll(async () => {
  await app.close();
});

describe('erasing user U', () => {
  it('the setup gave U rows in memories, memory_events and extraction_jobs (so the scan below means something)', async () => {
    const tables = await userTables();
    expect(tables).toEqual(expect.arrayContaining(['memories', 'memory_events', 'extraction_jobs']));
    expect(before.U.memories).toBe(3);
    expect(before.U.memory_events).toBe(4); // three ADD and one UPDATE
    expect(before.U.extraction_jobs).toBe(2);
    expect(before.V).toMatchObject({ memories: 3, memory_events: 5, extraction_jobs: 1 });
    expect(eventsOfVActedByU).toBe(2);
    expect(before.otherU).toMatchObject({ memories: 2, memory_events: 3, extraction_jobs: 1 });
  });

  it('answers exactly {deleted, erasure_id}', () => {
    expect(result.status).toBe(200);
    expect(Object.keys(result.body).sort()).toEqual(['deleted', 'erasure_id']);
    expect(result.body.deleted).toBe(3);
    expect(result.body.erasure_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('leaves no row of (tenant, U) in any table with a user_id column', async () => {
    const after = await countsOf(SUBJECTS.U);
    expect(Object.keys(after).length).toBeGreaterThanOrEqual(3);
    for (const [table, n] of Object.entries(after)) expect({ table, n }).toEqual({ table, n: 0 });
  });

  it('leaves no row of the tenant that mentions U anywhere, transcripts and history included', async () => {
    const found = await rowsMentioning(tenant, U);
    for (const [table, n] of Object.entries(found)) expect({ table, n }).toEqual({ table, n: 0 });
    // The same scan does find V, so it is not blind.
    const v = await rowsMentioning(tenant, V);
    expect(v.memories).toBe(3);
    expect(v.extraction_jobs).toBe(1);
  });

  it("keeps V's history of what U did, with U's id replaced by a pseudonym naming the erasure", async () => {
    const token = await tokenFor({ tenant, user: V });
    const history = await app.call('GET', `/memories/${vMemoryByU}/history`, { token });
    expect(history.status).toBe(200);
    expect(history.body.events.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
      ['ADD', `erased:${result.body.erasure_id as string}`],
      ['UPDATE', `erased:${result.body.erasure_id as string}`],
    ]);
  });

  it('leaves V and the other tenant U untouched', async () => {
    expect(await countsOf(SUBJECTS.V)).toEqual(before.V);
    expect(await countsOf(SUBJECTS.otherU)).toEqual(before.otherU);
    const [otherJob] = await owner`select payload from extraction_jobs where tenant_id = ${otherTenant} and user_id = ${U}`;
    expect(JSON.stringify(otherJob!.payload)).toContain('transcript');
    const otherList = await app.call('GET', '/memories', { token: await tokenFor({ tenant: otherTenant, user: U }) });
    expect(otherList.body.memories).toHaveLength(2);
  });

  it('U sees nothing over HTTP afterwards: list, recall, get and history', async () => {
    const token = await tokenFor({ tenant, user: U });
    expect((await app.call('GET', '/memories?include_superseded=true', { token })).body.memories).toEqual([]);
    expect((await app.call('POST', '/memories/recall', { token, body: { query: 'allergic penicillin Elm Street' } })).body.memories).toEqual([]);
    for (const id of uMemoryIds) {
      expect((await app.call('GET', `/memories/${id}`, { token })).status).toBe(404);
      expect((await app.call('GET', `/memories/${id}/history`, { token })).status).toBe(404);
    }
  });

  it('writes a receipt with the counts and a subject hash that is not, and does not contain, the user id', async () => {
    const [receipt] = await owner`select * from erasures where tenant_id = ${tenant} and id = ${result.body.erasure_id as string}`;
    expect(receipt).toBeDefined();
    expect(receipt!.scope).toBe('user');
    expect(receipt!.counts).toEqual({ memories: 3, memory_events: 4, extraction_jobs: 2, memory_events_pseudonymised: 2 });
    expect(receipt!.subject_hash).not.toBe(U);
    expect(receipt!.subject_hash).not.toContain(U);
    expect(receipt!.subject_hash).not.toContain('ursula');
    expect(receipt!.subject_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(receipt)).not.toContain(U);
    // The same user in another tenant would hash differently: the hash does not link tenants.
    const other = await app.call('POST', '/memories/delete', { token: await tokenFor({ tenant: uniqueTenant('erase-x'), user: U }), body: {} });
    const [otherReceipt] = await owner`select subject_hash from erasures where id = ${other.body.erasure_id as string}`;
    expect(otherReceipt!.subject_hash).not.toBe(receipt!.subject_hash);
  });

  it("keys the receipt's subject hash: whoever holds the table cannot confirm a guessed user by hashing the guess", async () => {
    const [receipt] = await owner`select subject_hash from erasures where tenant_id = ${tenant} and id = ${result.body.erasure_id as string}`;
    for (const guess of [`${tenant}\u001f${U}`, `${tenant}${U}`, `${tenant}:${U}`, U]) {
      expect(receipt!.subject_hash).not.toBe(createHash('sha256').update(guess).digest('hex'));
    }
  });

  it('erasing twice is harmless: 200, deleted 0, a new receipt with zero counts, others still untouched', async () => {
    const agent = await tokenFor({ tenant, user: 'dpo-agent', scope: 'memories:delete memories:act_as' });
    const again = await app.call('POST', '/memories/delete', { token: agent, body: { user_id: U } });
    expect(again.status).toBe(200);
    expect(again.body.deleted).toBe(0);
    expect(again.body.erasure_id).not.toBe(result.body.erasure_id);
    const [receipt] = await owner`select counts, subject_hash from erasures where tenant_id = ${tenant} and id = ${again.body.erasure_id}`;
    expect(receipt!.counts).toEqual({ memories: 0, memory_events: 0, extraction_jobs: 0, memory_events_pseudonymised: 0 });
    const [first] = await owner`select subject_hash from erasures where tenant_id = ${tenant} and id = ${result.body.erasure_id as string}`;
    expect(receipt!.subject_hash).toBe(first!.subject_hash);
    expect(await countsOf(SUBJECTS.V)).toEqual(before.V);
    expect(await countsOf(SUBJECTS.otherU)).toEqual(before.otherU);
  });
});

describe('erasure at scale', () => {
  it('erases every memory of a user with many (not a first page of them)', async () => {
    const user = `bulk-${randomUUID().slice(0, 8)}`;
    const token = await tokenFor({ tenant, user });
    const res = await app.call('POST', '/memories', {
      token,
      body: { memories: Array.from({ length: 1000 }, (_, i) => ({ content: `bulk fact ${i} of ${user}` })) },
    });
    expect(res.status).toBe(201);
    const erased = await app.call('POST', '/memories/delete', { token, body: {} });
    expect(erased.body.deleted).toBe(1000);
    const counts = await countsOf([tenant, user]);
    for (const [table, n] of Object.entries(counts)) expect({ table, n }).toEqual({ table, n: 0 });
  });
});

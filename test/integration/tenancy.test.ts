import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Tenant isolation over HTTP: the same user id ("alice") in two tenants, each with memories. Every
 * route answers only from the caller's tenant; the other tenant's ids answer 404 as if unknown.
 */

let app: TestApp;
const tenantA = uniqueTenant('ten-a');
const tenantB = uniqueTenant('ten-b');
let aliceA: string;
let aliceB: string;

interface Memory {
  id: string;
  user_id: string;
  content: string;
  importance: number;
}

/** Alice's memory ids per tenant, made fresh for the tests that change or delete them. */
async function add(token: string, contents: string[], extra: Record<string, unknown> = {}): Promise<Memory[]> {
  const res = await app.call('POST', '/memories', { token, body: { ...extra, memories: contents.map((content) => ({ content })) } });
  expect(res.status).toBe(201);
  return res.body.memories;
}

async function listContents(token: string, query = ''): Promise<string[]> {
  const res = await app.call('GET', `/memories?limit=100${query}`, { token });
  expect(res.status).toBe(200);
  return res.body.memories.map((m: Memory) => m.content).sort();
}

async function getContent(token: string, id: string): Promise<string> {
  const res = await app.call('GET', `/memories/${id}`, { token });
  expect(res.status).toBe(200);
  return res.body.content;
}

let sharedA: Memory[];
let sharedB: Memory[];

beforeAll(async () => {
  app = await startTestApp();
  aliceA = await tokenFor({ tenant: tenantA, user: 'alice' });
  aliceB = await tokenFor({ tenant: tenantB, user: 'alice' });
  // The same sentence in both tenants must become two memories, not one.
  sharedA = await add(aliceA, ['Alice lives in Lisbon', 'Alice keeps bees', 'Alice speaks Portuguese']);
  sharedB = await add(aliceB, ['Alice lives in Oslo', 'Alice keeps bees', 'Alice plays chess']);
});
afterAll(() => app.close());

describe('reads', () => {
  it('POST /memories answers and stores in the caller tenant only: the same text in two tenants is two memories', () => {
    const beesA = sharedA.find((m) => m.content === 'Alice keeps bees')!;
    const beesB = sharedB.find((m) => m.content === 'Alice keeps bees')!;
    expect(beesA.id).not.toBe(beesB.id);
    expect(new Set([...sharedA, ...sharedB].map((m) => m.id)).size).toBe(6);
  });

  it('GET /memories lists only the caller tenant', async () => {
    expect(await listContents(aliceA)).toEqual(['Alice keeps bees', 'Alice lives in Lisbon', 'Alice speaks Portuguese']);
    expect(await listContents(aliceB)).toEqual(['Alice keeps bees', 'Alice lives in Oslo', 'Alice plays chess']);
    expect(await listContents(aliceA, '&include_superseded=true')).not.toContain('Alice lives in Oslo');
  });

  it('GET /memories/{id} of the other tenant is 404, and the own one is 200', async () => {
    for (const m of sharedB) {
      const res = await app.call('GET', `/memories/${m.id}`, { token: aliceA });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(JSON.stringify(res.body)).not.toContain(m.content);
    }
    for (const m of sharedA) expect(await getContent(aliceA, m.id)).toBe(m.content);
  });

  it('GET /memories/{id}/history of the other tenant is 404', async () => {
    for (const m of sharedB) expect((await app.call('GET', `/memories/${m.id}/history`, { token: aliceA })).status).toBe(404);
    const own = await app.call('GET', `/memories/${sharedA[0]!.id}/history`, { token: aliceA });
    expect(own.status).toBe(200);
    expect(own.body.events).toHaveLength(1);
  });

  it('POST /memories/recall finds only the caller tenant, even for a query that matches the other tenant best', async () => {
    const res = await app.call('POST', '/memories/recall', { token: aliceA, body: { query: 'Alice lives in Oslo and plays chess', limit: 100, min_relevance: 0 } });
    expect(res.status).toBe(200);
    const ids = res.body.memories.map((m: Memory) => m.id).sort();
    expect(ids).toEqual(sharedA.map((m) => m.id).sort());
    expect(res.body.memories.map((m: Memory) => m.content)).not.toContain('Alice lives in Oslo');
  });
});

describe('writes addressed by id', () => {
  it('PATCH of the other tenant memory is 404 and changes nothing', async () => {
    const [target] = await add(aliceB, ['Alice drinks green tea']);
    const res = await app.call('PATCH', `/memories/${target!.id}`, { token: aliceA, body: { content: 'Alice drinks coffee', importance: 10 } });
    expect(res.status).toBe(404);
    const after = await app.call('GET', `/memories/${target!.id}`, { token: aliceB });
    expect(after.body).toMatchObject({ content: 'Alice drinks green tea', importance: 5 });
    const history = await app.call('GET', `/memories/${target!.id}/history`, { token: aliceB });
    expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD']);
  });

  it('DELETE of the other tenant memory is 404 and deletes nothing', async () => {
    const [target] = await add(aliceB, ['Alice owns a kayak']);
    expect((await app.call('DELETE', `/memories/${target!.id}`, { token: aliceA })).status).toBe(404);
    expect(await getContent(aliceB, target!.id)).toBe('Alice owns a kayak');
  });

  it('POST /memories/delete with ids does not count or delete the other tenant ids', async () => {
    const [mine] = await add(aliceA, ['Alice forgot her umbrella']);
    const [theirs] = await add(aliceB, ['Alice found an umbrella']);
    const res = await app.call('POST', '/memories/delete', { token: aliceA, body: { memory_ids: [theirs!.id, mine!.id] } });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(1);
    expect((await app.call('GET', `/memories/${mine!.id}`, { token: aliceA })).status).toBe(404);
    expect(await getContent(aliceB, theirs!.id)).toBe('Alice found an umbrella');

    const onlyTheirs = await app.call('POST', '/memories/delete', { token: aliceA, body: { memory_ids: [theirs!.id] } });
    expect(onlyTheirs.body.deleted).toBe(0);
    expect(await getContent(aliceB, theirs!.id)).toBe('Alice found an umbrella');
  });

  it('POST /memories/delete without ids erases alice in the caller tenant only', async () => {
    const tenantC = uniqueTenant('ten-c');
    const tenantD = uniqueTenant('ten-d');
    const aliceC = await tokenFor({ tenant: tenantC, user: 'alice' });
    const aliceD = await tokenFor({ tenant: tenantD, user: 'alice' });
    await add(aliceC, ['Alice has a cat', 'Alice likes tea']);
    const kept = await add(aliceD, ['Alice has a dog', 'Alice likes coffee']);
    const res = await app.call('POST', '/memories/delete', { token: aliceC, body: {} });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(2);
    expect(await listContents(aliceC)).toEqual([]);
    expect(await listContents(aliceD)).toEqual(kept.map((m) => m.content).sort());
    for (const m of kept) expect((await app.call('GET', `/memories/${m.id}/history`, { token: aliceD })).body.events).toHaveLength(1);
  });
});

describe('a tenant_id in a request never selects a tenant', () => {
  const bodies: Array<[string, string, (otherTenant: string, id: string) => unknown]> = [
    ['POST', '/memories', (t) => ({ tenant_id: t, memories: [{ content: 'planted via body tenant' }] })],
    ['POST', '/memories', (t) => ({ memories: [{ content: 'planted via nested tenant', tenant_id: t }] })],
    ['POST', '/memories/recall', (t) => ({ tenant_id: t, query: 'Oslo' })],
    ['POST', '/memories/recall', (t) => ({ query: 'Oslo', filters: { tenant_id: t } })],
    ['POST', '/memories/delete', (t) => ({ tenant_id: t })],
    ['POST', '/memories/delete', (t, id) => ({ tenant_id: t, memory_ids: [id] })],
    ['PATCH', '/memories/{id}', (t) => ({ tenant_id: t, content: 'moved' })],
  ];

  it.each(bodies)('%s %s refuses a tenant_id field (400, unknown field) and changes nothing', async (method, route, makeBody) => {
    const [own] = await add(aliceA, [`Alice tenant field probe ${method} ${route} ${Math.random()}`]);
    const beforeA = await listContents(aliceA);
    const beforeB = await listContents(aliceB);
    const path = route.replace('{id}', own!.id);
    const res = await app.call(method, path, { token: aliceA, body: makeBody(tenantB, sharedB[0]!.id) });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(JSON.stringify(res.body.errors)).toContain('tenant_id');
    expect(await listContents(aliceA)).toEqual(beforeA);
    expect(await listContents(aliceB)).toEqual(beforeB);
  });

  it('GET /memories refuses a tenant_id query parameter', async () => {
    const res = await app.call('GET', `/memories?tenant_id=${tenantB}`, { token: aliceA });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.errors)).toContain('tenant_id');
  });

  it('GET /memories/{id}?tenant_id=B of tenant B memory is still 404', async () => {
    const res = await app.call('GET', `/memories/${sharedB[0]!.id}?tenant_id=${tenantB}`, { token: aliceA });
    expect(res.status).toBe(404);
  });
});

describe('users within a tenant', () => {
  let bobMemory: Memory;
  let bobToken: string;

  beforeAll(async () => {
    bobToken = await tokenFor({ tenant: tenantA, user: 'bob' });
    [bobMemory] = (await add(bobToken, ['Bob collects stamps'])) as [Memory];
  });

  const namingBob: Array<[string, string, unknown]> = [
    ['POST', '/memories', { user_id: 'bob', memories: [{ content: 'planted for bob' }] }],
    ['GET', '/memories?user_id=bob', undefined],
    ['POST', '/memories/recall', { user_id: 'bob', query: 'stamps' }],
    ['POST', '/memories/delete', { user_id: 'bob' }],
    ['POST', '/memories/delete', { user_id: 'bob', memory_ids: ['00000000-0000-4000-8000-000000000000'] }],
  ];

  it.each(namingBob)('without act_as, %s %s naming another user is 403 and changes nothing', async (method, path, body) => {
    const res = await app.call(method, path, { token: aliceA, body });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
    expect(await listContents(bobToken)).toEqual(['Bob collects stamps']);
  });

  it('without act_as, naming oneself is fine', async () => {
    const res = await app.call('GET', '/memories?user_id=alice', { token: aliceA });
    expect(res.status).toBe(200);
    expect(res.body.memories.length).toBeGreaterThan(0);
  });

  it('without act_as, another user memory id is 404 on get, patch, delete and history', async () => {
    const id = bobMemory.id;
    expect((await app.call('GET', `/memories/${id}`, { token: aliceA })).status).toBe(404);
    expect((await app.call('GET', `/memories/${id}/history`, { token: aliceA })).status).toBe(404);
    expect((await app.call('PATCH', `/memories/${id}`, { token: aliceA, body: { content: 'Bob burned his stamps' } })).status).toBe(404);
    expect((await app.call('DELETE', `/memories/${id}`, { token: aliceA })).status).toBe(404);
    const del = await app.call('POST', '/memories/delete', { token: aliceA, body: { memory_ids: [id] } });
    expect(del.body.deleted).toBe(0);
    expect(await getContent(bobToken, id)).toBe('Bob collects stamps');
  });

  it('with act_as, an agent may name any user of its tenant', async () => {
    const agent = await tokenFor({ tenant: tenantA, user: 'agent-7', scope: 'memories:read memories:write memories:delete memories:act_as' });
    const created = await app.call('POST', '/memories', { token: agent, body: { user_id: 'bob', memories: [{ content: 'Bob prefers window seats' }] } });
    expect(created.status).toBe(201);
    expect(created.body.memories[0].user_id).toBe('bob');
    expect(await listContents(bobToken)).toEqual(['Bob collects stamps', 'Bob prefers window seats']);

    expect((await app.call('GET', `/memories/${bobMemory.id}`, { token: agent })).body.content).toBe('Bob collects stamps');
    const listed = await app.call('GET', '/memories?user_id=bob', { token: agent });
    expect(listed.body.memories.map((m: Memory) => m.user_id)).toEqual(['bob', 'bob']);
    const recalled = await app.call('POST', '/memories/recall', { token: agent, body: { user_id: 'bob', query: 'stamps' } });
    expect(recalled.body.memories[0].id).toBe(bobMemory.id);
    const patched = await app.call('PATCH', `/memories/${created.body.memories[0].id}`, { token: agent, body: { importance: 7 } });
    expect(patched.body).toMatchObject({ user_id: 'bob', importance: 7 });
  });

  it('with act_as, the other tenant is still out of reach', async () => {
    const agent = await tokenFor({ tenant: tenantA, user: 'agent-7', scope: 'memories:read memories:write memories:delete memories:act_as' });
    const target = sharedB[1]!;
    expect((await app.call('GET', `/memories/${target.id}`, { token: agent })).status).toBe(404);
    expect((await app.call('PATCH', `/memories/${target.id}`, { token: agent, body: { importance: 1 } })).status).toBe(404);
    expect((await app.call('DELETE', `/memories/${target.id}`, { token: agent })).status).toBe(404);
    expect((await app.call('GET', `/memories/${target.id}/history`, { token: agent })).status).toBe(404);
    const del = await app.call('POST', '/memories/delete', { token: agent, body: { user_id: 'alice', memory_ids: [target.id] } });
    expect(del.body.deleted).toBe(0);
    const listed = await app.call('GET', '/memories?user_id=alice&limit=100', { token: agent });
    expect(listed.body.memories.map((m: Memory) => m.id)).not.toContain(target.id);
    expect(await getContent(aliceB, target.id)).toBe(target.content);
  });
});

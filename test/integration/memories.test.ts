import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

let app: TestApp;
let tenant: string;
let token: string;

beforeAll(async () => {
  app = await startTestApp();
  tenant = uniqueTenant('mem');
  token = await tokenFor({ tenant, user: 'alice' });
});
afterAll(() => app.close());

describe('direct add, get, list, patch, history, delete', () => {
  it('stores memories as given, in input order, with defaults', async () => {
    const res = await app.call('POST', '/memories', {
      token,
      body: { memories: [{ content: 'Alice is allergic to peanuts', importance: 9, category: 'health' }, { content: 'Alice likes jazz' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body.memories.map((m: { content: string }) => m.content)).toEqual(['Alice is allergic to peanuts', 'Alice likes jazz']);
    const [first, second] = res.body.memories;
    expect(first).toMatchObject({ user_id: 'alice', importance: 9, category: 'health', metadata: {}, valid_to: null });
    expect(second).toMatchObject({ importance: 5, category: null });
    expect(Date.parse(second.occurred_at)).toBeGreaterThan(Date.now() - 60_000);

    const got = await app.call('GET', `/memories/${first.id}`, { token });
    expect(got.status).toBe(200);
    expect(got.body.content).toBe('Alice is allergic to peanuts');

    const history = await app.call('GET', `/memories/${first.id}/history`, { token });
    expect(history.body.events).toHaveLength(1);
    expect(history.body.events[0]).toMatchObject({ event: 'ADD', old_content: null, new_content: 'Alice is allergic to peanuts' });
  });

  it('stores a repeated fact as given and supersedes the earlier one: one current memory per fact', async () => {
    const a = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice owns a red bicycle', importance: 3 }] } });
    const b = await app.call('POST', '/memories', { token, body: { memories: [{ content: '  alice owns a red bicycle. ', importance: 8, category: 'things' }] } });
    expect(b.status).toBe(201);
    const [first, second] = [a.body.memories[0], b.body.memories[0]];
    expect(second.id).not.toBe(first.id);
    expect(second).toMatchObject({ content: 'alice owns a red bicycle.', importance: 8, category: 'things', valid_to: null });
    const old = await app.call('GET', `/memories/${first.id}`, { token });
    expect(old.body.valid_to).not.toBeNull();
    const history = await app.call('GET', `/memories/${first.id}/history`, { token });
    expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD', 'SUPERSEDE']);
    expect((await app.call('GET', `/memories/${second.id}/history`, { token })).body.events.map((e: { event: string }) => e.event)).toEqual(['ADD']);
    const list = await app.call('GET', '/memories?limit=100', { token });
    const bicycles = list.body.memories.filter((m: { content: string }) => /bicycle/i.test(m.content));
    expect(bicycles.map((m: { id: string }) => m.id)).toEqual([second.id]);
  });

  it('the same fact added by many requests at once: each stored, each earlier one superseded, one current', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice rows on Sundays', importance: 1 + i }] } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    const list = await app.call('GET', '/memories?limit=100&include_superseded=true', { token });
    const rowing = list.body.memories.filter((m: { content: string }) => m.content === 'Alice rows on Sundays');
    expect(rowing).toHaveLength(8);
    expect(rowing.filter((m: { valid_to: string | null }) => m.valid_to === null)).toHaveLength(1);
  });

  it('a request holding new facts and a repeat of a current one stores each once: the repeat supersedes, nothing doubles', async () => {
    const t = await tokenFor({ tenant, user: 'mixer' });
    const before = await app.call('POST', '/memories', { token: t, body: { memories: [{ content: 'Mixer keeps bees' }] } });
    const res = await app.call('POST', '/memories', {
      token: t,
      body: { memories: [{ content: 'Mixer plays chess' }, { content: 'mixer keeps bees', importance: 7 }, { content: 'Mixer bakes bread' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body.memories.map((m: { content: string }) => m.content)).toEqual(['Mixer plays chess', 'mixer keeps bees', 'Mixer bakes bread']);
    const all = await app.call('GET', '/memories?limit=100&include_superseded=true', { token: t });
    expect(all.body.memories.map((m: { id: string }) => m.id).sort()).toEqual([before.body.memories[0].id, ...res.body.memories.map((m: { id: string }) => m.id)].sort());
    expect(all.body.memories.filter((m: { valid_to: string | null }) => m.valid_to === null)).toHaveLength(3);
    for (const stored of res.body.memories) {
      const history = await app.call('GET', `/memories/${stored.id}/history`, { token: t });
      expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD']);
    }
    const old = await app.call('GET', `/memories/${before.body.memories[0].id}/history`, { token: t });
    expect(old.body.events.map((e: { event: string; new_content: string }) => [e.event, e.new_content])).toEqual([
      ['ADD', 'Mixer keeps bees'],
      ['SUPERSEDE', 'mixer keeps bees'],
    ]);
  });

  it('within one request a later repeat supersedes an earlier one, and both answer in input order', async () => {
    const res = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice sings tenor' }, { content: 'alice sings tenor', importance: 9 }] } });
    expect(res.status).toBe(201);
    const [first, second] = res.body.memories;
    expect(first.valid_to).not.toBeNull();
    expect(second.valid_to).toBeNull();
    const history = await app.call('GET', `/memories/${first.id}/history`, { token });
    expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD', 'SUPERSEDE']);
  });

  it('patches in place and records the old and new content', async () => {
    const created = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice works at Acme' }] } });
    const id = created.body.memories[0].id;
    const patched = await app.call('PATCH', `/memories/${id}`, { token, body: { content: 'Alice works at Globex', importance: 8 } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, content: 'Alice works at Globex', importance: 8, valid_to: null });
    const history = await app.call('GET', `/memories/${id}/history`, { token });
    expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD', 'UPDATE']);
    expect(history.body.events[1]).toMatchObject({ old_content: 'Alice works at Acme', new_content: 'Alice works at Globex' });
  });

  it('deletes a memory and its history', async () => {
    const created = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice has a secret' }] } });
    const id = created.body.memories[0].id;
    expect((await app.call('DELETE', `/memories/${id}`, { token })).status).toBe(204);
    expect((await app.call('GET', `/memories/${id}`, { token })).status).toBe(404);
    expect((await app.call('GET', `/memories/${id}/history`, { token })).status).toBe(404);
    expect((await app.call('DELETE', `/memories/${id}`, { token })).status).toBe(404);
  });

  it('lists newest first with an opaque cursor that neither skips nor repeats', async () => {
    const user = 'lister';
    const t = await tokenFor({ tenant, user });
    for (let i = 0; i < 5; i++) {
      await app.call('POST', '/memories', { token: t, body: { memories: [{ content: `fact number ${i}` }, { content: `other fact ${i}` }] } });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: { memories: Array<{ id: string; created_at: string }>; next_cursor: string | null } } = await app.call(
        'GET',
        `/memories?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: t },
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.memories.map((m) => m.id));
      const times = res.body.memories.map((m) => Date.parse(m.created_at));
      expect([...times].sort((x, y) => y - x)).toEqual(times);
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(4);
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);
  });

  it('deletes listed ids of the user only, ignoring others, with a receipt', async () => {
    const mine = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'to forget one' }, { content: 'to forget two' }] } });
    const bobToken = await tokenFor({ tenant, user: 'bob' });
    const bobs = await app.call('POST', '/memories', { token: bobToken, body: { memories: [{ content: 'bob keeps this' }] } });
    const ids = [...mine.body.memories.map((m: { id: string }) => m.id), bobs.body.memories[0].id];
    const res = await app.call('POST', '/memories/delete', { token, body: { memory_ids: ids } });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(2);
    expect(res.body.erasure_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.call('GET', `/memories/${bobs.body.memories[0].id}`, { token: bobToken })).status).toBe(200);
  });
});

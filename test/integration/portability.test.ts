import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/** GET /memories/export and POST /memories/import on either backend. */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const ndjson = (lines: unknown[]) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');

async function exportOf(token: string, query = ''): Promise<{ status: number; type: string | null; lines: any[] }> {
  const res = await app.runtime.app.request(`/memories/export${query}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), lines: text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

async function importInto(token: string, body: string, contentType = 'application/x-ndjson') {
  return app.call('POST', '/memories/import', { token, rawBody: body, headers: { 'content-type': contentType } });
}

describe('export', () => {
  it('streams the user’s memories as NDJSON, latest occurred first, with history when asked', async () => {
    const tenant = uniqueTenant('export');
    const token = await tokenFor({ tenant, user: 'eve' });
    const add = (content: string, extra: Record<string, unknown> = {}) =>
      app.call('POST', '/memories', { token, body: { memories: [{ content, ...extra }] } });
    await add('Eve rides horses', { importance: 8, category: 'hobby', metadata: { source: 'chat' }, occurred_at: '2024-03-01T10:00:00.000Z' });
    await add('Eve lives in Oslo');
    await add('Eve lives in Oslo', { importance: 9 }); // supersedes the previous one
    const other = await tokenFor({ tenant, user: 'someone-else' });
    await app.call('POST', '/memories', { token: other, body: { memories: [{ content: 'Not Eve' }] } });

    const current = await exportOf(token);
    expect(current.status).toBe(200);
    expect(current.type).toMatch(/application\/x-ndjson/);
    expect(current.lines.map((l) => l.content)).toEqual(['Eve lives in Oslo', 'Eve rides horses']);
    expect(current.lines[1]).toMatchObject({ importance: 8, category: 'hobby', metadata: { source: 'chat' }, occurred_at: '2024-03-01T10:00:00.000Z', valid_to: null, user_id: 'eve' });

    const all = await exportOf(token, '?include_superseded=true&include_history=true');
    expect(all.lines).toHaveLength(3);
    expect(all.lines.filter((l) => l.valid_to !== null)).toHaveLength(1);
    expect(all.lines.find((l) => l.content === 'Eve rides horses').events.map((e: { event: string }) => e.event)).toEqual(['ADD']);
  });

  it('needs memories:read, and names another user only with act_as', async () => {
    const tenant = uniqueTenant('export');
    expect((await exportOf(await tokenFor({ tenant, user: 'u', scope: 'memories:write' }))).status).toBe(403);
    expect((await exportOf(await tokenFor({ tenant, user: 'u' }), '?user_id=v')).status).toBe(403);
    expect((await exportOf(await tokenFor({ tenant, user: 'u' }), '?include_history=maybe')).status).toBe(400);
  });
});

describe('import', () => {
  it('stores valid lines, reports bad ones by number, and stores nothing the second time', async () => {
    const tenant = uniqueTenant('import');
    const token = await tokenFor({ tenant, user: 'fay' });
    const body = ndjson([
      { content: 'Fay speaks Finnish', importance: 7, category: 'personal', metadata: { a: 1 }, occurred_at: '2023-01-01T00:00:00.000Z' },
      '{not json',
      { content: '', occurred_at: '2023-01-01T00:00:00.000Z' },
      { content: 'Fay used to live in Turku', occurred_at: '2020-01-01T00:00:00.000Z', valid_to: '2022-06-01T00:00:00.000Z' },
      '',
      { content: 'Fay speaks Finnish', occurred_at: '2023-01-01T00:00:00.000Z' },
      { content: 'Fay is a pilot', importance: 11, occurred_at: '2023-01-01T00:00:00.000Z' },
    ]);
    const first = await importInto(token, body);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ imported: 2, skipped: 1 });
    expect(first.body.errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 7]);
    expect(first.body.errors[2].message).toMatch(/importance/);

    const second = await importInto(token, body);
    expect(second.body).toMatchObject({ imported: 0, skipped: 3 });

    const exported = await exportOf(token, '?include_superseded=true');
    expect(exported.lines.map((l) => [l.content, l.valid_to]).sort()).toEqual([
      ['Fay speaks Finnish', null],
      ['Fay used to live in Turku', '2022-06-01T00:00:00.000Z'],
    ]);
    // Imported memories are found by recall: they were embedded.
    const recalled = await app.call('POST', '/memories/recall', { token, body: { query: 'Which language does Fay speak?', min_relevance: 0 } });
    expect(recalled.body.memories.map((m: { content: string }) => m.content)).toContain('Fay speaks Finnish');
  });

  it('dates a line without occurred_at at the import, and refuses unknown fields and a valid_to before occurred_at', async () => {
    const tenant = uniqueTenant('import');
    const token = await tokenFor({ tenant, user: 'hal' });
    const before = Date.now();
    const result = await importInto(
      token,
      ndjson([
        { content: 'Hal keeps bees' },
        { content: 'Hal rows', ttl_days: 3 },
        { content: 'Hal lived in Oslo', occurred_at: '2024-01-01T00:00:00.000Z', valid_to: '2020-01-01T00:00:00.000Z' },
        { id: 'x', user_id: 'someone', created_at: 'then', updated_at: 'then', events: [], content: 'Hal sails', occurred_at: '2023-01-01T00:00:00.000Z' },
      ]),
    );
    expect(result.status).toBe(200);
    expect(result.body.imported).toBe(2);
    expect(result.body.errors).toEqual([
      { line: 2, message: expect.stringMatching(/unknown field "ttl_days"/) },
      { line: 3, message: expect.stringMatching(/^\/valid_to: must not be before occurred_at/) },
    ]);
    const [bees] = (await exportOf(token, '')).lines.filter((l) => l.content === 'Hal keeps bees');
    expect(Date.parse(bees!.occurred_at as string)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('refuses another media type and a body over MAX_IMPORT_BYTES', async () => {
    const tenant = uniqueTenant('import');
    const token = await tokenFor({ tenant, user: 'gus' });
    expect((await importInto(token, '{}', 'application/json')).status).toBe(415);
    const small = await startTestApp({ MAX_IMPORT_BYTES: '2048' });
    try {
      const big = ndjson(Array.from({ length: 100 }, (_, i) => ({ content: `Gus fact number ${i}`, occurred_at: '2023-01-01T00:00:00.000Z' })));
      const res = await small.call('POST', '/memories/import', { token, rawBody: big, headers: { 'content-type': 'application/x-ndjson' } });
      expect(res.status).toBe(413);
      expect(res.body.code).toBeDefined();
    } finally {
      await small.close();
    }
    // A body past MAX_BODY_BYTES but within MAX_IMPORT_BYTES is taken.
    const many = ndjson(Array.from({ length: 200 }, (_, i) => ({ content: `Gus remembers item ${i} ${'word '.repeat(1200)}`, occurred_at: '2023-01-01T00:00:00.000Z' })));
    expect(Buffer.byteLength(many)).toBeGreaterThan(1_048_576);
    const res = await importInto(token, many);
    expect(res.status).toBe(200);
    expect(res.body.imported).toBe(200);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgliteApp, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Moving memories between deployments: export a user from a tenant on PostgreSQL, import the file
 * into another tenant on the embedded backend (PGlite), export again: the same memories, field
 * for field, ids and the target's own bookkeeping (created_at, updated_at) aside.
 */

let source: TestApp;
let target: TestApp;
beforeAll(async () => {
  source = await startTestApp();
  target = await startPgliteApp({}, {});
});
afterAll(async () => {
  await source?.close();
  await target?.close();
});

async function exportAll(app: TestApp, token: string): Promise<string> {
  const res = await app.runtime.app.request('/memories/export?include_superseded=true', { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

const FIELDS = ['user_id', 'agent_id', 'run_id', 'content', 'importance', 'category', 'metadata', 'occurred_at', 'valid_to', 'expires_at'] as const;
const comparable = (file: string) =>
  file
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const memory = JSON.parse(line) as Record<string, unknown>;
      return Object.fromEntries(FIELDS.map((f) => [f, memory[f]]));
    })
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('export from PostgreSQL, import into the embedded backend', () => {
  it('keeps every memory field for field', async () => {
    expect(source.databaseUrl).toMatch(/^postgres/);
    expect(target.databaseUrl).toMatch(/^pglite/);
    const from = await tokenFor({ tenant: uniqueTenant('from'), user: 'hal' });
    await source.call('POST', '/memories', {
      token: from,
      body: {
        agent_id: 'planner',
        run_id: 'run-7',
        memories: [
          { content: 'Hal is vegetarian', importance: 9, category: 'health', metadata: { confidence: 0.9, tags: ['diet'] }, occurred_at: '2021-05-04T03:02:01.123Z' },
          { content: 'Hal works at a bakery', category: 'work', expires_at: '2030-01-01T00:00:00.000Z' },
          { content: 'Hal lives in Lyon', occurred_at: '2019-01-01T00:00:00.000Z' },
        ],
      },
    });
    await source.call('POST', '/memories', { token: from, body: { memories: [{ content: 'Hal lives in Lyon', importance: 6, occurred_at: '2024-02-02T00:00:00.000Z' }] } });
    const file = await exportAll(source, from);
    // Three memories, one of them superseded by the fourth.
    expect(file.split('\n').filter(Boolean)).toHaveLength(4);

    const to = await tokenFor({ tenant: uniqueTenant('to'), user: 'hal' });
    const imported = await target.call('POST', '/memories/import', { token: to, rawBody: file, headers: { 'content-type': 'application/x-ndjson' } });
    expect(imported.body).toEqual({ imported: 4, skipped: 0, errors: [] });
    const again = await exportAll(target, to);
    expect(comparable(again)).toEqual(comparable(file));
  });
});

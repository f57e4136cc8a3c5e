import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { startTestApp, tokenFor, uniqueTenant, type CallResult, type TestApp } from '../support/harness.js';

/**
 * Input at the edges of what PostgreSQL stores: date-times past 9999-12-31 UTC, list cursors a
 * client made up or altered, and any data exception the database raises. Each is a 400
 * problem+json, never a 500, and writes nothing.
 */

let app: TestApp;
const tenant = uniqueTenant('bounds');
let token: string;

beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant, user: 'alice' });
  const res = await app.call('POST', '/memories', { token, body: { memories: ['one', 'two', 'three'].map((content) => ({ content: `Alice counts ${content}` })) } });
  expect(res.status).toBe(201);
});
afterAll(() => app.close());

function expectValidationProblem(res: CallResult, path: string): void {
  expect(res.status).toBe(400);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('validation_failed');
  expect((res.body.errors as Array<{ path: string }>).map((e) => e.path)).toContain(path);
}

async function count(): Promise<number> {
  const [row] = await app.owner`select count(*)::int as n from memories where tenant_id = ${tenant}`;
  return row!.n as number;
}

describe('date-times are bounded to 0001-01-01 .. 9999-12-31 UTC, the offset applied', () => {
  // 9999-12-31T23:59:59-14:00 is 10000-01-01T13:59:59Z: a year PostgreSQL's driver cannot write.
  const PAST_9999 = '9999-12-31T23:59:59-14:00';
  const LAST_INSTANT = '9999-12-31T23:59:59.999Z';

  it('occurred_at past 9999 in UTC is a 400, and nothing is written', async () => {
    const before = await count();
    const res = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'late', occurred_at: PAST_9999 }] } });
    expectValidationProblem(res, '/memories/0/occurred_at');
    expect(res.body.errors[0].message).toMatch(/9999-12-31/);
    expect(await count()).toBe(before);
  });

  it('expires_at past 9999 in UTC is a 400', async () => {
    const res = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'late', expires_at: '10000-01-01T00:00:00Z' }] } });
    expect(res.status).toBe(400);
    const offset = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'late', expires_at: PAST_9999 }] } });
    expectValidationProblem(offset, '/memories/0/expires_at');
  });

  it("recall's as_of past 9999 in UTC is a 400", async () => {
    const res = await app.call('POST', '/memories/recall', { token, body: { query: 'counts', as_of: PAST_9999 } });
    expectValidationProblem(res, '/as_of');
  });

  it("an extract's messages[].created_at past 9999 in UTC is a 400, not a 202 whose job then fails", async () => {
    const res = await app.call('POST', '/memories/extract', { token, body: { messages: [{ role: 'user', content: 'I count sheep', created_at: PAST_9999 }] } });
    expectValidationProblem(res, '/messages/0/created_at');
  });

  it('the last instant of 9999 in UTC, and the same day with a positive offset, are accepted', async () => {
    const res = await app.call('POST', '/memories', {
      token,
      body: { memories: [{ content: 'at the very end', occurred_at: LAST_INSTANT, expires_at: '9999-12-31T23:59:59+14:00' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body.memories[0].occurred_at).toBe(LAST_INSTANT);
    const recall = await app.call('POST', '/memories/recall', { token, body: { query: 'counts', as_of: LAST_INSTANT } });
    expect(recall.status).toBe(200);
  });
});

describe('list cursors are opaque in fact: signed, and strictly parsed', () => {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  async function firstCursor(): Promise<string> {
    const res = await app.call('GET', '/memories?limit=1', { token });
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toEqual(expect.any(String));
    return res.body.next_cursor as string;
  }

  it('an issued cursor pages on', async () => {
    const cursor = await firstCursor();
    const res = await app.call('GET', `/memories?limit=1&cursor=${encodeURIComponent(cursor)}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.memories).toHaveLength(1);
  });

  it('a made-up cursor with an extended year and an id of 36 dashes is a 400 (it was a database error)', async () => {
    for (const forged of [encode(['+275760-09-13T00:00:00.000Z', '-'.repeat(36)]), encode(['2024-01-01T00:00:00.000Z', '-'.repeat(36)]), encode(['+010000-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'])]) {
      const res = await app.call('GET', `/memories?cursor=${forged}`, { token });
      expectValidationProblem(res, '/cursor');
    }
  });

  it('a cursor of the right shape that this service did not sign is a 400', async () => {
    const res = await app.call('GET', `/memories?cursor=${encode(['2024-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000'])}`, { token });
    expectValidationProblem(res, '/cursor');
  });

  it('an issued cursor with any one character changed is a 400', async () => {
    const cursor = await firstCursor();
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (const index of [0, Math.floor(cursor.length / 2), cursor.length - 1]) {
      const swapped = alphabet[(alphabet.indexOf(cursor[index]!) + 1) % alphabet.length]!;
      const tampered = `${cursor.slice(0, index)}${swapped}${cursor.slice(index + 1)}`;
      const res = await app.call('GET', `/memories?cursor=${encodeURIComponent(tampered)}`, { token });
      expectValidationProblem(res, '/cursor');
    }
  });

  it("another user's cursor is not accepted for this user's list", async () => {
    const cursor = await firstCursor();
    const bob = await tokenFor({ tenant, user: 'bob' });
    const res = await app.call('GET', `/memories?cursor=${encodeURIComponent(cursor)}`, { token: bob });
    expectValidationProblem(res, '/cursor');
  });

  it('a cursor signed with another key is refused (a cursor signed without the server key cannot be forged)', async () => {
    const payload = encode(['2024-01-01T00:00:00.000Z', '00000000-0000-4000-8000-000000000000']);
    const mac = createHmac('sha256', 'not the server key').update(payload).digest('base64url');
    const res = await app.call('GET', `/memories?cursor=${payload}.${mac}`, { token });
    expectValidationProblem(res, '/cursor');
  });
});

describe('a database data exception (SQLSTATE class 22) is a 400 problem, never a 500', () => {
  it('maps a data exception raised by PostgreSQL itself to 400 problem+json', async () => {
    const { services } = app.runtime;
    const probe = buildApp({
      services,
      verifier: { verify: () => Promise.reject(new Error('unused')) },
      extraRoutes: [
        (a) =>
          a.get('/probe', async (c) => {
            await services.database.inTransaction([], (tx) => tx.execute(sql`select ${'+010000-01-01T13:59:59.000Z'}::timestamptz`));
            return c.json({ ok: true });
          }),
      ],
    });
    const res = await probe.request('/probe');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.code).toBe('validation_failed');
    // The database's message may quote the value sent; it is not repeated back.
    expect(JSON.stringify(body)).not.toContain('10000');
  });
});

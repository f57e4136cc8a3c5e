import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engram, EngramError, type Memory } from '@engram/client';
import { startService, type Service } from './service.js';

/** @engram/client, as built into dist/ and resolved through the package's exports, against the real service. */

let service: Service;

beforeAll(async () => {
  service = await startService();
});

afterAll(async () => {
  await service?.close();
});

async function clientFor(user: string, options: ConstructorParameters<typeof Engram>[0] = {}) {
  return new Engram({ baseURL: service.url, token: await service.token(user), ...options });
}

describe('memories', () => {
  it('add stores as given with the defaults filled in, metadata kept; get, update, history and delete follow', async () => {
    const engram = await clientFor('alice');
    const { memories } = await engram.memories.add({
      memories: [{ content: 'Alice is allergic to peanuts', importance: 9, category: 'health' }, { content: 'Alice plays chess', metadata: { source: 'onboarding' } }],
    });
    expect(memories.map((m) => m.content)).toEqual(['Alice is allergic to peanuts', 'Alice plays chess']);
    expect(memories[1]).toMatchObject({ user_id: 'alice', importance: 5, category: null, metadata: { source: 'onboarding' } });

    const chess = memories[1]!;
    expect(await engram.memories.get(chess.id)).toEqual(chess);
    const updated = await engram.memories.update(chess.id, { content: 'Alice plays chess on Sundays', importance: 6 });
    expect(updated).toMatchObject({ id: chess.id, content: 'Alice plays chess on Sundays', importance: 6 });
    const { events } = await engram.memories.history(chess.id);
    expect(events.map((e) => [e.event, e.new_content])).toEqual([
      ['ADD', 'Alice plays chess'],
      ['UPDATE', 'Alice plays chess on Sundays'],
    ]);

    await expect(engram.memories.delete(chess.id)).resolves.toBeUndefined();
    const missing = await engram.memories.get(chess.id).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(EngramError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found', requestId: expect.any(String) });
  });

  it('recall answers the memories best first with their scores', async () => {
    const engram = await clientFor('bob');
    await engram.memories.add({ memories: [{ content: 'Bob lives in Lisbon' }, { content: 'Bob is vegetarian and cooks curry' }] });
    const { memories } = await engram.memories.recall({ query: 'What does Bob cook?', limit: 5 });
    expect(memories[0]).toMatchObject({ content: 'Bob is vegetarian and cooks curry', score: expect.any(Number), scores: { relevance: expect.any(Number) } });
    const scores = memories.map((m) => m.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('list answers one page when awaited, and every memory of every page when iterated', async () => {
    const engram = await clientFor('carol');
    const contents = Array.from({ length: 5 }, (_, i) => `Carol fact number ${i}`);
    for (const content of contents) await engram.memories.add({ memories: [{ content }] });

    const first = await engram.memories.list({ limit: 2 });
    expect(first.memories).toHaveLength(2);
    expect(first.next_cursor).toEqual(expect.any(String));

    const all: Memory[] = [];
    for await (const memory of engram.memories.list({ limit: 2 })) all.push(memory);
    // Newest first, and nothing twice or missed across the three pages.
    expect(all.map((m) => m.content)).toEqual([...contents].reverse());
    const pages = [];
    for await (const page of engram.memories.list({ limit: 2 }).pages()) pages.push(page.memories.length);
    expect(pages).toEqual([2, 2, 1]);
  });

  it('erase deletes everything held about the user and answers a receipt', async () => {
    const engram = await clientFor('dave');
    await engram.memories.add({ memories: [{ content: 'Dave drives a red car' }, { content: 'Dave has two cats' }] });
    const receipt = await engram.memories.erase();
    expect(receipt).toEqual({ deleted: 2, erasure_id: expect.any(String) });
    expect((await engram.memories.list()).memories).toEqual([]);
  });

  it('a service token with memories:act_as names the user on each call', async () => {
    const agent = new Engram({ baseURL: service.url, token: await service.token('agent-1', 'memories:read memories:write memories:act_as') });
    await agent.memories.add({ user_id: 'erin', memories: [{ content: 'Erin speaks Portuguese' }] });
    const { memories } = await agent.memories.recall({ user_id: 'erin', query: 'Which language does Erin speak?' });
    expect(memories.map((m) => m.content)).toEqual(['Erin speaks Portuguese']);
    const page = await agent.memories.list({ user_id: 'agent-1' });
    expect(page.memories).toEqual([]);
  });
});

describe('extraction and jobs', () => {
  it('extract queues a job that jobs.wait follows to its end', async () => {
    const engram = await clientFor('frank');
    const accepted = await engram.memories.extract({ messages: [{ role: 'user', content: 'I just moved to Berlin. I work as a nurse.' }] });
    expect(accepted).toMatchObject({ status: 'queued', status_url: `/jobs/${accepted.job_id}` });
    const job = await engram.jobs.wait(accepted.job_id, { timeoutMs: 20_000 });
    expect(job).toMatchObject({ job_id: accepted.job_id, status: 'succeeded', result: { added: 2 } });
    expect((await engram.jobs.get(accepted.job_id)).status).toBe('succeeded');
    const contents = (await engram.memories.list()).memories.map((m) => m.content).sort();
    expect(contents).toEqual(['User just moved to Berlin.', 'User works as a nurse.']);
  });

  it('the same idempotency key gives the same job; without one, each call is a new job', async () => {
    const engram = await clientFor('gina');
    const body = { messages: [{ role: 'user' as const, content: 'I like green tea.' }] };
    const a = await engram.memories.extract(body, { idempotencyKey: 'conversation-7' });
    const b = await engram.memories.extract(body, { idempotencyKey: 'conversation-7' });
    expect(b.job_id).toBe(a.job_id);
    const c = await engram.memories.extract(body);
    const d = await engram.memories.extract(body);
    expect(new Set([a.job_id, c.job_id, d.job_id]).size).toBe(3);
    const conflict = await engram.memories.extract({ messages: [{ role: 'user', content: 'Other.' }] }, { idempotencyKey: 'conversation-7' }).catch((e: unknown) => e);
    expect(conflict).toMatchObject({ status: 409, code: 'idempotency_conflict' });
  });

  it('jobs.wait answers the job as it is when the bound passes first', async () => {
    const engram = await clientFor('hank');
    // With a zero bound the first answer is returned, whatever the job's status then.
    const accepted = await engram.memories.extract({ messages: [{ role: 'user', content: 'I own a boat.' }] });
    const job = await engram.jobs.wait(accepted.job_id, { timeoutMs: 0 });
    expect(job.job_id).toBe(accepted.job_id);
    expect(['queued', 'running', 'succeeded']).toContain(job.status);
  });
});

describe('errors and tokens', () => {
  it('invalid input throws EngramError with the service\'s detail, code, request id and field errors', async () => {
    const engram = await clientFor('ivan');
    const error = await engram.memories.add({ memories: [{ content: '', importance: 11 }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngramError);
    const e = error as EngramError;
    expect(e).toMatchObject({ status: 400, code: 'validation_failed', detail: expect.any(String), requestId: expect.any(String) });
    expect(e.errors?.map((f) => f.path)).toEqual(expect.arrayContaining(['/memories/0/content', '/memories/0/importance']));
  });

  it('a rejected token throws 401 unauthorized', async () => {
    const engram = new Engram({ baseURL: service.url, token: 'not-a-jwt' });
    await expect(engram.memories.list()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('a token function is called for every request, so a rotated token is used at once', async () => {
    const tokens = [await service.token('judy'), await service.token('judy', 'memories:read')];
    let calls = 0;
    const engram = new Engram({ baseURL: service.url, token: async () => tokens[Math.min(calls++, 1)]! });
    await engram.memories.add({ memories: [{ content: 'Judy runs marathons' }] });
    // The second token may only read: the rotation is visible as a 403 on a write.
    expect((await engram.memories.list()).memories).toHaveLength(1);
    await expect(engram.memories.add({ memories: [{ content: 'x' }] })).rejects.toMatchObject({ status: 403, code: 'forbidden' });
    expect(calls).toBe(3);
  });

  it('a service that is not there throws a connection_error without a status', async () => {
    const engram = new Engram({ baseURL: 'http://127.0.0.1:9', token: 't' });
    await expect(engram.memories.list()).rejects.toMatchObject({ name: 'EngramError', status: undefined, code: 'connection_error' });
  });

  it('a 429 of the real rate limit surfaces with its Retry-After when waiting would pass the bound', async () => {
    const limited = await startService({ env: { RATE_LIMIT_PER_MINUTE: '2' } });
    try {
      const engram = new Engram({ baseURL: limited.url, token: await limited.token('kim'), maxRetryDelayMs: 0 });
      await engram.memories.list();
      await engram.memories.list();
      const error = await engram.memories.list().catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
      expect((error as EngramError).retryAfter).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});

/**
 * Retrying needs answers the real service gives only under load or outage, so a scripted HTTP
 * server answers 503/429 here; what is checked is what the client sends.
 */
describe('retries', () => {
  let server: Server;
  let url: string;
  let answers: Array<{ status: number; headers?: Record<string, string>; body?: unknown }> = [];
  let seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      const answer = answers.shift() ?? { status: 500, body: { code: 'internal', detail: 'unscripted' } };
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(JSON.stringify(answer.body ?? {}));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const problem = (status: number, code: string) => ({ status, code, detail: `scripted ${code}`, request_id: `req-${status}` });
  const accepted = { job_id: '0b7f6a52-3c2e-4f0e-9f51-2a1f7d3c9e10', status: 'queued', status_url: '/jobs/0b7f6a52-3c2e-4f0e-9f51-2a1f7d3c9e10' };

  it('503 and 429 are retried after their Retry-After, and an extract keeps one generated Idempotency-Key', async () => {
    seen = [];
    answers = [
      { status: 503, headers: { 'retry-after': '0' }, body: problem(503, 'unavailable') },
      { status: 429, headers: { 'retry-after': new Date(Date.now() - 1000).toUTCString() }, body: problem(429, 'rate_limited') },
      { status: 202, body: accepted },
    ];
    const engram = new Engram({ baseURL: url, token: 't' });
    await expect(engram.memories.extract({ messages: [{ role: 'user', content: 'hi' }] })).resolves.toEqual(accepted);
    expect(seen).toHaveLength(3);
    const keys = seen.map((h) => h['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it('gives up after maxRetries, throwing the last answer', async () => {
    seen = [];
    answers = Array.from({ length: 3 }, () => ({ status: 503, headers: { 'retry-after': '0' }, body: problem(503, 'unavailable') }));
    const engram = new Engram({ baseURL: url, token: 't', maxRetries: 1 });
    await expect(engram.memories.list()).rejects.toMatchObject({ status: 503, code: 'unavailable', requestId: 'req-503', retryAfter: 0 });
    expect(seen).toHaveLength(2);
    answers = [];
  });

  it('does not wait longer than maxRetryDelayMs, and does not retry other statuses', async () => {
    seen = [];
    answers = [{ status: 429, headers: { 'retry-after': '3600' }, body: problem(429, 'rate_limited') }];
    await expect(new Engram({ baseURL: url, token: 't' }).memories.list()).rejects.toMatchObject({ status: 429, retryAfter: 3600 });
    answers = [{ status: 400, body: problem(400, 'validation_failed') }];
    await expect(new Engram({ baseURL: url, token: 't' }).memories.list()).rejects.toMatchObject({ status: 400 });
    expect(seen).toHaveLength(2);
  });
});

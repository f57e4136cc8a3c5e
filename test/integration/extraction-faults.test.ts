import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BullJobQueue } from '../../src/queue/bullmq.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import {
  decisionsReply,
  deleteQueueKeys,
  factsReply,
  llmAppEnv,
  postExtract,
  said,
  uniqueQueuePrefix,
  waitForJob,
  waitUntil,
} from '../support/jobs.js';
import { chatKind, startScriptedLlm, type ChatRequestBody, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * Faults around the pipeline on real PostgreSQL and Redis: bad model output, timeouts, racing
 * workers, a Redis that lost its queue, an erasure that overtakes a queued job, and the offline
 * providers with the database-backed queue. On the PGlite backend the blocks that need two
 * processes' view of one database, or BullMQ itself, are skipped.
 */

let llm: ScriptedLlm;
const tenant = uniqueTenant('faults');
const prefixes: string[] = [];

beforeAll(async () => {
  llm = await startScriptedLlm();
});
afterAll(async () => {
  await llm?.close();
  for (const prefix of prefixes) await deleteQueueKeys(prefix);
});
beforeEach(() => {
  llm.reset();
});

function prefixFor(label: string): string {
  const prefix = uniqueQueuePrefix(label);
  prefixes.push(prefix);
  return prefix;
}

async function subject(label: string) {
  const user = `${label}-${randomUUID().slice(0, 8)}`;
  return { user, token: await tokenFor({ tenant, user }) };
}

async function countRows(app: TestApp, table: 'memories' | 'memory_events' | 'extraction_jobs', user: string): Promise<number> {
  const [row] = await app.owner.unsafe(`select count(*)::int as n from ${table} where tenant_id = $1 and user_id = $2`, [tenant, user]);
  return row!.n as number;
}

async function jobRow(app: TestApp, jobId: string) {
  const [row] = await app.owner`select status, attempts, payload, error from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
  return row;
}

const TIMEOUT_MS = 1000;

describe('model faults (scripted model)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp(llmAppEnv(llm, prefixFor('faults'), { LLM_TIMEOUT_MS: String(TIMEOUT_MS) }), { isolated: true });
    app.runtime.startWorker();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('malformed JSON once, then valid: the job succeeds, and the correction request shows the model its error', async () => {
    const { token } = await subject('fix');
    llm.enqueueChat({ content: '{"facts": [{"content": "User speaks Portuguese", "importance": 6' }, 'extraction');
    llm.enqueueChat(factsReply([{ content: 'User speaks Portuguese', importance: 6, category: 'personal' }]), 'extraction');
    const jobId = await postExtract(app, token, said('I speak Portuguese.'));
    const job = await waitForJob(app, token, jobId, ['succeeded', 'failed']);
    expect(job.status).toBe('succeeded');
    expect(job.result).toMatchObject({ added: 1 });
    expect(job.result!.usage.llm_calls).toBe(2);

    const [first, second] = llm.chatRequests('extraction') as [ChatRequestBody, ChatRequestBody];
    expect(llm.chatRequests('extraction')).toHaveLength(2);
    expect(first.messages).toHaveLength(2);
    expect(second.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(second.messages[2]!.content).toContain('"User speaks Portuguese"');
    expect(second.messages[3]!.content).toMatch(/previous answer was rejected: the answer is not valid JSON/);
    // The correction happened inside one attempt.
    expect((await jobRow(app, jobId))!.attempts).toBe(1);
  });

  it('always malformed: the job fails with llm_invalid_output after JOB_MAX_ATTEMPTS attempts and writes nothing', async () => {
    const { user, token } = await subject('broken');
    llm.onChat((body) => (chatKind(body) === 'extraction' ? { content: 'Sure! Here are the facts: the user likes jazz.' } : { status: 500 }));
    const jobId = await postExtract(app, token, said('I like jazz.'));
    const job = await waitForJob(app, token, jobId, ['succeeded', 'failed']);
    expect(job.status).toBe('failed');
    expect(job.error?.code).toBe('llm_invalid_output');
    // A fixed message: nothing the model wrote, nothing of the transcript.
    expect(job.error?.message).not.toMatch(/jazz/);
    expect(job.result).toBeUndefined();
    expect(job.finished_at).toBeDefined();

    // Three attempts, each with its one correction request.
    expect(llm.chatRequests('extraction')).toHaveLength(6);
    const row = await jobRow(app, jobId);
    expect(row).toMatchObject({ status: 'failed', attempts: 3 });
    // Failed for good: the transcript is not kept (nothing will read it again).
    expect(row!.payload).toBeNull();
    expect(await countRows(app, 'memories', user)).toBe(0);
    expect(await countRows(app, 'memory_events', user)).toBe(0);
  });

  it('an LLM timeout is retried after a backoff that grows, then the job succeeds', async () => {
    const { token } = await subject('slow');
    const arrivals: number[] = [];
    llm.onChat((body) => {
      if (chatKind(body) !== 'extraction') return { status: 500 };
      arrivals.push(Date.now());
      const answer = factsReply([{ content: 'User rides a motorbike', importance: 5 }]);
      // The first two answers come after LLM_TIMEOUT_MS.
      return arrivals.length <= 2 ? { delayMs: TIMEOUT_MS + 400, then: answer } : answer;
    });
    const jobId = await postExtract(app, token, said('I ride a motorbike.'));
    // Between attempts the job is back in the queue with the timeout as its error.
    const retrying = await waitUntil('the timeout to be recorded on the job', async () => {
      const res = await app.call('GET', `/jobs/${jobId}`, { token });
      return res.body.error?.code === 'llm_timeout' ? res.body : undefined;
    });
    expect(['queued', 'running']).toContain(retrying.status);
    const job = await waitForJob(app, token, jobId, ['succeeded', 'failed'], 8_000);
    expect(job.status).toBe('succeeded');
    expect(job.result).toMatchObject({ added: 1 });
    expect(arrivals).toHaveLength(3);
    expect((await jobRow(app, jobId))!.attempts).toBe(3);

    // Each retry came after the client timeout plus the backoff: 50 ms, then 100 ms.
    const slack = 20;
    const firstWait = arrivals[1]! - arrivals[0]! - TIMEOUT_MS;
    const secondWait = arrivals[2]! - arrivals[1]! - TIMEOUT_MS;
    expect(firstWait).toBeGreaterThanOrEqual(50 - slack);
    expect(secondWait).toBeGreaterThanOrEqual(100 - slack);
  });
});

// Two apps on one database and one Redis queue: PostgreSQL and Redis only.
describe.skipIf(TEST_BACKEND === 'pglite')('two workers, one user, the same new fact at the same time', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    // One job at a time each: both jobs in flight at once means both workers hold one.
    const env = llmAppEnv(llm, prefixFor('race'), { WORKER_CONCURRENCY: '1', LLM_TIMEOUT_MS: '5000' });
    first = await startTestApp(env, { isolated: true });
    second = await startTestApp({ ...env, DATABASE_URL: first.databaseUrl });
    first.runtime.startWorker();
    second.runtime.startWorker();
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('stores exactly one memory', async () => {
    const { user, token } = await subject('race');
    await first.call('POST', '/memories', { token, body: { memories: [{ content: 'User has a red bicycle' }] } });
    // Both resolution requests are held until both have arrived: each job has resolved against a
    // store without the new fact, and both decide ADD.
    const held: Array<() => void> = [];
    let together = false;
    llm.onChat(async (body) => {
      if (chatKind(body) === 'extraction') return factsReply([{ content: 'User is training for a marathon', importance: 6 }]);
      await new Promise<void>((resolve) => {
        held.push(resolve);
        if (held.length === 2) {
          together = true;
          for (const release of held) release();
        } else setTimeout(resolve, 3_000);
      });
      return decisionsReply([{ fact_index: 0, operation: 'ADD' }]);
    });
    const [a, b] = await Promise.all([
      postExtract(first, token, said('I am training for a marathon.')),
      postExtract(second, token, said('Training for a marathon, I am.')),
    ]);
    const jobs = await Promise.all([waitForJob(first, token, a, 'succeeded'), waitForJob(second, token, b, 'succeeded')]);
    expect(together).toBe(true);
    expect(llm.chatRequests('resolution')).toHaveLength(2);

    expect(jobs.map((j) => j.result!.added).sort()).toEqual([0, 1]);
    expect(jobs.map((j) => j.result!.unchanged).sort()).toEqual([0, 1]);
    const rows = await first.owner`select id from memories where tenant_id = ${tenant} and user_id = ${user} and content = 'User is training for a marathon'`;
    expect(rows).toHaveLength(1);
    const events = await first.owner`select event from memory_events where tenant_id = ${tenant} and memory_id = ${rows[0]!.id}`;
    expect(events.map((e) => e.event)).toEqual(['ADD']);
    expect(await countRows(first, 'memories', user)).toBe(2);
  });
});

// BullMQ's own entries are part of what is checked: Redis only.
describe.skipIf(TEST_BACKEND === 'pglite')('no worker running: erasure of a queued job, then Redis loses the queue', () => {
  let app: TestApp;
  let prefix: string;
  let bull: BullJobQueue['queue'];
  beforeAll(async () => {
    prefix = prefixFor('flush');
    app = await startTestApp(llmAppEnv(llm, prefix), { isolated: true });
    bull = (app.runtime.queue as BullJobQueue).queue;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('erases the queued job, its transcript and its BullMQ entry; a worker started later writes nothing; swept jobs all succeed', async () => {
    // Erasure while the job waits.
    const erased = await subject('erased');
    const erasedJob = await postExtract(app, erased.token, said('I live in Oslo and my PIN is 4321.'));
    expect(await bull.getJob(erasedJob)).toBeDefined();
    expect((await jobRow(app, erasedJob))!.payload).not.toBeNull();

    const deletion = await app.call('POST', '/memories/delete', { token: erased.token, body: {} });
    expect(deletion.status).toBe(200);
    expect(await bull.getJob(erasedJob)).toBeUndefined();
    expect(await jobRow(app, erasedJob)).toBeUndefined();
    expect(await countRows(app, 'extraction_jobs', erased.user)).toBe(0);
    expect((await app.call('GET', `/jobs/${erasedJob}`, { token: erased.token })).status).toBe(404);

    // Jobs wait; Redis loses them (only this file's keys: other files share db 15).
    const kept = await subject('swept');
    const texts = ['I play the cello.', 'I grow tomatoes on my balcony.', 'I am learning to sail.'];
    const ids: string[] = [];
    for (const text of texts) ids.push(await postExtract(app, kept.token, said(text)));
    for (const id of ids) expect(await bull.getJob(id)).toBeDefined();
    expect(await deleteQueueKeys(prefix)).toBeGreaterThan(0);
    for (const id of ids) expect(await bull.getJob(id)).toBeUndefined();
    // As if the erased job's enqueue had raced the erasure: its id is back in Redis.
    await bull.add('extract', { tenantId: tenant, jobId: erasedJob }, { jobId: erasedJob, removeOnComplete: true });

    app.runtime.startWorker();
    const jobs = await Promise.all(ids.map((id) => waitForJob(app, kept.token, id, ['succeeded', 'failed'], 8_000)));
    expect(jobs.map((j) => j.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(jobs.reduce((n, j) => n + j.result!.added, 0)).toBe(3);
    expect(await countRows(app, 'memories', kept.user)).toBe(3);

    // The erased job's delivery ran and found nothing to do.
    await waitUntil('the erased job to leave the queue', async () => (await bull.getJob(erasedJob)) === undefined);
    for (const table of ['memories', 'memory_events', 'extraction_jobs'] as const) expect(await countRows(app, table, erased.user)).toBe(0);
    expect(JSON.stringify(llm.requests)).not.toContain('Oslo');
  });
});

describe('offline providers with the database-backed queue', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ EMBEDDING_DIMENSIONS: '256', TRANSCRIPT_RETENTION_HOURS: '24', JOB_BACKOFF_MS: '50', WORKER_CONCURRENCY: '1' }, { isolated: true });
    app.runtime.startWorker();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('runs the same pipeline end to end, says which providers ran, and keeps the transcript under a retention setting', async () => {
    expect(app.runtime.queue.kind).toBe('database');
    const { user, token } = await subject('offline');
    const transcript = [
      { role: 'user', content: 'Hi! My name is Alice. I live in Lisbon. Can you recommend a restaurant?' },
      { role: 'assistant', content: 'My favourite is Taberna da Rua das Flores.' },
    ];
    const jobId = await postExtract(app, token, { messages: transcript });
    const job = await waitForJob(app, token, jobId, 'succeeded');
    expect(job.result).toMatchObject({
      added: 2,
      unchanged: 0,
      providers: { extractor: 'offline:heuristic', resolver: 'offline:similarity', embedder: 'offline:lexical' },
      usage: { llm_calls: 0 },
    });
    const list = await app.call('GET', '/memories', { token });
    expect(list.body.memories.map((m: { content: string; importance: number; category: string | null }) => [m.content, m.importance, m.category]).sort()).toEqual([
      ['User lives in Lisbon.', 6, 'location'],
      ["User's name is Alice.", 9, 'personal'],
    ]);

    // TRANSCRIPT_RETENTION_HOURS > 0: the transcript stays after success.
    expect((await jobRow(app, jobId))!.payload).toMatchObject({ messages: transcript });

    // The same fact again is a NOOP offline too.
    const again = await waitForJob(app, token, await postExtract(app, token, said('I live in Lisbon.')), 'succeeded');
    expect(again.result).toMatchObject({ added: 0, unchanged: 1 });
    expect(await countRows(app, 'memories', user)).toBe(2);
  });

  it('a free slot takes the next due job at once, not at the next poll tick', async () => {
    const { token } = await subject('backlog');
    // One job at a time; the runner polls every second when nothing nudges it.
    const started = Date.now();
    const ids: string[] = [];
    for (const text of ['I knit scarves.', 'I brew my own beer.', 'I keep bees in my garden.', 'I restore old radios.', 'I sing in a choir.']) {
      ids.push(await postExtract(app, token, said(text)));
    }
    const jobs = await Promise.all(ids.map((id) => waitForJob(app, token, id, 'succeeded', 8_000)));
    const elapsed = Math.max(...jobs.map((j) => Date.parse(j.finished_at!))) - started;
    expect(elapsed).toBeLessThan(3_000);
  });
});

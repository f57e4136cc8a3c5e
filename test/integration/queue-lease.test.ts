import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BullJobQueue, QUEUE_NAME } from '../../src/queue/bullmq.js';
import type { DueJob } from '../../src/queue/types.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { startTestApp, testConfig, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, factsReply, llmAppEnv, postExtract, said, uniqueQueuePrefix, waitForJob } from '../support/jobs.js';
import { parseMetrics } from '../support/metrics.js';
import { chatKind, chatUserData, startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * Leases, redelivery and the queue's own bookkeeping on real PostgreSQL and Redis: a live
 * worker keeps a long job; a dead worker's job comes back when its lease lapses; the sweeper
 * re-sends only what is still due; erasure leaves no job id in Redis; metrics tell the backlog.
 */

const tenant = uniqueTenant('lease');
const prefixes: string[] = [];
let llm: ScriptedLlm;

function prefixFor(label: string): string {
  const prefix = uniqueQueuePrefix(label);
  prefixes.push(prefix);
  return prefix;
}

async function subject(label: string) {
  const user = `${label}-${randomUUID().slice(0, 8)}`;
  return { user, token: await tokenFor({ tenant, user }) };
}

async function jobRow(app: TestApp, jobId: string) {
  const [row] = await app.owner`select status, attempts, payload from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
  return row;
}

async function scrape(app: TestApp) {
  const res = await app.call('GET', '/metrics');
  expect(res.status).toBe(200);
  return parseMetrics(res.body as string);
}

beforeAll(async () => {
  llm = await startScriptedLlm();
});
afterAll(async () => {
  await llm?.close();
  for (const prefix of prefixes) await deleteQueueKeys(prefix);
});
beforeEach(() => llm.reset());

describe('a job that runs longer than its lease, with a second worker polling', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    // The database-backed queue: the other worker takes any running job whose lease lapsed.
    const env = llmAppEnv(llm, prefixFor('heartbeat'), { REDIS_URL: '', JOB_LEASE_MS: '3000', LLM_TIMEOUT_MS: '30000' });
    first = await startTestApp(env, { isolated: true });
    second = await startTestApp({ ...env, DATABASE_URL: first.databaseUrl });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('stays with the worker that runs it: the heartbeat renews the lease, nobody takes it over', async () => {
    const { token } = await subject('long');
    llm.onChat((body) =>
      chatKind(body) === 'extraction' ? { delayMs: 9_000, then: factsReply([{ content: 'User collects stamps' }]) } : { status: 500 },
    );
    const jobId = await postExtract(first, token, said('I collect stamps.'));
    first.runtime.startWorker();
    second.runtime.startWorker();
    const job = await waitForJob(first, token, jobId, ['succeeded', 'failed'], 30_000);
    expect(job).toMatchObject({ status: 'succeeded', result: { added: 1 } });
    expect((await jobRow(first, jobId))!.attempts).toBe(1);
    expect(llm.chatRequests('extraction')).toHaveLength(1);
    // Claimed from the queue, not taken over: neither process counts a lease expiry.
    for (const app of [first, second]) {
      const expiries = (await scrape(app)).find((s) => s.name === 'engram_queue_lease_expiries_total' && s.labels.kind === 'extraction');
      expect(expiries?.value ?? 0).toBe(0);
    }
  }, 60_000);
});

describe('a job whose worker died holding its lease', () => {
  let app: TestApp;
  beforeAll(async () => {
    // No sweeper to rescue it: the redelivery alone must bring it back.
    app = await startTestApp(
      llmAppEnv(llm, prefixFor('dead'), { JOB_LEASE_MS: '2000', QUEUE_SWEEP_INTERVAL_MS: '3600000', QUEUE_STALE_AFTER_MS: '86400000' }),
      { isolated: true },
    );
  });
  afterAll(async () => {
    await app?.close();
  });

  it('is refused as busy while the lease holds, then runs as soon as it lapses; the takeover is counted', async () => {
    const { token } = await subject('dead');
    llm.onChat((body) => (chatKind(body) === 'extraction' ? factsReply([{ content: 'User plays chess' }]) : { status: 500 }));
    const jobId = await postExtract(app, token, said('I play chess.'));
    // As a worker that claimed it and was killed: running, attempt 1, its lease still good.
    await app.owner`update extraction_jobs set status = 'running', attempts = 1, locked_until = now() + interval '1500 milliseconds' where tenant_id = ${tenant} and id = ${jobId}`;
    app.runtime.startWorker();
    const job = await waitForJob(app, token, jobId, ['succeeded', 'failed'], 20_000);
    expect(job).toMatchObject({ status: 'succeeded', result: { added: 1 } });
    expect((await jobRow(app, jobId))!.attempts).toBe(2);
    const expiries = (await scrape(app)).find((s) => s.name === 'engram_queue_lease_expiries_total' && s.labels.kind === 'extraction');
    expect(expiries?.value).toBe(1);
  });
});

describe('the sweeper', () => {
  it('re-sends a job Redis lost only when the job is still due when it looks', async () => {
    const prefix = prefixFor('sweep');
    const requeued: number[] = [];
    const queue = new BullJobQueue({
      config: testConfig({ REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix }),
      logger: pino({ level: 'silent' }),
      observer: { enqueueFailed: () => {}, requeued: (_kind, n) => requeued.push(n) },
    });
    try {
      const ref: DueJob = { tenantId: tenant, jobId: randomUUID() };
      let stillDue = false;
      // The due list was read a moment ago; by the time the sweeper looks, the job has finished.
      queue.register({ name: 'probe', process: async () => ({ kind: 'succeeded' }), findDue: async () => [ref], isDue: async () => stillDue });
      expect(await queue.sweepOnce()).toBe(0);
      expect(await queue.queue.getJob(ref.jobId)).toBeUndefined();

      stillDue = true;
      expect(await queue.sweepOnce()).toBe(1);
      expect((await queue.queue.getJob(ref.jobId))?.data).toEqual({ kind: 'probe', tenantId: tenant, jobId: ref.jobId });
      expect(requeued).toEqual([1]);
    } finally {
      await queue.close();
    }
  });
});

describe('erasure and the BullMQ events stream', () => {
  let app: TestApp;
  let prefix: string;
  beforeAll(async () => {
    prefix = prefixFor('events');
    app = await startTestApp(llmAppEnv(llm, prefix), { isolated: true });
    app.runtime.startWorker();
  });
  afterAll(async () => {
    await app?.close();
  });

  it("leaves none of the erased user's job ids in the stream, and keeps the others'", async () => {
    llm.onChat((body) => (chatKind(body) === 'extraction' ? factsReply([{ content: `User said ${JSON.stringify(chatUserData(body)).length}` }]) : { status: 500 }));
    const erased = await subject('erased');
    const kept = await subject('kept');
    const erasedJob = await postExtract(app, erased.token, said('I live in Oslo.'));
    const keptJob = await postExtract(app, kept.token, said('I live in Bergen.'));
    await waitForJob(app, erased.token, erasedJob, 'succeeded');
    await waitForJob(app, kept.token, keptJob, 'succeeded');

    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const idsInStream = async () => {
        const entries = (await redis.xrange(`${prefix}:${QUEUE_NAME}:events`, '-', '+')) as Array<[string, string[]]>;
        return new Set(entries.flatMap(([, fields]) => fields.filter((_, i) => i % 2 === 1 && fields[i - 1] === 'jobId')));
      };
      expect(await idsInStream()).toContain(erasedJob);
      expect((await app.call('POST', '/memories/delete', { token: erased.token, body: {} })).status).toBe(200);
      const after = await idsInStream();
      expect(after).not.toContain(erasedJob);
      expect(after).toContain(keptJob);
    } finally {
      redis.disconnect();
    }
  });
});

describe('queue metrics while Redis is unreachable', () => {
  let app: TestApp;
  beforeAll(async () => {
    // A port nothing listens on: every Redis command fails at once.
    app = await startTestApp({ EMBEDDING_DIMENSIONS: '256', REDIS_URL: 'redis://127.0.0.1:1/0', QUEUE_PREFIX: prefixFor('down') }, { isolated: true });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('reports the outbox backlog from the database, counts the failed enqueue, and leaves the Redis depth out rather than 0', async () => {
    const { token } = await subject('down');
    await postExtract(app, token, said('I keep a diary.'));
    await postExtract(app, token, said('I swim every morning.'));
    const samples = await scrape(app);
    expect(samples.filter((s) => s.name === 'engram_queue_depth')).toEqual([]);
    const outbox = Object.fromEntries(samples.filter((s) => s.name === 'engram_queue_jobs' && s.labels.kind === 'extraction').map((s) => [s.labels.state, s.value]));
    expect(outbox).toEqual({ queued: 2, running: 0, failed: 0 });
    const failures = samples.find((s) => s.name === 'engram_queue_enqueue_failures_total' && s.labels.kind === 'extraction');
    expect(failures?.value).toBe(2);
  });
});

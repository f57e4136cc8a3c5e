import { randomUUID } from 'node:crypto';
import type { JobDto } from '../../src/extraction/schemas.js';
import type { TestApp } from './harness.js';
import { TEST_REDIS_URL } from './env.js';
import type { ScriptedLlm } from './scripted-llm.js';

/** The job answer as the service types it: one definition, so the tests cannot drift from it. */
export type JobBody = JobDto;
export type JobStatus = JobDto['status'];

/**
 * Polls GET /jobs/{id} every 25 ms until the job's status is one of `statuses`; fails with the
 * last answer seen when that takes longer than `timeoutMs`.
 */
export async function waitForJob(
  app: TestApp,
  token: string,
  jobId: string,
  statuses: JobStatus | JobStatus[] = ['succeeded', 'failed'],
  timeoutMs = 10_000,
): Promise<JobBody> {
  const wanted = Array.isArray(statuses) ? statuses : [statuses];
  const deadline = Date.now() + timeoutMs;
  let last: { status: number; body: unknown } | undefined;
  for (;;) {
    const res = await app.call<JobBody>('GET', `/jobs/${jobId}`, { token });
    last = { status: res.status, body: res.body };
    if (res.status === 200 && wanted.includes(res.body.status)) return res.body;
    if (Date.now() > deadline) {
      throw new Error(
        `job ${jobId} did not reach ${wanted.join(' | ')} within ${timeoutMs} ms; last answer: HTTP ${last.status} ${JSON.stringify(last.body)}`,
      );
    }
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a truthy value, or fails with `what` after `timeoutMs`. */
export async function waitUntil<T>(what: string, check: () => T | Promise<T>, timeoutMs = 5_000, everyMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A BullMQ key prefix no other file or run uses, so files can share Redis db 15. */
export function uniqueQueuePrefix(label: string): string {
  return `engram-test-${label}-${randomUUID().slice(0, 8)}`;
}

/** The settings that point an app at a scripted LLM and Redis, with short job timings for tests. */
export function llmAppEnv(llm: ScriptedLlm, queuePrefix: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'test',
    EMBEDDING_DIMENSIONS: '256',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    JOB_BACKOFF_MS: '50',
    JOB_MAX_ATTEMPTS: '3',
    // Generous: a loaded machine must not turn a scripted instant answer into a timeout.
    LLM_TIMEOUT_MS: '5000',
    JOB_LEASE_MS: '2000',
    QUEUE_SWEEP_INTERVAL_MS: '200',
    QUEUE_STALE_AFTER_MS: '300',
    ...overrides,
  };
}

/** POST /memories/extract, expecting 202; returns the job id. */
export async function postExtract(
  app: TestApp,
  token: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<string> {
  const res = await app.call('POST', '/memories/extract', { token, body, headers });
  if (res.status !== 202) throw new Error(`POST /memories/extract answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.job_id as string;
}

/** A one-message transcript from the user. */
export function said(text: string): { messages: Array<{ role: 'user'; content: string }> } {
  return { messages: [{ role: 'user', content: text }] };
}

/** A scripted extraction answer with these facts (importance 5, no category or date unless given). */
export function factsReply(
  facts: Array<{ content: string; importance?: number; category?: string | null; occurred_at?: string | null }>,
): { json: unknown } {
  return {
    json: {
      facts: facts.map((f) => ({
        content: f.content,
        importance: f.importance ?? 5,
        category: f.category ?? null,
        occurred_at: f.occurred_at ?? null,
        source_message_indexes: [0],
      })),
    },
  };
}

/** A scripted resolution answer. */
export function decisionsReply(
  decisions: Array<{ fact_index: number; operation: 'ADD' | 'UPDATE' | 'DELETE' | 'NOOP'; target?: string | null; content?: string | null }>,
): { json: unknown } {
  return {
    json: { decisions: decisions.map((d) => ({ fact_index: d.fact_index, operation: d.operation, target: d.target ?? null, content: d.content ?? null })) },
  };
}

/** Deletes every Redis key under a queue prefix (never the whole db: other files share it). */
export async function deleteQueueKeys(prefix: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    return keys.length;
  } finally {
    redis.disconnect();
  }
}

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, factsReply, llmAppEnv, postExtract, said, uniqueQueuePrefix, waitForJob } from '../support/jobs.js';
import { parseMetrics, type Sample } from '../support/metrics.js';
import { startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * GET /metrics (Prometheus text) after real traffic through the app and its worker, with the
 * real `openai` client talking to a scripted model server; and the job's own cost accounting
 * (`result.usage`), which must agree with what the metrics counted call by call.
 */

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const prefix = uniqueQueuePrefix('metrics');
// Distinctive ids, so a leak into a label value cannot hide.
const tenant = `metrics-tenant-${randomUUID().slice(0, 8)}`;
const user = `metrics-user-${randomUUID().slice(0, 8)}`;
let llm: ScriptedLlm;
let app: TestApp;
let token: string;

beforeAll(async () => {
  llm = await startScriptedLlm();
  app = await startTestApp(llmAppEnv(llm, prefix), { isolated: true });
  app.runtime.startWorker();
  token = await tokenFor({ tenant, user });
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
  await deleteQueueKeys(prefix);
});
beforeEach(() => llm.reset());

async function scrape(): Promise<Sample[]> {
  const res = await app.call('GET', '/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parseMetrics(res.body as string);
}

/** The sum of the samples named `name` whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

const CHAT_MODEL = 'gpt-4o-mini';
const EMBEDDING_MODEL = 'text-embedding-3-small';

describe('GET /metrics', () => {
  it('counts requests by route template, recall, jobs, queue depth and model calls, and labels nothing with a tenant, user or id', async () => {
    const added = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Metrics user keeps bees in the garden' }] } });
    expect(added.status).toBe(201);
    const memoryId = added.body.memories[0].id as string;
    expect((await app.call('GET', `/memories/${memoryId}`, { token })).status).toBe(200);
    expect((await app.call('GET', `/memories/${memoryId}/history`, { token })).status).toBe(200);
    expect((await app.call('GET', `/memories/${randomUUID()}`, { token })).status).toBe(404);
    expect((await app.call('GET', `/memories?user_id=${user}`, { token })).status).toBe(200);
    expect((await app.call('GET', `/no/such/${memoryId}`, { token, skipOpenApiCheck: true })).status).toBe(404);
    const recalled = await app.call('POST', '/memories/recall', { token, body: { query: 'what does the user keep in the garden?' } });
    expect(recalled.status).toBe(200);
    expect(recalled.body.memories.length).toBeGreaterThan(0);
    const jobId = await postExtract(app, token, said('I also grow tomatoes on the balcony.'));
    expect((await waitForJob(app, token, jobId)).status).toBe('succeeded');
    // The embedding endpoint fails once: recall answers 503, and the call is counted as such.
    llm.enqueueEmbeddings({ status: 503 });
    expect((await app.call('POST', '/memories/recall', { token, body: { query: 'bees' } })).status).toBe(503);

    const samples = await scrape();
    const http = (route: string, status: string, method = 'GET') =>
      total(samples, 'engram_http_requests_total', { method, route, status });
    expect(http('/memories/{id}', '200')).toBe(1);
    expect(http('/memories/{id}', '404')).toBe(1);
    expect(http('/memories/{id}/history', '200')).toBe(1);
    expect(http('/memories', '201', 'POST')).toBe(1);
    expect(http('/memories/recall', '200', 'POST')).toBe(1);
    expect(http('/memories/recall', '503', 'POST')).toBe(1);
    expect(http('/jobs/{job_id}', '200')).toBeGreaterThanOrEqual(1);
    expect(http('unmatched', '404')).toBe(1);
    expect(total(samples, 'engram_http_request_duration_seconds_count', { method: 'GET', route: '/memories/{id}', status: '200' })).toBe(1);

    expect(total(samples, 'engram_recall_duration_seconds_count')).toBe(1);
    expect(total(samples, 'engram_recall_candidates_count')).toBe(1);
    expect(total(samples, 'engram_recall_candidates_sum')).toBeGreaterThanOrEqual(1);

    expect(total(samples, 'engram_extraction_jobs_total', { outcome: 'succeeded' })).toBe(1);
    expect(total(samples, 'engram_extraction_job_duration_seconds_count', { outcome: 'succeeded' })).toBe(1);
    expect(total(samples, 'engram_extraction_queue_wait_seconds_count')).toBe(1);
    expect(samples.some((s) => s.name === 'engram_queue_depth' && s.value === 0)).toBe(true);

    expect(total(samples, 'engram_model_calls_total', { kind: 'chat', model: CHAT_MODEL, outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'engram_model_calls_total', { kind: 'embedding', model: EMBEDDING_MODEL, outcome: 'ok' })).toBeGreaterThanOrEqual(3);
    expect(total(samples, 'engram_model_calls_total', { kind: 'embedding', model: EMBEDDING_MODEL, outcome: 'unavailable' })).toBe(1);
    expect(total(samples, 'engram_model_call_duration_seconds_count', { kind: 'chat', model: CHAT_MODEL })).toBeGreaterThanOrEqual(1);
    expect(total(samples, 'engram_model_tokens_total', { kind: 'chat', model: CHAT_MODEL, type: 'prompt' })).toBeGreaterThan(0);
    expect(total(samples, 'engram_model_tokens_total', { kind: 'chat', model: CHAT_MODEL, type: 'completion' })).toBeGreaterThan(0);
    expect(total(samples, 'engram_model_tokens_total', { kind: 'embedding', model: EMBEDDING_MODEL, type: 'prompt' })).toBeGreaterThan(0);
    // Process metrics.
    expect(total(samples, 'engram_process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(samples.some((s) => s.name.startsWith('engram_nodejs_heap'))).toBe(true);

    // No tenant, user or raw id in any label value; routes are templates.
    const values = samples.flatMap((s) => Object.values(s.labels));
    const leaks = values.filter((v) => v.includes(tenant) || v.includes(user) || v.includes(memoryId) || v.includes(jobId) || UUID.test(v));
    expect(leaks).toEqual([]);
    const routes = new Set(samples.filter((s) => s.name === 'engram_http_requests_total').map((s) => s.labels.route!));
    for (const route of routes) expect(route, route).toMatch(/^(unmatched|\/[A-Za-z0-9_/.{}*-]*)$/);
    expect([...routes].filter((r) => r.includes('{'))).toEqual(expect.arrayContaining(['/memories/{id}', '/jobs/{job_id}']));
  });
});

describe("a job's usage (cost accounting)", () => {
  it('counts every call of every attempt, the correction retry included, and matches the per-model token metrics', async () => {
    const subjectUser = `usage-${randomUUID().slice(0, 8)}`;
    const userToken = await tokenFor({ tenant, user: subjectUser });
    // An existing memory, so the resolver has a candidate to show the model.
    expect((await app.call('POST', '/memories', { token: userToken, body: { memories: [{ content: 'User likes to cycle to work' }] } })).status).toBe(201);
    const start = await scrape();
    llm.reset();

    // Attempt 1: a malformed extraction answer, its correction, then the embedding call fails
    // (retryable). Attempt 2: extraction, embedding and resolution all succeed.
    llm.enqueueChat({ content: '{"facts": [', usage: { prompt_tokens: 101, completion_tokens: 3 } }, 'extraction');
    llm.enqueueChat({ ...factsReply([{ content: 'User cycles to work every day' }]), usage: { prompt_tokens: 150, completion_tokens: 20 } }, 'extraction');
    llm.enqueueEmbeddings({ status: 500 });
    llm.enqueueChat({ ...factsReply([{ content: 'User cycles to work every day' }]), usage: { prompt_tokens: 110, completion_tokens: 21 } }, 'extraction');
    const jobId = await postExtract(app, userToken, said('I cycle to work every day.'));
    const job = await waitForJob(app, userToken, jobId);
    expect(job.status).toBe('succeeded');
    expect(llm.pendingReplies()).toBe(0);
    const [row] = await app.ownerQuery<{ attempts: number }>('select attempts from extraction_jobs where tenant_id = $1 and id = $2', [tenant, jobId]);
    expect(row!.attempts).toBe(2);

    const chatCalls = llm.chatRequests().length;
    const embeddingCalls = llm.requests.filter((r) => r.path === '/v1/embeddings').length;
    expect(chatCalls).toBe(4); // 2 + 1 extraction, 1 resolution
    expect(embeddingCalls).toBe(2); // the failed one, then the successful one
    const usage = job.result!.usage;
    expect(usage.llm_calls).toBe(chatCalls);
    expect(usage.embedding_calls).toBe(embeddingCalls);

    const end = await scrape();
    const delta = (labels: Record<string, string>) => total(end, 'engram_model_tokens_total', labels) - total(start, 'engram_model_tokens_total', labels);
    const chatPrompt = delta({ kind: 'chat', model: CHAT_MODEL, type: 'prompt' });
    const chatCompletion = delta({ kind: 'chat', model: CHAT_MODEL, type: 'completion' });
    const embeddingPrompt = delta({ kind: 'embedding', model: EMBEDDING_MODEL, type: 'prompt' });
    // The scripted extraction answers' tokens, all three of them, are in both.
    expect(chatPrompt).toBeGreaterThan(101 + 150 + 110);
    expect(chatCompletion).toBeGreaterThan(3 + 20 + 21);
    expect(embeddingPrompt).toBeGreaterThan(0);
    expect(usage.prompt_tokens).toBe(chatPrompt + embeddingPrompt);
    expect(usage.completion_tokens).toBe(chatCompletion);
    const calls = (labels: Record<string, string>) => total(end, 'engram_model_calls_total', labels) - total(start, 'engram_model_calls_total', labels);
    expect(calls({ kind: 'chat', outcome: 'invalid_output' })).toBe(1);
    expect(calls({ kind: 'chat' })).toBe(chatCalls);
    expect(calls({ kind: 'embedding', outcome: 'unavailable' })).toBe(1);
    expect(total(end, 'engram_extraction_jobs_total', { outcome: 'retry' }) - total(start, 'engram_extraction_jobs_total', { outcome: 'retry' })).toBe(1);
  });

  it('shows no result while the job is not done, even though failed attempts already spent tokens', async () => {
    const subjectUser = `pending-${randomUUID().slice(0, 8)}`;
    const userToken = await tokenFor({ tenant, user: subjectUser });
    // Every embedding call fails: the job retries until it runs out of attempts.
    llm.onEmbeddings(() => ({ status: 500 }));
    const jobId = await postExtract(app, userToken, said('I keep a diary.'));
    const job = await waitForJob(app, userToken, jobId, 'failed');
    expect(job.result).toBeUndefined();
    expect(job.error?.code).toBe('embedding_unavailable');
    // The spend is still on the row, for the operator.
    const [row] = await app.ownerQuery<{ result: { usage: { llm_calls: number; embedding_calls: number } } }>(
      'select result from extraction_jobs where tenant_id = $1 and id = $2',
      [tenant, jobId],
    );
    expect(row!.result.usage.embedding_calls).toBe(3);
    expect(row!.result.usage.llm_calls).toBe(3);
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../support/env.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { decisionsReply, deleteQueueKeys, factsReply, llmAppEnv, postExtract, said, uniqueQueuePrefix, waitForJob, waitUntil } from '../support/jobs.js';
import { chatKind, chatUserData, startScriptedLlm, type ChatRequestBody, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * Jobs of one user racing each other: the resolver's decision must be taken against the memories
 * the apply step sees under the user's lock, not against a view another job has changed since.
 */

const tenant = uniqueTenant('races');
const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await deleteQueueKeys(prefix);
});

async function currentMemories(app: TestApp, user: string): Promise<string[]> {
  const rows = await app.owner`select content from memories where tenant_id = ${tenant} and user_id = ${user} and valid_to is null order by content`;
  return rows.map((r) => r.content as string);
}

// Two worker apps over one database and one Redis queue: PostgreSQL and Redis only.
describe.skipIf(TEST_BACKEND === 'pglite')('near-duplicate facts as concurrent jobs, two workers, offline resolver', () => {
  const USERS = 40;
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    const prefix = uniqueQueuePrefix('neardup');
    prefixes.push(prefix);
    const env = { EMBEDDING_DIMENSIONS: '256', REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, WORKER_CONCURRENCY: '4', JOB_BACKOFF_MS: '50' };
    first = await startTestApp(env, { isolated: true });
    second = await startTestApp({ ...env, DATABASE_URL: first.databaseUrl });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('leaves exactly one current memory per user (similarity over the NOOP threshold)', async () => {
    // "I live in Lisbon." and "I live in Lisbon now." embed at cosine ~0.99 (lexical, 256 dims):
    // different texts, so only the resolver's NOOP can keep the second out.
    const users = Array.from({ length: USERS }, (_, i) => `near-${i}-${randomUUID().slice(0, 6)}`);
    const jobs: Array<{ user: string; token: string; id: string }> = [];
    for (const user of users) {
      const token = await tokenFor({ tenant, user });
      // The pair of one user sits side by side in the queue, so the two workers take it together.
      for (const text of ['I live in Lisbon.', 'I live in Lisbon now.']) jobs.push({ user, token, id: await postExtract(first, token, said(text)) });
    }
    first.runtime.startWorker();
    second.runtime.startWorker();
    const finished = await Promise.all(jobs.map((j) => waitForJob(first, j.token, j.id, ['succeeded', 'failed'], 60_000)));
    expect(finished.filter((j) => j.status !== 'succeeded')).toEqual([]);

    const doubled: string[] = [];
    for (const user of users) {
      const current = await currentMemories(first, user);
      expect(current.length).toBeGreaterThan(0);
      if (current.length > 1) doubled.push(user);
    }
    expect(doubled).toEqual([]);
    // 80 jobs: a loaded two-core machine needs longer than the default test timeout.
  }, 120_000);
});

describe('an UPDATE and a DELETE decided against the same memory (scripted LLM resolver)', () => {
  let llm: ScriptedLlm;
  let app: TestApp;
  beforeAll(async () => {
    llm = await startScriptedLlm();
    const prefix = uniqueQueuePrefix('stale');
    prefixes.push(prefix);
    app = await startTestApp(llmAppEnv(llm, prefix, { WORKER_CONCURRENCY: '2', LLM_TIMEOUT_MS: '30000' }), { isolated: true });
    app.runtime.startWorker();
  });
  afterAll(async () => {
    await app?.close();
    await llm?.close();
  });
  beforeEach(() => llm.reset());

  function transcript(body: ChatRequestBody): string {
    return JSON.stringify(chatUserData(body));
  }

  it('the job that applies second decides again against what the first one wrote', async () => {
    const user = `stale-${randomUUID().slice(0, 8)}`;
    const token = await tokenFor({ tenant, user });
    const added = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'User lives in Lisbon' }] } });
    expect(added.status).toBe(201);

    let releaseDelete!: () => void;
    const updateApplied = new Promise<void>((resolve) => (releaseDelete = resolve));
    const deleteDecisions: string[][] = [];
    llm.onChat(async (body) => {
      const text = transcript(body);
      if (chatKind(body) === 'extraction') {
        return factsReply([{ content: text.includes('Porto') ? 'User lives in Porto' : 'User no longer lives in Lisbon' }]);
      }
      const data = chatUserData(body) as { facts: Array<{ fact: string; existing_memories: Array<{ id: string; content: string }> }> };
      const [entry] = data.facts;
      const target = entry!.existing_memories.find((m) => m.content.startsWith('User lives in'));
      if (entry!.fact === 'User lives in Porto') {
        return target ? decisionsReply([{ fact_index: 0, operation: 'UPDATE', target: target.id, content: 'User lives in Porto' }]) : decisionsReply([{ fact_index: 0, operation: 'ADD' }]);
      }
      // The DELETE's first decision is held until the UPDATE has been applied: it was taken
      // against "Lisbon", which is no longer current when it reaches the lock.
      deleteDecisions.push(entry!.existing_memories.map((m) => m.content));
      if (deleteDecisions.length === 1) await updateApplied;
      return target ? decisionsReply([{ fact_index: 0, operation: 'DELETE', target: target.id }]) : decisionsReply([{ fact_index: 0, operation: 'NOOP' }]);
    });

    const deleteJob = await postExtract(app, token, said('I do not live in Lisbon any more.'));
    await waitUntil('the DELETE decision to be asked for', () => deleteDecisions.length === 1, 20_000);
    const updateJob = await postExtract(app, token, said('I moved to Porto.'));
    const update = await waitForJob(app, token, updateJob, ['succeeded', 'failed'], 20_000);
    expect(update).toMatchObject({ status: 'succeeded', result: { updated: 1 } });
    releaseDelete();
    const deletion = await waitForJob(app, token, deleteJob, ['succeeded', 'failed'], 20_000);
    expect(deletion.status).toBe('succeeded');

    // Decided again against "Porto": the user lives nowhere we know of now.
    expect(deleteDecisions).toEqual([['User lives in Lisbon'], ['User lives in Porto']]);
    expect(deletion.result).toMatchObject({ deleted: 1, unchanged: 0 });
    expect(await currentMemories(app, user)).toEqual([]);
  });
});

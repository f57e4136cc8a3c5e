import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import {
  decisionsReply,
  deleteQueueKeys,
  factsReply,
  llmAppEnv,
  postExtract,
  said,
  sleep,
  uniqueQueuePrefix,
  waitForJob,
} from '../support/jobs.js';
import { chatUserData, startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * The extraction pipeline end to end: the real app and its worker (BullMQ on real PostgreSQL and
 * Redis; on the PGlite backend the in-process database queue), the real `openai` client talking
 * HTTP to a scripted OpenAI-compatible server. Each test scripts the model's answers and checks
 * what the memory store holds afterwards.
 */

let llm: ScriptedLlm;
let app: TestApp;
let owner: TestApp['owner'];
const prefix = uniqueQueuePrefix('extract');
const tenant = uniqueTenant('extract');

beforeAll(async () => {
  llm = await startScriptedLlm();
  app = await startTestApp(llmAppEnv(llm, prefix), { isolated: true });
  app.runtime.startWorker();
  owner = app.owner;
});

afterAll(async () => {
  await app?.close();
  await llm?.close();
  await deleteQueueKeys(prefix);
});

beforeEach(() => {
  llm.reset();
});

interface MemoryBody {
  id: string;
  content: string;
  importance: number;
  category: string | null;
  occurred_at: string;
  valid_to: string | null;
}

async function subject(label: string) {
  const user = `${label}-${randomUUID().slice(0, 8)}`;
  return { user, token: await tokenFor({ tenant, user }) };
}

async function listMemories(token: string, includeSuperseded = false): Promise<MemoryBody[]> {
  const res = await app.call('GET', `/memories?limit=100${includeSuperseded ? '&include_superseded=true' : ''}`, { token });
  expect(res.status).toBe(200);
  return res.body.memories;
}

async function history(token: string, id: string) {
  const res = await app.call('GET', `/memories/${id}/history`, { token });
  expect(res.status).toBe(200);
  return res.body.events as Array<{ event: string; old_content: string | null; new_content: string | null; job_id: string | null; actor: string }>;
}

async function addDirectly(token: string, contents: string[]): Promise<string[]> {
  const res = await app.call('POST', '/memories', { token, body: { memories: contents.map((content) => ({ content })) } });
  expect(res.status).toBe(201);
  return res.body.memories.map((m: { id: string }) => m.id);
}

async function rowCount(user: string): Promise<number> {
  const [row] = await owner`select count(*)::int as n from memories where tenant_id = ${tenant} and user_id = ${user}`;
  return row!.n as number;
}

const OPENAI_PROVIDERS = { extractor: 'openai:gpt-4o-mini', resolver: 'openai:gpt-4o-mini', embedder: 'openai:text-embedding-3-small' };

describe('extraction with an OpenAI-compatible model', () => {
  it('adds new facts with their importance and category, and reports counts, ids, usage and providers', async () => {
    const { user, token } = await subject('new');
    llm.enqueueChat(
      factsReply([
        { content: 'User is allergic to peanuts', importance: 9, category: 'health' },
        { content: 'User enjoys hiking on weekends', importance: 4, category: 'preference' },
      ]),
      'extraction',
    );
    const transcript = [
      { role: 'user', content: "I'm allergic to peanuts. I like hiking on weekends." },
      { role: 'assistant', content: 'Noted, no peanuts for you!' },
    ];
    const accepted = await app.call('POST', '/memories/extract', { token, body: { messages: transcript } });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'queued', status_url: `/jobs/${accepted.body.job_id}` });
    const jobId = accepted.body.job_id as string;

    const job = await waitForJob(app, token, jobId, 'succeeded');
    expect(job.result).toMatchObject({ added: 2, updated: 0, deleted: 0, unchanged: 0, providers: OPENAI_PROVIDERS });
    // No memories yet, so nothing to resolve against: one extraction call, one batched embedding call.
    expect(job.result!.usage).toMatchObject({ llm_calls: 1, embedding_calls: 1 });
    expect(job.result!.usage.prompt_tokens).toBeGreaterThan(0);
    expect(job.result!.usage.completion_tokens).toBeGreaterThan(0);
    expect(job.finished_at).toBeDefined();
    expect(job.result).not.toHaveProperty('dropped_operations');

    const memories = await listMemories(token);
    expect(memories.map((m) => [m.content, m.importance, m.category]).sort()).toEqual([
      ['User enjoys hiking on weekends', 4, 'preference'],
      ['User is allergic to peanuts', 9, 'health'],
    ]);
    expect(new Set(job.result!.memory_ids)).toEqual(new Set(memories.map((m) => m.id)));
    // No date in the facts: they occurred when the job was accepted.
    for (const m of memories) expect(m.occurred_at).toBe(job.created_at);

    // What went over the wire: structured output, the transcript as data, one batched embedding.
    const [extraction] = llm.chatRequests('extraction');
    expect(llm.chatRequests()).toHaveLength(1);
    expect(extraction!.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
    expect((chatUserData(extraction!) as { messages: Array<{ content: string }> }).messages.map((m) => m.content)).toEqual(
      transcript.map((m) => m.content),
    );
    const embeddings = llm.requests.filter((r) => r.path === '/v1/embeddings');
    expect(embeddings).toHaveLength(1);
    expect(embeddings[0]!.body).toMatchObject({ input: ['User is allergic to peanuts', 'User enjoys hiking on weekends'], dimensions: 256 });

    // Applied once, and the transcript is purged after success by default.
    const [row] = await owner`select status, attempts, payload from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1, payload: null });
    expect(await rowCount(user)).toBe(2);
  });

  it('"I moved to Berlin" supersedes "I live in Paris": history, recall, and recall as_of before the move', async () => {
    const { token } = await subject('move');
    llm.enqueueChat(factsReply([{ content: 'User lives in Paris', importance: 7, category: 'location' }]), 'extraction');
    const job1 = await waitForJob(app, token, await postExtract(app, token, said('I live in Paris.')), 'succeeded');
    expect(job1.result).toMatchObject({ added: 1 });
    const parisId = job1.result!.memory_ids[0]!;

    await sleep(30);
    const beforeMove = new Date().toISOString();
    await sleep(30);

    llm.enqueueChat(factsReply([{ content: 'User lives in Berlin', importance: 7, category: 'location' }]), 'extraction');
    llm.enqueueChat(decisionsReply([{ fact_index: 0, operation: 'UPDATE', target: '0', content: 'User lives in Berlin, having moved from Paris' }]), 'resolution');
    const job2Id = await postExtract(app, token, said('I moved to Berlin.'));
    const job2 = await waitForJob(app, token, job2Id, 'succeeded');
    expect(job2.result).toMatchObject({ added: 0, updated: 1, deleted: 0, unchanged: 0 });
    expect(job2.result!.usage.llm_calls).toBe(2);
    const berlinId = job2.result!.memory_ids[0]!;
    expect(berlinId).not.toBe(parisId);
    expect(llm.pendingReplies()).toBe(0);

    // The resolver saw Paris as "0", never its uuid.
    const [resolution] = llm.chatRequests('resolution');
    expect(chatUserData(resolution!)).toMatchObject({
      facts: [{ fact_index: 0, fact: 'User lives in Berlin', existing_memories: [{ id: '0', content: 'User lives in Paris' }] }],
    });
    expect(JSON.stringify(resolution)).not.toContain(parisId);

    const current = await listMemories(token);
    expect(current.map((m) => [m.id, m.content, m.valid_to])).toEqual([[berlinId, 'User lives in Berlin, having moved from Paris', null]]);
    const all = await listMemories(token, true);
    expect(all.map((m) => m.id).sort()).toEqual([berlinId, parisId].sort());
    const paris = all.find((m) => m.id === parisId)!;
    expect(paris.valid_to).not.toBeNull();
    expect(Date.parse(paris.valid_to!)).toBeGreaterThan(Date.parse(beforeMove));
    const [link] = await owner`select superseded_by from memories where tenant_id = ${tenant} and id = ${parisId}`;
    expect(link!.superseded_by).toBe(berlinId);

    expect(await history(token, parisId)).toMatchObject([
      { event: 'ADD', old_content: null, new_content: 'User lives in Paris', job_id: job1.job_id, actor: `job:${job1.job_id}` },
      { event: 'SUPERSEDE', old_content: 'User lives in Paris', new_content: 'User lives in Berlin, having moved from Paris', job_id: job2Id },
    ]);
    expect(await history(token, berlinId)).toMatchObject([
      { event: 'UPDATE', old_content: 'User lives in Paris', new_content: 'User lives in Berlin, having moved from Paris', job_id: job2Id },
    ]);

    const recall = await app.call('POST', '/memories/recall', { token, body: { query: 'Where does the user live?' } });
    expect(recall.status).toBe(200);
    const recalled = recall.body.memories.map((m: MemoryBody) => m.id);
    expect(recalled).toContain(berlinId);
    expect(recalled).not.toContain(parisId);

    const past = await app.call('POST', '/memories/recall', { token, body: { query: 'Where does the user live?', as_of: beforeMove } });
    expect(past.status).toBe(200);
    const pastIds = past.body.memories.map((m: MemoryBody) => m.id);
    expect(pastIds).toContain(parisId);
    expect(pastIds).not.toContain(berlinId);
  });

  it('a superseded fact stops being valid when the newer fact began, not when the job ran', async () => {
    const { token } = await subject('bitemporal');
    llm.enqueueChat(factsReply([{ content: 'User lives in Lyon', occurred_at: '2024-01-01T00:00:00Z' }]), 'extraction');
    const job1 = await waitForJob(app, token, await postExtract(app, token, said('I live in Lyon.')), 'succeeded');
    const lyonId = job1.result!.memory_ids[0]!;
    llm.enqueueChat(factsReply([{ content: 'User lives in Nantes', occurred_at: '2025-06-01T00:00:00Z' }]), 'extraction');
    llm.enqueueChat(decisionsReply([{ fact_index: 0, operation: 'UPDATE', target: '0', content: 'User lives in Nantes' }]), 'resolution');
    await waitForJob(app, token, await postExtract(app, token, said('I moved to Nantes in June 2025.')), 'succeeded');

    const lyon = await app.call('GET', `/memories/${lyonId}`, { token });
    expect(lyon.body.valid_to).toBe('2025-06-01T00:00:00.000Z');
    const recallAt = async (asOf: string) =>
      (await app.call('POST', '/memories/recall', { token, body: { query: 'where does the user live', as_of: asOf } })).body.memories.map(
        (m: { content: string }) => m.content,
      );
    expect(await recallAt('2025-07-01T00:00:00Z')).toEqual(['User lives in Nantes']);
    expect(await recallAt('2025-05-01T00:00:00Z')).toEqual(['User lives in Lyon']);
  });

  it('"I no longer have a dog" supersedes the dog without a replacement (DELETE)', async () => {
    const { user, token } = await subject('dog');
    const [dogId, catId] = (await addDirectly(token, ['User has a dog named Rex', 'User has a cat named Tom'])) as [string, string];
    llm.enqueueChat(factsReply([{ content: 'User no longer has a dog', importance: 6, category: 'relationship' }]), 'extraction');
    // Candidates are shown best first: find which small id the dog got.
    llm.onChat((body) => {
      const data = chatUserData(body) as { facts: Array<{ existing_memories: Array<{ id: string; content: string }> }> };
      const dog = data.facts[0]!.existing_memories.find((m) => m.content.includes('dog'))!;
      return decisionsReply([{ fact_index: 0, operation: 'DELETE', target: dog.id }]);
    });
    const jobId = await postExtract(app, token, said('I no longer have a dog.'));
    const job = await waitForJob(app, token, jobId, 'succeeded');
    expect(job.result).toMatchObject({ added: 0, updated: 0, deleted: 1, unchanged: 0 });
    expect(job.result!.memory_ids).toEqual([dogId]);

    expect((await listMemories(token)).map((m) => m.id)).toEqual([catId]);
    const dog = (await listMemories(token, true)).find((m) => m.id === dogId)!;
    expect(dog.valid_to).not.toBeNull();
    // Nothing new was stored: still the two rows, the dog's kept as history.
    expect(await rowCount(user)).toBe(2);
    const [link] = await owner`select superseded_by from memories where tenant_id = ${tenant} and id = ${dogId}`;
    expect(link!.superseded_by).toBeNull();
    expect(await history(token, dogId)).toMatchObject([
      { event: 'ADD', new_content: 'User has a dog named Rex', job_id: null },
      { event: 'DELETE', old_content: 'User has a dog named Rex', new_content: null, job_id: jobId },
    ]);
  });

  it('the same fact again is a NOOP: the resolver says NOOP, or says ADD for the same normalised text', async () => {
    const { user, token } = await subject('noop');
    const [teaId] = await addDirectly(token, ['User likes green tea']);

    llm.enqueueChat(factsReply([{ content: 'User likes green tea' }]), 'extraction');
    llm.enqueueChat(decisionsReply([{ fact_index: 0, operation: 'NOOP', target: '0' }]), 'resolution');
    const noop = await waitForJob(app, token, await postExtract(app, token, said('I like green tea.')), 'succeeded');
    expect(noop.result).toMatchObject({ added: 0, updated: 0, deleted: 0, unchanged: 1, memory_ids: [] });

    llm.enqueueChat(factsReply([{ content: 'user likes GREEN tea.' }]), 'extraction');
    llm.enqueueChat(decisionsReply([{ fact_index: 0, operation: 'ADD' }]), 'resolution');
    const add = await waitForJob(app, token, await postExtract(app, token, said('I like green tea!')), 'succeeded');
    expect(add.result).toMatchObject({ added: 0, unchanged: 1, memory_ids: [] });

    expect(llm.pendingReplies()).toBe(0);
    expect(await rowCount(user)).toBe(1);
    expect((await history(token, teaId!)).map((e) => e.event)).toEqual(['ADD']);
  });

  it('a wrong ADD of a fact the resolver was not shown is still stopped by the unique content hash', async () => {
    const { user, token } = await subject('hash');
    // Embeddings scripted so the stored "green tea" memory is NOT among the new fact's top 5
    // candidates: the resolver cannot see the duplicate, only the database can refuse it.
    const axis = (i: number) => Array.from({ length: 256 }, (_, j) => (j === i ? 1 : 0));
    let teaAxis = 0;
    llm.onEmbeddings((inputs) => inputs.map((text) => (/green tea/i.test(text) ? axis(teaAxis) : axis(1))));
    const [teaId] = await addDirectly(token, ['User drinks green tea']);
    await addDirectly(token, ['User owns a bicycle', 'User speaks Italian', 'User works as a nurse', 'User has two sisters', 'User plays chess']);
    teaAxis = 1;

    llm.enqueueChat(factsReply([{ content: 'User drinks green tea' }]), 'extraction');
    llm.enqueueChat(decisionsReply([{ fact_index: 0, operation: 'ADD' }]), 'resolution');
    const job = await waitForJob(app, token, await postExtract(app, token, said('I drink green tea.')), 'succeeded');
    const shown = (chatUserData(llm.chatRequests('resolution')[0]!) as { facts: Array<{ existing_memories: Array<{ content: string }> }> }).facts[0]!
      .existing_memories;
    expect(shown).toHaveLength(5);
    expect(shown.map((m) => m.content)).not.toContain('User drinks green tea');

    expect(job.result).toMatchObject({ added: 0, unchanged: 1, memory_ids: [] });
    const [tea] = await owner`select count(*)::int as n from memories where tenant_id = ${tenant} and user_id = ${user} and content = 'User drinks green tea'`;
    expect(tea!.n).toBe(1);
    expect(await rowCount(user)).toBe(6);
    expect((await history(token, teaId!)).map((e) => e.event)).toEqual(['ADD']);
  });

  it('an operation naming an id the resolver was not shown ("7") is dropped; the others apply', async () => {
    const { token } = await subject('invent');
    const [catId] = await addDirectly(token, ['User has a cat named Tom']);
    llm.enqueueChat(
      factsReply([{ content: "User's cat Tom is three years old" }, { content: 'User plays the piano', importance: 5, category: 'preference' }]),
      'extraction',
    );
    llm.enqueueChat(
      decisionsReply([
        { fact_index: 0, operation: 'UPDATE', target: '7', content: 'User has a cat named Tom, who is three years old' },
        { fact_index: 1, operation: 'ADD' },
      ]),
      'resolution',
    );
    const job = await waitForJob(app, token, await postExtract(app, token, said('Tom is three now. I play the piano.')), 'succeeded');
    expect(job.result).toMatchObject({ added: 1, updated: 0, deleted: 0, dropped_operations: 1 });

    const memories = await listMemories(token, true);
    expect(memories.map((m) => [m.content, m.valid_to]).sort()).toEqual([
      ['User has a cat named Tom', null],
      ['User plays the piano', null],
    ]);
    expect(job.result!.memory_ids).toEqual([memories.find((m) => m.content === 'User plays the piano')!.id]);
    expect((await history(token, catId!)).map((e) => e.event)).toEqual(['ADD']);
  });

  it('infer: false stores each user message as written, no assistant message, and calls no model', async () => {
    const { user, token } = await subject('verbatim');
    const jobId = await postExtract(app, token, {
      infer: false,
      messages: [
        { role: 'user', content: 'I prefer window seats.' },
        { role: 'assistant', content: 'Noted: you prefer aisle seats.' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: '  My passport expires in 2030.  ' },
      ],
    });
    const job = await waitForJob(app, token, jobId, 'succeeded');
    expect(job.result).toMatchObject({ added: 2, updated: 0, deleted: 0, unchanged: 0 });
    expect(job.result!.usage).toMatchObject({ llm_calls: 0, embedding_calls: 1 });
    expect(job.result!.providers).toMatchObject({ extractor: 'none (infer: false)', resolver: 'none' });
    expect(llm.chatRequests()).toHaveLength(0);

    const memories = await listMemories(token);
    expect(memories.map((m) => [m.content, m.importance]).sort()).toEqual([
      ['I prefer window seats.', 5],
      ['My passport expires in 2030.', 5],
    ]);
    expect(new Set(job.result!.memory_ids)).toEqual(new Set(memories.map((m) => m.id)));
    expect(await rowCount(user)).toBe(2);
  });
});

describe('job access and idempotency', () => {
  it('the same key and body give the same job with its current status; another body is a 409', async () => {
    const { user, token } = await subject('idem');
    const key = `idem-${randomUUID()}`;
    const body = { messages: [{ role: 'user', content: 'I am learning Japanese.' }], metadata: { source: 'chat', lang: 'en' } };
    const first = await app.call('POST', '/memories/extract', { token, body, headers: { 'Idempotency-Key': key } });
    expect(first.status).toBe(202);
    expect(first.body.status).toBe('queued');
    await waitForJob(app, token, first.body.job_id, 'succeeded');

    // Key order does not make it another body.
    const reordered = { metadata: { lang: 'en', source: 'chat' }, messages: body.messages };
    const replay = await app.call('POST', '/memories/extract', { token, body: reordered, headers: { 'Idempotency-Key': key } });
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ job_id: first.body.job_id, status: 'succeeded', status_url: `/jobs/${first.body.job_id}` });

    const conflict = await app.call('POST', '/memories/extract', {
      token,
      body: { messages: [{ role: 'user', content: 'I am learning Korean.' }] },
      headers: { 'Idempotency-Key': key },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(conflict.body).toMatchObject({ status: 409, code: 'idempotency_conflict' });

    // One job row for the key, and it ran once (one extraction call).
    const rows = await owner`select id from extraction_jobs where tenant_id = ${tenant} and idempotency_key = ${key}`;
    expect(rows.map((r) => r.id)).toEqual([first.body.job_id]);
    expect(llm.chatRequests('extraction')).toHaveLength(1);
    expect(await rowCount(user)).toBe(1);

    // The key is the tenant's: another tenant using it gets a job of its own.
    const other = await tokenFor({ tenant: uniqueTenant('extract-other'), user });
    const elsewhere = await app.call('POST', '/memories/extract', { token: other, body, headers: { 'Idempotency-Key': key } });
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.body.job_id).not.toBe(first.body.job_id);
    await waitForJob(app, other, elsewhere.body.job_id, 'succeeded');
  });

  it("another tenant's job and another user's job (without act_as) are 404; no write scope is 403", async () => {
    const { user, token } = await subject('access');
    const jobId = await postExtract(app, token, said('I collect vinyl records.'));
    await waitForJob(app, token, jobId, 'succeeded');

    const otherTenant = await tokenFor({ tenant: uniqueTenant('extract-other'), user });
    const fromOtherTenant = await app.call('GET', `/jobs/${jobId}`, { token: otherTenant });
    expect(fromOtherTenant.status).toBe(404);
    expect(fromOtherTenant.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    const otherUser = await tokenFor({ tenant, user: `someone-else-${randomUUID().slice(0, 8)}` });
    expect((await app.call('GET', `/jobs/${jobId}`, { token: otherUser })).status).toBe(404);
    const agent = await tokenFor({ tenant, user: 'agent', scope: 'memories:read memories:act_as' });
    expect((await app.call('GET', `/jobs/${jobId}`, { token: agent })).status).toBe(200);

    const readOnly = await tokenFor({ tenant, user, scope: 'memories:read' });
    const refused = await app.call('POST', '/memories/extract', { token: readOnly, body: said('I collect stamps.') });
    expect(refused.status).toBe(403);
    const otherUserId = await app.call('POST', '/memories/extract', { token, body: { user_id: 'not-me', ...said('I collect coins.') } });
    expect(otherUserId.status).toBe(403);
    const [jobs] = await owner`select count(*)::int as n from extraction_jobs where tenant_id = ${tenant} and user_id in (${user}, 'not-me')`;
    expect(jobs!.n).toBe(1);
  });
});

import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET, TEST_REDIS_URL } from '../support/env.js';
import { startTestApp, tokenFor, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, uniqueQueuePrefix, waitUntil } from '../support/jobs.js';
import { freePort, runEntry, stop, waitForStatus, type ServiceProcess } from '../support/process.js';
import { chatKind, chatUserData, defaultChatHandler, startScriptedLlm, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * SIGTERM to a real `src/main.ts` (API + inline BullMQ worker) while a request and a job are in
 * flight, each held by the scripted model's slow answer: the process stops accepting at once,
 * answers the request, finishes the job, closes its pools and exits 0 within 10 s.
 */

const HOLD_MS = 1500;
const REQUEST_MARKER = `held-request-${randomUUID().slice(0, 8)}`;
const JOB_MARKER = `held-job-${randomUUID().slice(0, 8)}`;
const prefix = uniqueQueuePrefix('shutdown');
const tenant = `shutdown-${randomUUID().slice(0, 8)}`;
let llm: ScriptedLlm;
let db: TestApp;
let proc: ServiceProcess | undefined;

beforeAll(async () => {
  llm = await startScriptedLlm();
  llm.onEmbeddings((inputs) => {
    const vectors = inputs.map(() => Array.from({ length: 256 }, (_, i) => (i === 0 ? 1 : 0)));
    return inputs.some((text) => text.includes(REQUEST_MARKER)) ? { delayMs: HOLD_MS, then: { json: vectors } } : vectors;
  });
  llm.onChat(async (body) => {
    const reply = await defaultChatHandler(body);
    const transcript = chatKind(body) === 'extraction' ? JSON.stringify(chatUserData(body)) : '';
    return transcript.includes(JOB_MARKER) ? { delayMs: HOLD_MS, then: reply } : reply;
  });
  // A database of its own (the process's worker sweeps every tenant's jobs), and the owner's view of it.
  db = await startTestApp({}, { isolated: true });
});

afterAll(async () => {
  if (proc) await stop(proc, 'SIGKILL');
  await db?.close();
  await llm?.close();
  await deleteQueueKeys(prefix);
});

/** Resolves once a fresh TCP connection to the port is refused (the listener is closed). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

describe('SIGTERM', () => {
  it('finishes the request and the job in hand, refuses new connections, and exits 0 within 10 s', async () => {
    const port = await freePort();
    proc = runEntry('src/main.ts', {
      PORT: String(port),
      DATABASE_URL: db.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      AUTH_JWT_SECRET: TEST_JWT_SECRET,
      WORKER: 'inline',
      MIGRATE_ON_START: 'false',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'test',
      EMBEDDING_DIMENSIONS: '256',
      LLM_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'info',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitForStatus(`${base}/healthz`, 200, proc, 30_000);
    const token = await tokenFor({ tenant, user: 'ann' });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

    // A job in hand: its extraction call is answered only after HOLD_MS.
    const accepted = await fetch(`${base}/memories/extract`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ messages: [{ role: 'user', content: `I play the ${JOB_MARKER} on Sundays.` }] }),
    });
    expect(accepted.status).toBe(202);
    const { job_id: jobId } = (await accepted.json()) as { job_id: string };
    await waitUntil('the job to be in hand', () => llm.chatRequests('extraction').some((b) => JSON.stringify(b).includes(JOB_MARKER)), 10_000);

    // A request in flight: POST /memories waits on its (held) embedding call.
    const inFlight = fetch(`${base}/memories`, { method: 'POST', headers, body: JSON.stringify({ memories: [{ content: `Ann keeps ${REQUEST_MARKER}` }] }) });
    await waitUntil('the request to be in flight', () => llm.requests.some((r) => r.path === '/v1/embeddings' && JSON.stringify(r.body).includes(REQUEST_MARKER)), 10_000);

    const signalledAt = Date.now();
    proc.child.kill('SIGTERM');
    const exited = proc.exited.then((code) => ({ code, ms: Date.now() - signalledAt }));

    // Stops accepting at once, while the work in hand is still running.
    await waitUntil('the listener to close', () => refused(port), 1_000, 20);
    expect(Date.now() - signalledAt).toBeLessThan(HOLD_MS);

    const response = await inFlight;
    expect(response.status).toBe(201);
    const created = (await response.json()) as { memories: Array<{ id: string; content: string }> };
    expect(created.memories[0]!.content).toBe(`Ann keeps ${REQUEST_MARKER}`);

    const { code, ms } = await exited;
    expect(code, proc.output()).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(HOLD_MS - 200);
    expect(ms).toBeLessThan(10_000);
    // Promptly once the work is done: idle keep-alive connections (this test's own client holds
    // some) are closed, not waited out (Node's keep-alive timeout is 5 s).
    expect(ms).toBeLessThan(HOLD_MS + 3_000);
    expect(proc.output()).toMatch(/"msg":"shutting down"/);
    expect(proc.output()).toMatch(/"msg":"stopped"/);

    // Nothing was lost: the request's row and the job's result are in the database.
    const rows = await db.ownerQuery<{ id: string }>('select id from memories where tenant_id = $1 and id = $2', [tenant, created.memories[0]!.id]);
    expect(rows).toHaveLength(1);
    const [job] = await db.ownerQuery<{ status: string; attempts: number }>('select status, attempts from extraction_jobs where tenant_id = $1 and id = $2', [tenant, jobId]);
    expect(job).toEqual({ status: 'succeeded', attempts: 1 });
    const fromJob = await db.ownerQuery<{ content: string }>('select content from memories where tenant_id = $1 and source_job_id = $2', [tenant, jobId]);
    expect(fromJob.map((m) => m.content).join(' ')).toContain(JOB_MARKER);
  });
});

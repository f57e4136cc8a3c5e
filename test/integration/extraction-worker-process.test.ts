import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET, TEST_REDIS_URL } from '../support/env.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, llmAppEnv, postExtract, said, sleep, uniqueQueuePrefix, waitForJob, waitUntil } from '../support/jobs.js';
import { chatKind, chatUserData, defaultChatHandler, startScriptedLlm, type ChatRequestBody, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * The worker as a separate process (`workers/extraction.ts`, as `npm run worker` runs it):
 * SIGTERM lets the job in hand finish before the process exits; SIGKILL mid-job leaves a job that
 * another worker completes exactly once.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const tenant = uniqueTenant('worker-proc');
const prefix = uniqueQueuePrefix('proc');
let llm: ScriptedLlm;
let app: TestApp;
const children: ChildProcess[] = [];

/** Transcripts containing this word get a slow extraction answer. */
const SLOW = 'harpsichord';
let slowDelayMs = 0;

beforeAll(async () => {
  llm = await startScriptedLlm();
  llm.onChat(async (body) => {
    const reply = await defaultChatHandler(body);
    return chatKind(body) === 'extraction' && transcriptOf(body).includes(SLOW) && slowDelayMs > 0 ? { delayMs: slowDelayMs, then: reply } : reply;
  });
  // The API only: the worker runs in child processes (and, after the SIGKILL, in this one).
  app = await startTestApp(llmAppEnv(llm, prefix, { LLM_TIMEOUT_MS: '10000', JOB_LEASE_MS: '1000' }), { isolated: true });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await app?.close();
  await llm?.close();
  await deleteQueueKeys(prefix);
});

function transcriptOf(body: ChatRequestBody): string {
  return JSON.stringify((chatUserData(body) as { messages: unknown[] }).messages);
}

interface Worker {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

function startWorkerProcess(): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/extraction.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: app.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      AUTH_JWT_SECRET: TEST_JWT_SECRET,
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'test',
      EMBEDDING_DIMENSIONS: '256',
      LLM_TIMEOUT_MS: '10000',
      JOB_LEASE_MS: '1000',
      JOB_BACKOFF_MS: '50',
      QUEUE_SWEEP_INTERVAL_MS: '200',
      QUEUE_STALE_AFTER_MS: '300',
      MIGRATE_ON_START: 'false',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
  });
  return { child, output: () => output, exited };
}

async function waitForSlowRequest(count: number): Promise<void> {
  await waitUntil(
    `extraction request #${count} for the slow transcript`,
    () => llm.chatRequests('extraction').filter((body) => transcriptOf(body).includes(SLOW)).length >= count,
    10_000,
  );
}

describe('the worker process', () => {
  it('SIGTERM mid-job: the job in hand finishes, nothing new starts, the process exits 0', async () => {
    const user = `term-${randomUUID().slice(0, 8)}`;
    const token = await tokenFor({ tenant, user });
    slowDelayMs = 800;
    const worker = startWorkerProcess();
    const jobId = await postExtract(app, token, said(`I play the ${SLOW} every evening.`));
    await waitForSlowRequest(1).catch((error: Error) => {
      throw new Error(`${error.message}\nworker output:\n${worker.output()}`);
    });

    worker.child.kill('SIGTERM');
    await sleep(100);
    // Accepted after the worker was told to stop: it must not start it.
    const lateJob = await postExtract(app, token, said('I also play the organ on Sundays.'));

    const exit = await worker.exited;
    expect(exit, worker.output()).toMatchObject({ code: 0, signal: null });
    // Finished before the process exited: no polling needed.
    const job = await app.call('GET', `/jobs/${jobId}`, { token });
    expect(job.body.status, worker.output()).toBe('succeeded');
    expect(job.body.result).toMatchObject({ added: 1 });
    expect(Date.parse(job.body.finished_at)).toBeLessThanOrEqual(exit.at);
    const late = await app.owner`select status, attempts from extraction_jobs where tenant_id = ${tenant} and id = ${lateJob}`;
    expect(late[0]).toMatchObject({ status: 'queued', attempts: 0 });
    expect(llm.chatRequests('extraction').filter((body) => transcriptOf(body).includes('organ'))).toHaveLength(0);
  });

  it('SIGKILL mid-job: after a new worker starts, the job ends succeeded, applied exactly once', async () => {
    const user = `kill-${randomUUID().slice(0, 8)}`;
    const token = await tokenFor({ tenant, user });
    slowDelayMs = 30_000;
    const before = llm.chatRequests('extraction').filter((body) => transcriptOf(body).includes(SLOW)).length;
    const worker = startWorkerProcess();
    const jobId = await postExtract(app, token, said(`I restore antique ${SLOW}s.`));
    await waitForSlowRequest(before + 1).catch((error: Error) => {
      throw new Error(`${error.message}\nworker output:\n${worker.output()}`);
    });
    const running = await app.owner`select status, attempts from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
    expect(running[0]).toMatchObject({ status: 'running', attempts: 1 });

    worker.child.kill('SIGKILL');
    expect(await worker.exited).toMatchObject({ signal: 'SIGKILL' });

    // A new worker (in this process) takes over once the dead one's lease and lock run out.
    slowDelayMs = 0;
    app.runtime.startWorker();
    const job = await waitForJob(app, token, jobId, ['succeeded', 'failed'], 10_000);
    expect(job.status).toBe('succeeded');
    expect(job.result).toMatchObject({ added: 1 });

    const [row] = await app.owner`select status, attempts from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
    const memories = await app.owner`select id, content from memories where tenant_id = ${tenant} and user_id = ${user}`;
    expect(memories).toHaveLength(1);
    const events = await app.owner`select event, job_id from memory_events where tenant_id = ${tenant} and user_id = ${user}`;
    expect(events).toEqual([{ event: 'ADD', job_id: jobId }]);
  });
});

import { createHash, randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET } from '../support/env.js';
import { startTestApp, tokenFor, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, llmAppEnv, postExtract, said, uniqueQueuePrefix, waitForJob } from '../support/jobs.js';
import { chatKind, chatUserData, defaultChatHandler, startScriptedLlm, type ChatRequestBody, type ScriptedLlm } from '../support/scripted-llm.js';

/**
 * The logs of a whole extract → recall → erase flow, with a real prompt-sending pipeline (the
 * scripted model), a job that fails, and bad requests: one JSON line per request with what an
 * operator needs, and none of the content, prompts, tokens, secrets or user ids.
 */

const prefix = uniqueQueuePrefix('logging');
const tenant = `log-tenant-${randomUUID().slice(0, 8)}`;
const user = `log-user-${randomUUID().slice(0, 8)}`;
const API_KEY = `sk-log-test-${randomUUID()}`;
// Content that must never reach a log, each distinctive enough to find in any line.
const FACT = `My locker code is ${randomUUID().slice(0, 8)} and I keep it secret.`;
const DOOMED = `My bank PIN hint is ${randomUUID().slice(0, 8)}.`;
const MODEL_OUTPUT = `not json at all ${randomUUID().slice(0, 8)}`;
const QUERY = `what is the locker code ${randomUUID().slice(0, 8)}?`;
const BAD_CONTENT = `malformed ${randomUUID().slice(0, 8)}`;
const REQUEST_ID = `trace-${randomUUID().slice(0, 8)}`;

const lines: string[] = [];
let llm: ScriptedLlm;
let app: TestApp;
let token: string;

beforeAll(async () => {
  llm = await startScriptedLlm();
  // The doomed transcript's first attempt gets unusable output twice (the correction fails too),
  // its second a refusal whose error message quotes the transcript, as some providers' do.
  let doomedCalls = 0;
  llm.onChat((body: ChatRequestBody) => {
    const transcript = chatKind(body) === 'extraction' ? JSON.stringify((chatUserData(body) as { messages: unknown }).messages) : '';
    if (!transcript.includes(DOOMED)) return defaultChatHandler(body);
    doomedCalls += 1;
    if (doomedCalls <= 2) return { content: `${MODEL_OUTPUT} ${DOOMED}` };
    return { status: 400, body: { error: { message: `cannot process "${DOOMED}" (${MODEL_OUTPUT})`, type: 'invalid_request_error' } } };
  });
  const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  app = await startTestApp(llmAppEnv(llm, prefix, { OPENAI_API_KEY: API_KEY, JOB_MAX_ATTEMPTS: '2' }), { isolated: true, logger });
  app.runtime.startWorker();
  token = await tokenFor({ tenant, user });
});

afterAll(async () => {
  await app?.close();
  await llm?.close();
  await deleteQueueKeys(prefix);
});

describe('the log of an extract → recall → erase flow', () => {
  it('has one line per request and none of the content, prompts, tokens, secrets or ids', async () => {
    let requests = 0;
    const call = (...args: Parameters<TestApp['call']>) => {
      requests += 1;
      return app.call(...args);
    };

    const jobId = await postExtract(app, token, said(FACT), { 'x-request-id': REQUEST_ID });
    requests += 1;
    const job = await waitForJob(app, token, jobId, 'succeeded');
    expect(job.result!.added).toBeGreaterThan(0);
    // waitForJob polls; count its requests from the log itself below, by route.
    const recalled = await call('POST', '/memories/recall', { token, body: { query: QUERY } });
    expect(recalled.status).toBe(200);
    expect(JSON.stringify(recalled.body)).toContain('locker code');

    const doomedId = await postExtract(app, token, said(DOOMED));
    requests += 1;
    expect((await waitForJob(app, token, doomedId, 'failed', 10_000)).error?.code).toBe('llm_request_rejected');
    expect(llm.chatRequests('extraction').some((b) => JSON.stringify(b).includes(DOOMED))).toBe(true);

    // Bad requests (400s, never 500s) that carry content and a user id in body and query.
    const malformed = await call('POST', '/memories', { token, rawBody: `{"memories": [{"content": "${BAD_CONTENT}`, headers: { 'content-type': 'application/json' }, skipOpenApiCheck: true });
    expect(malformed.status).toBe(400);
    const invalid = await call('POST', '/memories', { token, body: { memories: [{ content: BAD_CONTENT, colour: BAD_CONTENT }] } });
    expect(invalid.status).toBe(400);
    const otherUser = await call('GET', `/memories?user_id=${user}-other`, { token });
    expect(otherUser.status).toBe(403);

    const erased = await call('POST', '/memories/delete', { token, body: {} });
    expect(erased.status).toBe(200);

    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const requestLines = parsed.filter((l) => l.msg === 'request');
    const jobPolls = requestLines.filter((l) => l.route === '/jobs/{job_id}').length;
    expect(jobPolls).toBeGreaterThan(0);
    expect(requestLines).toHaveLength(requests + jobPolls);

    // What each request line says.
    const first = requestLines.find((l) => l.requestId === REQUEST_ID);
    expect(first).toMatchObject({ method: 'POST', route: '/memories/extract', status: 202, tenant: createHash('sha256').update(tenant).digest('hex').slice(0, 16) });
    expect(first!.durationMs).toEqual(expect.any(Number));
    expect(requestLines.find((l) => l.route === '/memories/recall')).toMatchObject({ status: 200 });
    expect(requestLines.filter((l) => l.route === '/memories' && l.status === 400)).toHaveLength(2);
    for (const line of requestLines) expect(Object.keys(line).sort()).toEqual(['durationMs', 'hostname', 'level', 'method', 'msg', 'pid', 'requestId', 'route', 'status', 'tenant', 'time']);
    // The failed job is in the log, by id and code.
    expect(parsed.some((l) => l.jobId === doomedId && l.code === 'llm_invalid_output')).toBe(true);
    expect(parsed.some((l) => l.jobId === doomedId && l.code === 'llm_request_rejected')).toBe(true);

    const forbidden: Record<string, string> = {
      'the transcript / memory content': 'locker code',
      'the failed transcript': DOOMED,
      "the model's output": MODEL_OUTPUT,
      'the recall query': QUERY,
      'a bad request body': BAD_CONTENT,
      'the extraction prompt': 'You extract long-term memories',
      'the resolution prompt': 'You maintain a long-term memory',
      'the JWT': token,
      'the JWT signature': token.split('.')[2]!,
      'the JWT secret': TEST_JWT_SECRET,
      'the API key': API_KEY,
      'the user id': user,
      'the tenant id': tenant,
    };
    const log = lines.join('');
    const leaked = Object.entries(forbidden).filter(([, text]) => log.includes(text)).map(([what]) => what);
    expect(leaked).toEqual([]);
  });
});

import { SCOPES } from '../auth/principal.js';
import { defineRoute, jsonBody, jsonResponse, ERRORS, X_REQUEST_ID, type Router } from '../http/routing.js';
import type { JobQueue } from '../queue/types.js';
import type { Services } from '../shared/context.js';
import { extractAccepted, extractBody, extractHeaders, jobIdParams, jobSchema } from './schemas.js';
import { acceptExtraction, getJob as findJob } from './service.js';
import { jobQuery, waitForJob } from '../events/job-wait.js';

const JOB_ID = '0b7f6a52-3c2e-4f0e-9f51-2a1f7d3c9e10';

export const extractMemories = defineRoute({
  method: 'post',
  path: '/memories/extract',
  operationId: 'extractMemories',
  tags: ['extraction'],
  summary: 'Queue an extraction job over a conversation',
  actAs: true,
  description: `Queues a job that reads the conversation and updates the user's memories; the answer is
immediate (202) and \`status_url\` reports progress and the outcome (\`GET /jobs/{job_id}\`).

- \`infer: true\` (default): facts are extracted from what the **user** said (assistant, system
  and tool messages are context, never a source, unless the user confirms them) and
  reconciled with the user's current memories: each fact is added, merged into an existing
  memory (UPDATE), supersedes a contradicted one (the old row keeps its history and gets
  \`valid_to\`), or changes nothing.
- \`infer: false\`: each \`user\` message is stored as one memory, as written (so at most 10,000
  characters each: a longer one is a 400), exactly like \`POST /memories\` — a repeat of a
  current memory supersedes it; messages of other roles are not stored.
- \`metadata\` is attached to every memory the job creates; \`agent_id\` and \`run_id\` are recorded on them.
- The tenant's settings (\`GET /settings\`) govern the job: its \`extraction.instructions\` and
  \`categories\` steer the extractor (\`instructions\` and \`categories\` here replace them for this
  job only), facts in \`exclude_categories\` and instructions aimed at the assistant are not
  stored, \`pii.mode\` redacts the transcript before it is written, and \`retention\` sets each new
  memory's \`expires_at\`.

**Idempotency.** With an \`Idempotency-Key\` (scoped to the tenant and the user, and kept at least 24 hours)
the same key with the same body answers 202 with the same \`job_id\` and the job's *current*
\`status\`, without queueing anything; the same key with a different body is a 409.`,
  scope: SCOPES.write,
  request: {
    headers: extractHeaders,
    body: jsonBody(extractBody, {
      messages: [
        { role: 'user', content: 'I just moved to Berlin. I work as a nurse.' },
        { role: 'assistant', content: 'Welcome to Berlin!' },
      ],
      metadata: { source: 'onboarding' },
    }),
  },
  responses: {
    202: {
      ...jsonResponse(extractAccepted, 'The job is queued (or, on an idempotent replay, the existing job with its current status).', {
        job_id: JOB_ID,
        status: 'queued',
        status_url: `/jobs/${JOB_ID}`,
      }),
      headers: { ...X_REQUEST_ID, Location: { description: "The job's `status_url`.", required: true, schema: { type: 'string', format: 'uri-reference' } } },
    },
    409: ERRORS[409],
  },
});

export const getJob = defineRoute({
  method: 'get',
  path: '/jobs/{job_id}',
  operationId: 'getJob',
  tags: ['extraction'],
  summary: 'Status and outcome of an extraction job',
  description: `\`status\` moves \`queued\` → \`running\` → \`succeeded\` | \`failed\` (a job that fails transiently is
retried and goes back to \`queued\`). A succeeded job has \`result\` with the counts of what it
did, the ids of the memories it added, updated or deleted, and \`usage\` (what it spent on
model calls), and \`skipped\`: the facts not stored, by reason (the tenant's settings: personal
data under \`pii.mode: reject\`, instructions aimed at the assistant, excluded categories); a
failed job has \`error\`. \`finished_at\` is set once the job has succeeded or
failed. Another tenant's job, or another user's without \`memories:act_as\`, is a 404.

**Waiting.** With \`wait=S\` (0–30 seconds) the answer comes as soon as the job has finished, or
after S seconds with its state then: a long poll instead of a polling loop. A waiting request
holds no database connection (it is woken by the job's notification), so many may wait at once.`,
  scope: SCOPES.read,
  request: { params: jobIdParams, query: jobQuery },
  responses: {
    200: jsonResponse(jobSchema, 'The job.', {
      job_id: JOB_ID,
      status: 'succeeded',
      result: {
        added: 2,
        updated: 0,
        deleted: 0,
        unchanged: 0,
        memory_ids: ['3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70', '7a2b9c1d-0e3f-4a5b-8c6d-1e2f3a4b5c6d'],
        usage: { llm_calls: 2, embedding_calls: 1, prompt_tokens: 812, completion_tokens: 96 },
        providers: { extractor: 'openai:gpt-4o-mini', resolver: 'openai:gpt-4o-mini', embedder: 'openai:text-embedding-3-small' },
        skipped: { pii: 0, suspicious: 1, excluded: 0 },
      },
      created_at: '2026-01-31T12:00:00.000Z',
      finished_at: '2026-01-31T12:00:02.000Z',
    }),
  },
});

export const extractionRoutes = [extractMemories, getJob];

export function registerExtractionRoutes(app: Router, services: Services, queue: JobQueue): void {
  app.openapi(extractMemories, async (c) => {
    const key = c.req.valid('header')['Idempotency-Key'];
    const accepted = await acceptExtraction({ services, principal: c.get('principal') }, queue, c.req.valid('json'), key);
    c.header('Location', accepted.status_url);
    return c.json(accepted, 202);
  });
  app.openapi(getJob, async (c) => {
    const ctx = { services, principal: c.get('principal') };
    const id = c.req.valid('param').job_id;
    const { wait } = c.req.valid('query');
    return c.json(wait ? await waitForJob(ctx, id, wait, services.notifier) : await findJob(ctx, id), 200);
  });
}

import { z } from 'zod';
import { MAX_MEMORY_CHARS, idText, isoDateTime, metadataObject, utcDateTime } from '../memories/schemas.js';

export const extractMessage = z
  .strictObject({
    role: z.enum(['user', 'assistant', 'system', 'tool']),
    content: z.string().max(100_000),
    name: z.string().trim().min(1).max(256).optional().meta({ description: "The speaker's name; trimmed, then 1–256 characters." }),
    created_at: isoDateTime.optional(),
  })
  .meta({ id: 'TranscriptMessage', description: 'One message of the conversation.' });

export const extractBody = z
  .strictObject({
    user_id: idText.optional().meta({ description: "The user the conversation is about; defaults to the token's `sub`." }),
    agent_id: idText.nullable().optional(),
    run_id: idText.nullable().optional(),
    messages: z.array(extractMessage).min(1).max(500),
    metadata: metadataObject.optional().meta({ description: 'Attached to every memory the job creates.' }),
    infer: z.boolean().default(true).meta({ description: "`false` stores each `user` message as one memory, and no other role's. Default true." }),
  })
  .superRefine((body, ctx) => {
  // infer: false stores user messages as written: one that could not be stored whole is refused
  // now, rather than cut short later.
  if (body.infer) return;
  body.messages.forEach((message, index) => {
    if (message.role === 'user' && message.content.trim().length > MAX_MEMORY_CHARS) {
      ctx.addIssue({ code: 'custom', path: ['messages', index, 'content'], message: `with infer: false a user message is stored as one memory, at most ${MAX_MEMORY_CHARS} characters` });
    }
  });
});
export type ExtractBody = z.output<typeof extractBody>;

/** What the job row keeps until the job succeeds (then it is purged unless retention says otherwise). */
export const jobPayload = z.object({
  messages: z.array(extractMessage),
  metadata: metadataObject,
  infer: z.boolean(),
});
export type JobPayload = z.output<typeof jobPayload>;

export const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be 1-255 visible ASCII characters');

export const extractHeaders = z.object({
  'Idempotency-Key': idempotencyKey.optional().meta({
    description:
      'Makes the request safe to retry: scoped to the tenant and the user, and kept at least 24 hours (`IDEMPOTENCY_TTL_HOURS`); another user\'s key of the same name is another job. The same key with the same body answers the same `job_id`; with another body, 409. 1–255 visible ASCII characters; any other value is a 400.',
    example: 'conversation-2026-01-31-alice',
  }),
});

const jobStatus = z.enum(['queued', 'running', 'succeeded', 'failed']).meta({ id: 'JobStatus' });

export const extractAccepted = z
  .strictObject({
    job_id: z.uuid(),
    status: jobStatus.meta({ description: "`queued` for a new job; an idempotent replay answers the job's current status." }),
    status_url: z.string().meta({ description: 'Where to poll the job, `/jobs/{job_id}`.', format: 'uri-reference' }),
  })
  .meta({ id: 'ExtractAccepted' });

/** A path's job id: a value that is not a UUID cannot name a job, so it is a 404. */
export const jobIdParams = z.object({
  job_id: z
    .uuid({ error: 'job not found' })
    .transform((id) => id.toLowerCase())
    .meta({ description: "The job's id. A value that is not a UUID cannot name a job and answers 404.", example: '0b7f6a52-3c2e-4f0e-9f51-2a1f7d3c9e10' }),
});

const count = z.number().int().min(0);

export const jobResult = z
  .strictObject({
    added: count,
    updated: count,
    deleted: count.meta({ description: 'Memories the job retracted (DELETE) without a replacement; a memory replaced by a newer fact counts under `updated`.' }),
    unchanged: count.meta({ description: 'Facts the user already held.' }),
    memory_ids: z.array(z.uuid()).meta({ description: 'The memories the job added, updated or deleted.' }),
    usage: z
      .strictObject({ llm_calls: count, embedding_calls: count, prompt_tokens: count, completion_tokens: count })
      .meta({ id: 'JobUsage', description: 'What the job spent on model calls (zero calls and tokens with the offline providers).' }),
    providers: z
      .strictObject({ extractor: z.string(), resolver: z.string(), embedder: z.string() })
      .meta({ description: 'The providers that ran, e.g. `openai:gpt-4o-mini` or `offline:…`.' }),
    dropped_operations: z
      .number()
      .int()
      .min(1)
      .optional()
      .meta({ description: "Extension: how many of the resolver's proposed operations were refused as invalid (absent when none)." }),
  })
  .meta({ id: 'JobResult' });
export type JobResult = z.output<typeof jobResult>;

export const jobSchema = z
  .strictObject({
    job_id: z.uuid(),
    status: jobStatus,
    result: jobResult.optional().meta({ description: 'Present once the job has succeeded.' }),
    error: z
      .strictObject({
        code: z.string().meta({ description: 'A stable code, e.g. `llm_unavailable`, `llm_invalid_output`, `database_unavailable` or `internal`.' }),
        message: z.string(),
      })
      .optional()
      .meta({ id: 'JobError', description: 'Present when the job has failed.' }),
    created_at: utcDateTime,
    finished_at: utcDateTime.optional().meta({ description: 'When the job succeeded or failed (absent before).' }),
  })
  .meta({ id: 'Job' });
export type JobDto = z.output<typeof jobSchema>;

import { z } from 'zod';
import { MAX_MEMORY_CHARS, idText, isoDateTime, metadataObject } from '../memories/schemas.js';
import type { SkippedCounts } from '../governance/facts.js';
import { categoryList, instructionsText } from '../settings/schemas.js';

export const extractMessage = z.strictObject({
  role: z.enum(['user', 'assistant', 'system', 'tool']),
  content: z.string().max(100_000),
  name: z.string().trim().min(1).max(256).optional(),
  created_at: isoDateTime.optional(),
});

export const extractBody = z.strictObject({
  user_id: idText.optional(),
  agent_id: idText.nullable().optional(),
  run_id: idText.nullable().optional(),
  messages: z.array(extractMessage).min(1).max(500),
  metadata: metadataObject.optional(),
  infer: z.boolean().default(true),
  /** Replace the tenant's extraction instructions and categories for this job only. */
  instructions: instructionsText.optional(),
  categories: categoryList.min(1).optional(),
}).superRefine((body, ctx) => {
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
  instructions: instructionsText.optional(),
  categories: categoryList.optional(),
});
export type JobPayload = z.output<typeof jobPayload>;

export const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be 1-255 visible ASCII characters');

export interface JobResult {
  added: number;
  updated: number;
  deleted: number;
  unchanged: number;
  memory_ids: string[];
  usage: { llm_calls: number; embedding_calls: number; prompt_tokens: number; completion_tokens: number };
  providers: { extractor: string; resolver: string; embedder: string };
  dropped_operations?: number;
  /** Facts not stored, by reason (see src/governance/facts.ts). */
  skipped: SkippedCounts;
}

export interface JobDto {
  job_id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  result?: JobResult;
  error?: { code: string; message: string };
  created_at: string;
  finished_at?: string;
}

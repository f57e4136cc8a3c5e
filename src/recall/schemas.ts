import { z } from 'zod';
import { category, idText, isoDateTime, metadataObject } from '../memories/schemas.js';

/** The most memories one recall may ask for (the contract's `limit` range is 1–100). */
export const MAX_RECALL_LIMIT = 100;

// The weights' rules (scoring.ts validateWeights) checked here too, so that a request with several
// faults hears of all of them in one answer.
const weight = z
  .number()
  .refine(Number.isFinite, 'must be a finite number')
  .refine((w) => !(w < 0), 'must not be negative');
const weights = z
  .strictObject({ recency: weight.optional(), importance: weight.optional(), relevance: weight.optional() })
  // All absent or 0; a negative one is reported at its own path, not here again.
  .refine((w) => Object.values(w).some((v) => v !== 0), 'at least one weight must be greater than 0');

export const recallBody = z.strictObject({
  user_id: idText.optional(),
  query: z.string().min(1).max(8000).refine((q) => q.trim().length > 0, 'must not be blank'),
  limit: z.number().int().min(1).max(MAX_RECALL_LIMIT).default(10),
  weights: weights.optional(),
  recency_half_life_hours: z.number().positive().max(1_000_000).optional(),
  filters: z
    .strictObject({
      agent_id: idText.optional(),
      run_id: idText.optional(),
      categories: z.array(category).min(1).max(100).optional(),
      metadata: metadataObject.optional(),
    })
    .optional(),
  as_of: isoDateTime.optional(),
  min_score: z.number().min(0).max(1).optional(),
});
export type RecallBody = z.output<typeof recallBody>;

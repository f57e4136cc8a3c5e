import { z } from 'zod';
import { category, idText, isoDateTime, metadataObject } from '../memories/schemas.js';
import { InvalidWeightsError, validateWeights } from './scoring.js';

/** The most memories one recall may ask for (the contract's `limit` range is 1–100). */
export const MAX_RECALL_LIMIT = 100;

// The weights' own rules (scoring.ts) decide, inside the schema, so that a request with several
// faults hears of all of them in one answer, a bad weight at its own path.
const weights = z
  .strictObject({ recency: z.number().optional(), importance: z.number().optional(), relevance: z.number().optional() })
  .transform((given, ctx) => {
    try {
      return validateWeights(given);
    } catch (error) {
      if (!(error instanceof InvalidWeightsError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message, path: error.key ? [error.key] : [] });
      return z.NEVER;
    }
  });

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
  /** Unset: the deployment's RECALL_MIN_RELEVANCE. */
  min_relevance: z.number().min(0).max(1).optional(),
});
export type RecallBody = z.output<typeof recallBody>;

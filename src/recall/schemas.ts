import { z } from 'zod';
import { category, idText, isoDateTime, memorySchema, metadataObject } from '../memories/schemas.js';
import { InvalidWeightsError, validateWeights } from './scoring.js';

/** The most memories one recall may ask for (the contract's `limit` range is 1–100). */
export const MAX_RECALL_LIMIT = 100;

// The weights' own rules (scoring.ts) decide, inside the schema, so that a request with several
// faults hears of all of them in one answer, a bad weight at its own path.
// `minimum: 0` is what validateWeights enforces (a negative weight is a 400): said for the reader.
const weight = z.number().optional().meta({ description: 'A finite, non-negative weight; a negative one is a 400.', minimum: 0 });
const weights = z
  .strictObject({ recency: weight, importance: weight, relevance: weight })
  .meta({
    id: 'RecallWeights',
    description:
      'Replaces the default weights (recency 0.1, importance 0.1, relevance 0.8) whole: a missing key is 0. All three 0 is a 400. Only the ratios matter.',
  })
  .transform((given, ctx) => {
    try {
      return validateWeights(given);
    } catch (error) {
      if (!(error instanceof InvalidWeightsError)) throw error;
      ctx.addIssue({ code: 'custom', message: error.message, path: error.key ? [error.key] : [] });
      return z.NEVER;
    }
  });

export const recallBody = z
  .strictObject({
    user_id: idText.optional().meta({ description: "The user whose memories to recall; defaults to the token's `sub`." }),
    query: z
      .string()
      .min(1)
      .max(8000)
      .refine((q) => q.trim().length > 0, 'must not be blank')
      .meta({ description: 'What to recall memories for; must not be blank.', pattern: '\\S' }),
    limit: z.number().int().min(1).max(MAX_RECALL_LIMIT).default(10).meta({ description: 'At most this many memories. Default 10.' }),
    weights: weights.optional(),
    recency_half_life_hours: z
      .number()
      .positive()
      .max(1_000_000)
      .optional()
      .meta({ description: 'Overrides `RECALL_HALF_LIFE_HOURS` (default 720) for this request.' }),
    filters: z
      .strictObject({
        agent_id: idText.optional(),
        run_id: idText.optional(),
        categories: z.array(category).min(1).max(100).optional().meta({ description: 'Memories in any of these categories.' }),
        metadata: metadataObject.optional().meta({ description: 'Memories whose metadata contains all of these keys with these values.' }),
      })
      .optional()
      .meta({ id: 'RecallFilters' }),
    as_of: isoDateTime.optional().meta({ description: "Recall as of this instant (see the operation's description)." }),
    min_score: z.number().min(0).max(1).optional().meta({ description: 'Leave out memories whose final `score` is below this.' }),
    /** Unset: the deployment's RECALL_MIN_RELEVANCE. */
    min_relevance: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .meta({
        description:
          "Leave out memories whose absolute relevance is below this, before weighting (see the operation's description); default `RECALL_MIN_RELEVANCE`, else the embedder's (0.17; 0.26 with the local model). 0 ranks every candidate.",
      }),
  });
export type RecallBody = z.output<typeof recallBody>;

const unit = z.number().min(0).max(1);

export const recalledMemory = memorySchema
  .extend({
    score: unit.meta({ description: '(w_rec·recency + w_imp·importance + w_rel·relevance) / (w_rec + w_imp + w_rel)' }),
    scores: z
      .strictObject({ recency: unit, importance: unit, relevance: unit })
      .meta({ id: 'ComponentScores', description: "The score's components, each normalised to [0, 1] before weighting." }),
  })
  .meta({ id: 'RecalledMemory', description: 'A `Memory` with its recall `score` and the components it was computed from.' });
export type RecalledMemory = z.output<typeof recalledMemory>;

export const recallResult = z.strictObject({ memories: z.array(recalledMemory).max(MAX_RECALL_LIMIT) }).meta({ id: 'RecallResult' });

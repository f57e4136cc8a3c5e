import { SCOPES, requireScope, resolveUserId } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import { toMemoryDto, type MemoryDto } from '../memories/schemas.js';
import { validationFailed } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import { findCandidates } from './repository.js';
import type { RecallBody } from './schemas.js';
import { DEFAULT_WEIGHTS, InvalidWeightsError, rankCandidates, relevanceFromCosine, validateWeights, type RecallWeights } from './scoring.js';

export interface RecalledMemory extends MemoryDto {
  score: number;
  scores: { recency: number; importance: number; relevance: number };
}

/** How many candidates each arm contributes: wide enough that weighting can reorder, cheap to score. */
export function candidatePoolSize(limit: number): number {
  return Math.max(50, limit * 5);
}

export async function recall(ctx: RequestContext, body: RecallBody): Promise<{ memories: RecalledMemory[] }> {
  requireScope(ctx.principal, SCOPES.read);
  const userId = resolveUserId(ctx.principal, body.user_id);
  let weights: RecallWeights;
  try {
    weights = body.weights ? validateWeights(body.weights) : DEFAULT_WEIGHTS;
  } catch (error) {
    if (error instanceof InvalidWeightsError) throw validationFailed(error.message, [{ path: '/weights', message: error.message }]);
    throw error;
  }
  const asOf = body.as_of ? new Date(body.as_of) : undefined;
  const now = asOf ?? ctx.services.clock();
  const [embedding] = await ctx.services.embedder.embed([body.query]);
  const candidates = await withTenant(ctx.services.database, ctx.principal.tenantId, (tx) =>
    findCandidates(tx, {
      tenantId: ctx.principal.tenantId,
      userId,
      embedding: embedding!,
      text: body.query,
      asOf,
      now,
      poolSize: candidatePoolSize(body.limit),
      agentId: body.filters?.agent_id,
      runId: body.filters?.run_id,
      categories: body.filters?.categories,
      metadata: body.filters?.metadata,
    }),
  );
  const ranked = rankCandidates(
    candidates.map((c) => ({ ...c, relevance: relevanceFromCosine(c.similarity) })),
    {
      weights,
      halfLifeHours: body.recency_half_life_hours ?? ctx.services.config.recall.halfLifeHours,
      now,
      minScore: body.min_score,
      limit: body.limit,
    },
  );
  return { memories: ranked.map((c) => ({ ...toMemoryDto(c), score: c.score, scores: c.scores })) };
}

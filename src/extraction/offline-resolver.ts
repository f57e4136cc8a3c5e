import type { Usage } from '../llm/types.js';
import { normaliseFactText } from './normalise.js';
import type { ResolveInput, ResolveResult, ResolvedOperation, Resolver } from './types.js';

export interface OfflineResolverOptions {
  /** Cosine similarity at or above which a candidate counts as the same fact. */
  noopThreshold?: number;
}

export const DEFAULT_NOOP_THRESHOLD = 0.92;

/**
 * The offline resolver: a fact whose best candidate is near-identical (cosine similarity at or
 * above the threshold, or the same normalised text) is a NOOP on that candidate; a fact that
 * repeats an earlier fact of the same job is a NOOP; everything else is ADDed.
 *
 * It never UPDATEs or DELETEs: telling "moved to Berlin" from "visited Berlin" takes
 * understanding that word overlap does not give, and a wrong supersede would hide a true memory.
 * So in offline mode contradicting facts both stay current; recall ranks them by recency.
 */
export class OfflineResolver implements Resolver {
  readonly name = 'offline:similarity';
  readonly local = true;
  readonly noopThreshold: number;

  constructor(options: OfflineResolverOptions = {}) {
    const threshold = options.noopThreshold ?? DEFAULT_NOOP_THRESHOLD;
    if (!(threshold > -1 && threshold <= 1)) {
      throw new RangeError(`noopThreshold must be in (-1, 1], got ${threshold}`);
    }
    this.noopThreshold = threshold;
  }

  async resolve(input: ResolveInput, usage: Usage): Promise<ResolveResult> {
    void usage; // offline: nothing is spent
    const seen = new Set<string>();
    const operations: ResolvedOperation[] = input.facts.map(({ fact, candidates }, factIndex) => {
      const text = normaliseFactText(fact.content);
      // Identical text wins over the similarity order: the candidate list may put a merely
      // similar memory first, but the identical one is the one this fact repeats.
      const same =
        candidates.find((c) => normaliseFactText(c.content) === text) ??
        bestBySimilarity(candidates, this.noopThreshold);
      if (same) return { factIndex, operation: 'NOOP', targetMemoryId: same.id };
      if (seen.has(text)) return { factIndex, operation: 'NOOP' };
      seen.add(text);
      return { factIndex, operation: 'ADD' };
    });
    return { operations, dropped: [] };
  }
}

function bestBySimilarity<T extends { similarity?: number | undefined }>(candidates: readonly T[], threshold: number): T | undefined {
  let best: T | undefined;
  for (const candidate of candidates) {
    const similarity = candidate.similarity;
    if (similarity === undefined || similarity < threshold) continue;
    if (best === undefined || similarity > (best.similarity ?? -Infinity)) best = candidate;
  }
  return best;
}

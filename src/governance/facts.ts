import type { ExtractedFact } from '../extraction/types.js';
import type { CategoryDefinition, Settings } from '../settings/schemas.js';
import { holdsPlaceholder, redactPii } from './pii.js';
import { isSuspicious } from './poisoning.js';

/** Facts not stored, by reason: counts only, never their content. */
export interface SkippedCounts {
  pii: number;
  suspicious: number;
  excluded: number;
}

export const noneSkipped = (): SkippedCounts => ({ pii: 0, suspicious: 0, excluded: 0 });

/** What steers one extraction: the tenant's settings, or the request's own when it sent them. */
export interface ExtractionGuidance {
  instructions: string;
  categories: CategoryDefinition[];
}

export function guidanceFor(settings: Settings, request: { instructions?: string | undefined; categories?: CategoryDefinition[] | undefined }): ExtractionGuidance {
  return {
    instructions: request.instructions ?? settings.extraction.instructions,
    categories: request.categories ?? settings.extraction.categories,
  };
}

/**
 * The governance of extracted facts, in this order: an instruction aimed at the assistant is
 * dropped (suspicious); a category outside the job's list becomes null; a fact in an excluded
 * category is dropped; then personal data is redacted, or the fact dropped under `reject`.
 */
export function governFacts(facts: ExtractedFact[], settings: Settings, guidance: ExtractionGuidance): { kept: ExtractedFact[]; skipped: SkippedCounts } {
  const skipped = noneSkipped();
  const known = new Set(guidance.categories.map((c) => c.name));
  const excluded = new Set(settings.extraction.exclude_categories);
  const kept: ExtractedFact[] = [];
  for (const fact of facts) {
    if (isSuspicious(fact.content)) {
      skipped.suspicious += 1;
      continue;
    }
    const category = fact.category !== null && known.has(fact.category) ? fact.category : null;
    if (category !== null && excluded.has(category)) {
      skipped.excluded += 1;
      continue;
    }
    let content = fact.content;
    if (settings.pii.mode !== 'off') {
      const redaction = redactPii(content);
      // The transcript was redacted at the door: a placeholder in a fact is personal data it held.
      if (settings.pii.mode === 'reject' && (redaction.kinds.length > 0 || holdsPlaceholder(content))) {
        skipped.pii += 1;
        continue;
      }
      content = redaction.text;
    }
    kept.push({ ...fact, content, category });
  }
  return { kept, skipped };
}

/**
 * The resolver's merged text for an UPDATE goes through the same door as a fact: redacted under
 * the tenant's PII mode, and replaced by the fact it merges when it reads as an instruction or
 * (under `reject`) holds personal data.
 */
export function governMerged(merged: string, fact: string, settings: Settings): string {
  if (merged === '' || isSuspicious(merged)) return fact;
  if (settings.pii.mode === 'off') return merged;
  const redaction = redactPii(merged);
  if (settings.pii.mode === 'reject' && redaction.kinds.length > 0) return fact;
  return redaction.text;
}

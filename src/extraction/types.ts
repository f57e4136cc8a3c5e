import { z } from 'zod';
import type { ExtractionGuidance } from '../governance/facts.js';
import type { Usage } from '../llm/types.js';

/** One message of a posted transcript, as the extract route accepts it. */
export const transcriptMessageSchema = z.object({
  role: z.enum(['user', 'assistant', 'system', 'tool']),
  content: z.string(),
  name: z.string().optional(),
  created_at: z.iso.datetime({ offset: true }).optional(),
});
export type TranscriptMessage = z.infer<typeof transcriptMessageSchema>;

export const FACT_MAX_CHARS = 2000;

/** A durable fact about the user, as an extractor returns it (before embedding and resolution). */
export const extractedFactSchema = z.object({
  content: z.string().trim().min(1).max(FACT_MAX_CHARS),
  importance: z.number().int().min(1).max(10),
  category: z.string().trim().min(1).max(64).nullable(),
  /** ISO 8601 (UTC) time the fact became true or the event happened, when the transcript says. */
  occurred_at: z.iso.datetime({ offset: true }).nullable(),
  /** Indexes into the transcript of the messages the fact came from, for the memory's `source`. */
  source_message_indexes: z.array(z.number().int().min(0)).optional(),
});
export type ExtractedFact = z.infer<typeof extractedFactSchema>;

/** A current memory of the same user, similar to a fact; shown to the resolver. */
export const candidateMemorySchema = z.object({
  id: z.uuid(),
  content: z.string(),
  occurredAt: z.date(),
  importance: z.number().int().min(1).max(10),
  category: z.string().nullable().optional(),
  /** Cosine similarity to the fact; the offline resolver decides by it, the LLM never sees it. */
  similarity: z.number().optional(),
});
export type CandidateMemory = z.infer<typeof candidateMemorySchema>;

export const OPERATIONS = ['ADD', 'UPDATE', 'DELETE', 'NOOP'] as const;
export type Operation = (typeof OPERATIONS)[number];

/**
 * One decision as the resolver model writes it. `target` is the small integer id ("0", "1", …)
 * shown for that fact, never a uuid. Lenient where OpenAI-compatible servers without strict
 * structured output tend to drift harmlessly (a numeric target, a missing `content`).
 */
export const resolverDecisionSchema = z.object({
  fact_index: z.number().int(),
  operation: z.enum(OPERATIONS),
  target: z
    .union([z.string(), z.number().int()])
    .transform((value) => String(value).trim())
    .nullable(),
  /** For UPDATE: the merged fact text that replaces the target memory. */
  content: z.string().trim().max(FACT_MAX_CHARS).nullish(),
});
export type ResolverDecision = z.infer<typeof resolverDecisionSchema>;

/** What the pipeline applies; memory ids here are real uuids, mapped back from the shown ids. */
export type ResolvedOperation =
  | { factIndex: number; operation: 'ADD' }
  | { factIndex: number; operation: 'UPDATE'; targetMemoryId: string; content: string }
  | { factIndex: number; operation: 'DELETE'; targetMemoryId: string }
  | { factIndex: number; operation: 'NOOP'; targetMemoryId?: string };

export type DropCode =
  /** fact_index does not name a fact of this job. */
  | 'unknown_fact'
  /** The target id was not among the ids shown for that fact (an invented id). */
  | 'unknown_target'
  /** UPDATE or DELETE without a target. */
  | 'missing_target'
  /** A second ADD/UPDATE for a fact already stored by an earlier decision. */
  | 'duplicate_decision'
  /** The memory was already updated or deleted by an earlier decision of this job. */
  | 'target_already_changed'
  /** A NOOP next to a decision that does change something for the same fact. */
  | 'redundant';

/** An operation the resolver refused to pass on; the pipeline logs these, it never applies them. */
export interface DroppedOperation {
  /** The fact the decision was for, as the model wrote it (may be out of range for 'unknown_fact'). */
  factIndex: number;
  code: DropCode;
  reason: string;
}

export interface ResolveResult {
  operations: ResolvedOperation[];
  dropped: DroppedOperation[];
}

export interface ExtractInput {
  messages: TranscriptMessage[];
  /** The job's reference time: relative dates resolve against it when a message has no created_at. */
  now: Date;
  /** The tenant's (or the request's) rules and categories; absent: the built-in categories, no rules. */
  guidance?: ExtractionGuidance;
}

export interface ResolveInput {
  facts: Array<{
    fact: ExtractedFact;
    /** The most similar current memories of the user, best first, at most 5. */
    candidates: CandidateMemory[];
  }>;
}

export interface Extractor {
  /** e.g. "openai:gpt-4o-mini" or "offline:heuristic"; the job result reports it. */
  readonly name: string;
  extract(input: ExtractInput, usage: Usage): Promise<ExtractedFact[]>;
}

export interface Resolver {
  /** e.g. "openai:gpt-4o-mini" or "offline:similarity"; the job result reports it. */
  readonly name: string;
  /**
   * True when `resolve` calls no remote service and is quick: the pipeline then decides inside the
   * transaction that holds the user's lock. Otherwise it decides outside and re-checks under it.
   */
  readonly local?: boolean;
  resolve(input: ResolveInput, usage: Usage): Promise<ResolveResult>;
}

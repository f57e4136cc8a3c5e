import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/client.js';
import { withTenant } from '../db/tenant.js';
import * as memoryRepo from '../memories/repository.js';
import { storeAsGiven, supersededAt } from '../memories/service.js';
import { emptyUsage, type Embedder, type Usage } from '../llm/types.js';
import { withLeaseHeartbeat } from '../queue/registry.js';
import type { DueJob, JobError, JobOutcome } from '../queue/types.js';
import * as jobsRepo from './jobs-repository.js';
import { contentHash, normaliseFactText } from './normalise.js';
import { jobPayload, type JobPayload, type JobResult } from './schemas.js';
import type { ExtractedFact, Extractor, ResolvedOperation, Resolver } from './types.js';
import type { Config } from '../config.js';
import { governFacts, governMerged, guidanceFor, type SkippedCounts } from '../governance/facts.js';
import { eraseExpiredOfUser, expiryFor } from '../governance/retention.js';
import type { Settings } from '../settings/schemas.js';
import { tenantSettings } from '../settings/service.js';
import type { Database } from '../db/client.js';

export interface PipelineDeps {
  config: Config;
  database: Database;
  embedder: Embedder;
  extractor: Extractor;
  resolver: Resolver;
  logger: Logger;
  /** Told when an attempt starts (metrics: the queue wait of a first attempt). */
  onJobClaimed?: (job: { attempts: number; createdAt: Date }) => void;
  /** Told when an attempt takes over a job whose previous worker's lease lapsed (metrics). */
  onLeaseExpired?: () => void;
  /** Told, once committed, how many expired memories of the user a job's write erased (metrics). */
  onMemoriesExpired?: (count: number) => void;
}

export type { JobError };

/** How an extraction attempt ended: the queue's outcomes, with the result of a success. */
export type ExtractionOutcome = { kind: 'succeeded'; result: JobResult } | Exclude<JobOutcome, { kind: 'succeeded' }>;

const CANDIDATES_PER_FACT = 5;

/**
 * How many times a job with a remote resolver decides again when the user's memories changed
 * between its decision and its turn under the lock; past that the attempt is retried later.
 */
const MAX_RESOLUTION_ROUNDS = 3;

/** Exponential backoff: base, 2×base, 4×base … capped at ten minutes. */
export function backoffDelay(baseMs: number, attempt: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempt - 1), 600_000);
}

/**
 * Runs one extraction job end to end: claim → extract → embed → find candidates → resolve →
 * apply. Everything that changes memories, and the job's own `succeeded`, commit in one
 * transaction under the user's advisory lock, so a retried or duplicated delivery never applies
 * twice and two jobs for one user cannot both add the same fact. The decision is taken against
 * what that transaction sees: a local resolver decides inside it; a remote one decides before it
 * (no transaction stays open across a model call) and decides again if the candidates changed.
 * While the attempt runs its lease is renewed, so only a dead worker's job is taken over.
 */
export async function processJob(deps: PipelineDeps, ref: DueJob): Promise<ExtractionOutcome> {
  const { database, config } = deps;
  let claim: Awaited<ReturnType<typeof jobsRepo.claimJob>>;
  try {
    claim = await withTenant(database, ref.tenantId, (tx) => jobsRepo.claimJob(tx, ref.tenantId, ref.jobId, config.jobs.leaseMs));
  } catch (error) {
    if (isDatabaseUnavailable(error)) return { kind: 'retry', delayMs: backoffDelay(config.jobs.backoffMs, 1), error: toJobError(error) };
    throw error;
  }
  if (!claim) {
    const row = await withTenant(database, ref.tenantId, (tx) => jobsRepo.findJob(tx, ref.tenantId, ref.jobId));
    if (!row) return { kind: 'skipped', reason: 'gone' };
    if (row.status === 'succeeded' || row.status === 'failed') return { kind: 'skipped', reason: 'finished' };
    // Another worker holds it: look again when its lease would lapse (a little after, for clocks).
    const remaining = await withTenant(database, ref.tenantId, (tx) => jobsRepo.leaseRemainingMs(tx, ref.tenantId, ref.jobId));
    return { kind: 'skipped', reason: 'busy', retryAfterMs: Math.min(config.jobs.leaseMs, remaining ?? config.jobs.leaseMs) + 250 };
  }
  const job = claim.row;
  if (claim.tookOver) deps.onLeaseExpired?.();
  deps.onJobClaimed?.(job);
  // A job's usage counts every attempt: failed ones spent tokens too (kept on the row meanwhile).
  const usage = usageCarriedFrom(job.result);
  try {
    const payload = jobPayload.parse(job.payload);
    const result = await withLeaseHeartbeat(
      Math.max(250, Math.floor(config.jobs.leaseMs / 3)),
      () => withTenant(database, ref.tenantId, (tx) => jobsRepo.renewLease(tx, ref.tenantId, ref.jobId, job.attempts, config.jobs.leaseMs)),
      deps.logger,
      () => runAndApply(deps, job, payload, usage),
    );
    if (!result) return { kind: 'skipped', reason: 'gone' };
    return { kind: 'succeeded', result };
  } catch (error) {
    const jobError = toJobError(error);
    const retryable = isRetryable(error);
    const attemptsLeft = job.attempts < config.jobs.maxAttempts;
    try {
      if (retryable && attemptsLeft) {
        const delayMs = backoffDelay(config.jobs.backoffMs, job.attempts);
        await withTenant(database, ref.tenantId, (tx) =>
          jobsRepo.markForRetry(tx, ref.tenantId, ref.jobId, job.attempts, jobError, delayMs, { usage: usageDto(usage) }),
        );
        deps.logger.warn({ jobId: ref.jobId, attempt: job.attempts, code: jobError.code, delayMs }, 'extraction attempt failed; will retry');
        return { kind: 'retry', delayMs, error: jobError };
      }
      await withTenant(database, ref.tenantId, (tx) => jobsRepo.markFailed(tx, ref.tenantId, ref.jobId, job.attempts, jobError, { usage: usageDto(usage) }));
    } catch (markError) {
      // The database is down too: leave the row running; its lease expires and the job is retried.
      deps.logger.error({ jobId: ref.jobId, code: toJobError(markError).code }, 'could not record the job failure');
      return { kind: 'retry', delayMs: backoffDelay(config.jobs.backoffMs, job.attempts), error: jobError };
    }
    deps.logger.error({ jobId: ref.jobId, attempt: job.attempts, code: jobError.code }, 'extraction job failed');
    return { kind: 'failed', error: jobError };
  }
}

/** A remote resolver's decisions could not be applied: the user's memories kept changing under them. */
class ResolutionContendedError extends Error {
  readonly code = 'resolution_contended';
  readonly retryable = true;
  constructor() {
    super('the memories changed under every resolution round');
    this.name = 'ResolutionContendedError';
  }
}

interface PlannedFact {
  fact: ExtractedFact;
  embedding: number[];
}

/** The resolver's decisions for a job's facts, and the candidate set they were taken against. */
interface Decision {
  operations: ResolvedOperation[];
  dropped: number;
  resolverName: string;
  candidates: string;
}

/** Returned by the apply step when a remote decision was taken against candidates that changed since. */
const STALE = Symbol('stale decision');

async function runAndApply(deps: PipelineDeps, job: jobsRepo.JobRow, payload: JobPayload, usage: Usage): Promise<JobResult | undefined> {
  const now = new Date();
  const settings = await tenantSettings(deps.database, job.tenantId);
  const guidance = guidanceFor(settings, payload);
  const extracted = payload.infer
    ? await deps.extractor.extract({ messages: payload.messages, now: job.createdAt, guidance }, usage)
    : verbatimFacts(payload, job.createdAt);
  const governed = { settings, ...governFacts(extracted, settings, guidance) };
  const facts = governed.kept;
  const embeddings = facts.length > 0 ? await deps.embedder.embed(facts.map((f) => f.content), usage) : [];
  const planned: PlannedFact[] = facts.map((fact, i) => ({ fact, embedding: embeddings[i]! }));
  const resolves = payload.infer && planned.length > 0;

  for (let round = 1; ; round++) {
    let decided: Decision | undefined;
    if (resolves && deps.resolver.local !== true) {
      const similar = await withTenant(deps.database, job.tenantId, (tx) =>
        memoryRepo.findSimilarCurrent(tx, job.tenantId, job.userId, embeddings, CANDIDATES_PER_FACT),
      );
      decided = await decide(deps, job, planned, similar, usage);
    }
    const applied = await applyUnderLock(deps, job, payload, usage, planned, now, decided, governed);
    if (applied !== STALE) return applied;
    if (round >= MAX_RESOLUTION_ROUNDS) throw new ResolutionContendedError();
    deps.logger.info({ jobId: job.id, round }, 'memories changed since resolution; resolving again');
  }
}

/** Asks the resolver about the facts against these candidates. */
async function decide(deps: PipelineDeps, job: jobsRepo.JobRow, planned: PlannedFact[], similar: memoryRepo.SimilarMemory[], usage: Usage): Promise<Decision> {
  const resolution = await deps.resolver.resolve(
    {
      facts: planned.map(({ fact }, i) => ({
        fact,
        candidates: similar
          .filter((s) => s.queryIndex === i)
          .map((s) => ({ id: s.id, content: s.content, occurredAt: s.occurredAt, importance: s.importance, category: s.category, similarity: s.similarity })),
      })),
    },
    usage,
  );
  // A "redundant" drop is a NOOP beside a real change for the same fact: nothing was lost.
  const meaningful = resolution.dropped.filter((d) => d.code !== 'redundant');
  for (const d of meaningful) {
    deps.logger.warn({ jobId: job.id, factIndex: d.factIndex, code: d.code }, 'resolver operation dropped');
  }
  return { operations: resolution.operations, dropped: meaningful.length, resolverName: deps.resolver.name, candidates: candidateSet(planned, similar) };
}

/**
 * What a decision depends on: each fact's candidates (id and text). A memory identical to the fact
 * itself is left out: it tells the resolver nothing new (the fact is stored already, and the
 * unique index turns an ADD of it into "unchanged"), so it needs no second decision.
 */
function candidateSet(planned: PlannedFact[], similar: memoryRepo.SimilarMemory[]): string {
  return similar
    .filter((s) => normaliseFactText(s.content) !== normaliseFactText(planned[s.queryIndex]?.fact.content ?? ''))
    .map((s) => `${s.queryIndex}:${s.id}:${contentHash(s.content)}`)
    .sort()
    .join(',');
}

/**
 * One transaction under the user's lock: the decision is checked (or, for a local resolver,
 * taken) against the current memories, then applied with the job's `succeeded`. Undefined when
 * the job is no longer this attempt's; STALE when a remote decision must be taken again.
 */
async function applyUnderLock(
  deps: PipelineDeps,
  job: jobsRepo.JobRow,
  payload: JobPayload,
  usage: Usage,
  planned: PlannedFact[],
  now: Date,
  preDecided: Decision | undefined,
  governed: { settings: Settings; skipped: SkippedCounts },
): Promise<JobResult | undefined | typeof STALE> {
  let expiredErased = 0;
  const outcome = await withTenant(deps.database, job.tenantId, async (tx) => {
    // Sent together and run in this order, the sweep and the job's lock under the user's lock (as
    // storeAsGiven does): each goes through tx.execute, so none overtakes another on its way out.
    const [, erased, current] = await Promise.all([
      memoryRepo.lockUser(tx, job.tenantId, job.userId),
      eraseExpiredOfUser(tx, job.tenantId, job.userId, now),
      jobsRepo.lockJob(tx, job.tenantId, job.id),
    ]);
    expiredErased = erased;
    // Erased meanwhile, finished by another delivery, or taken over after this attempt's lease
    // lapsed: apply nothing.
    if (!current) return undefined;
    if (current.status !== 'running' || current.attempts !== job.attempts) return undefined;

    let operations: ResolvedOperation[] = [];
    let dropped = 0;
    let resolverName = 'none';
    if (payload.infer && planned.length > 0) {
      const similar = await memoryRepo.findSimilarCurrent(
        tx,
        job.tenantId,
        job.userId,
        planned.map((p) => p.embedding),
        CANDIDATES_PER_FACT,
      );
      if (preDecided && preDecided.candidates !== candidateSet(planned, similar)) return STALE;
      ({ operations, dropped, resolverName } = preDecided ?? (await decide(deps, job, planned, similar, usage)));
    }

    const counts = { added: 0, updated: 0, deleted: 0, unchanged: 0 };
    const memoryIds: string[] = [];
    const actor = `job:${job.id}`;
    const event = (memoryId: string, type: memoryRepo.MemoryEventType, oldContent: string | null, newContent: string | null) => ({
      tenantId: job.tenantId,
      memoryId,
      userId: job.userId,
      event: type,
      oldContent,
      newContent,
      jobId: job.id,
      actor,
    });
    const rowFor = (fact: ExtractedFact, content: string, embedding: number[]): memoryRepo.NewMemoryRow => ({
      tenantId: job.tenantId,
      userId: job.userId,
      agentId: job.agentId,
      runId: job.runId,
      content,
      contentHash: contentHash(content),
      embedding,
      importance: fact.importance,
      category: fact.category,
      metadata: payload.metadata,
      occurredAt: fact.occurred_at ? new Date(fact.occurred_at) : job.createdAt,
      expiresAt: expiryFor(governed.settings.retention, fact.category, now),
      createdAt: now,
      sourceJobId: job.id,
      source: fact.source_message_indexes ? { messageIndexes: fact.source_message_indexes } : null,
    });

    // When the replaced fact stopped being true: when the new one began (as the transcript dates
    // it, or when the job was accepted); see supersededAt.
    const endOf = (target: { occurredAt: Date }, fact: ExtractedFact): Date =>
      supersededAt(target, fact.occurred_at ? new Date(fact.occurred_at) : job.createdAt, now);

    if (!payload.infer) {
      // infer: false stores every user message as written, like POST /memories.
      const stored = await storeAsGiven(tx, {
        tenantId: job.tenantId,
        userId: job.userId,
        rows: planned.map((p) => rowFor(p.fact, p.fact.content, p.embedding)),
        actor,
        jobId: job.id,
        now,
      });
      expiredErased += stored.expiredErased;
      counts.added += stored.memories.length;
      memoryIds.push(...stored.memories.map((m) => m.id));
    }

    for (const op of payload.infer ? operations : []) {
      const plannedFact = planned[op.factIndex];
      if (!plannedFact) continue;
      if (op.operation === 'NOOP') {
        counts.unchanged += 1;
        continue;
      }
      if (op.operation === 'ADD') {
        const [inserted] = await memoryRepo.insertMemoriesSkippingDuplicates(tx, [rowFor(plannedFact.fact, plannedFact.fact.content, plannedFact.embedding)]);
        if (!inserted) {
          counts.unchanged += 1;
          continue;
        }
        await memoryRepo.insertEvents(tx, [event(inserted.id, 'ADD', null, inserted.content)]);
        counts.added += 1;
        memoryIds.push(inserted.id);
        continue;
      }
      const target = await memoryRepo.findMemory(tx, job.tenantId, op.targetMemoryId, job.userId);
      if (op.operation === 'DELETE') {
        // Superseded without a replacement: the row and its history stay, recall stops seeing it.
        const superseded = target ? await memoryRepo.supersedeMemories(tx, job.tenantId, [target.id], endOf(target, plannedFact.fact), null) : [];
        if (superseded.length === 0 || !target) {
          counts.unchanged += 1;
          continue;
        }
        await memoryRepo.insertEvents(tx, [event(target.id, 'DELETE', target.content, null)]);
        counts.deleted += 1;
        memoryIds.push(target.id);
        continue;
      }
      // UPDATE: the new fact replaces the old, which keeps its row with valid_to and a link.
      const content = governMerged(op.content.trim(), plannedFact.fact.content, governed.settings);
      const embedding = content === plannedFact.fact.content ? plannedFact.embedding : (await deps.embedder.embed([content], usage))[0]!;
      if (!target || target.validTo !== null) {
        // The target changed since resolution (another job got there first): keep the fact as an add.
        const [inserted] = await memoryRepo.insertMemoriesSkippingDuplicates(tx, [rowFor(plannedFact.fact, content, embedding)]);
        if (inserted) {
          await memoryRepo.insertEvents(tx, [event(inserted.id, 'ADD', null, inserted.content)]);
          counts.added += 1;
          memoryIds.push(inserted.id);
        } else counts.unchanged += 1;
        continue;
      }
      if (contentHash(content) === contentHash(target.content)) {
        counts.unchanged += 1;
        continue;
      }
      // Supersede first: the partial unique index only covers current rows.
      await memoryRepo.supersedeMemories(tx, job.tenantId, [target.id], endOf(target, plannedFact.fact), null);
      const [inserted] = await memoryRepo.insertMemoriesSkippingDuplicates(tx, [rowFor(plannedFact.fact, content, embedding)]);
      const replacementId = inserted?.id ?? (await memoryRepo.findCurrentByHashes(tx, job.tenantId, job.userId, [contentHash(content)]))[0]?.id ?? null;
      if (replacementId) await memoryRepo.setSupersededBy(tx, job.tenantId, target.id, replacementId);
      await memoryRepo.insertEvents(tx, [
        event(target.id, 'SUPERSEDE', target.content, content),
        ...(inserted ? [event(inserted.id, 'UPDATE', target.content, content)] : []),
      ]);
      counts.updated += 1;
      if (replacementId) memoryIds.push(replacementId);
    }

    const result: JobResult = {
      ...counts,
      memory_ids: memoryIds,
      usage: usageDto(usage),
      providers: {
        extractor: payload.infer ? deps.extractor.name : 'none (infer: false)',
        resolver: resolverName,
        embedder: deps.embedder.name,
      },
      ...(dropped > 0 ? { dropped_operations: dropped } : {}),
      skipped: governed.skipped,
    };
    await jobsRepo.markSucceeded(tx, job.tenantId, job.id, result, deps.config.jobs.transcriptRetentionHours === 0);
    return result;
  });
  if (expiredErased > 0) deps.onMemoriesExpired?.(expiredErased);
  return outcome;
}

function usageDto(usage: Usage): JobResult['usage'] {
  return {
    llm_calls: usage.llmCalls,
    embedding_calls: usage.embeddingCalls,
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
  };
}

/** What earlier attempts recorded on the row (`result.usage` of a job not yet succeeded), else zero. */
function usageCarriedFrom(result: unknown): Usage {
  const usage = emptyUsage();
  const saved = result && typeof result === 'object' && 'usage' in result ? (result as { usage?: unknown }).usage : undefined;
  if (!saved || typeof saved !== 'object') return usage;
  const count = (key: string) => {
    const value = (saved as Record<string, unknown>)[key];
    return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
  };
  usage.llmCalls = count('llm_calls');
  usage.embeddingCalls = count('embedding_calls');
  usage.promptTokens = count('prompt_tokens');
  usage.completionTokens = count('completion_tokens');
  return usage;
}

/** infer: false: each user message becomes one memory as written; other roles are not stored. */
function verbatimFacts(payload: JobPayload, jobCreatedAt: Date): ExtractedFact[] {
  return payload.messages.flatMap((message, index) => {
    const content = message.content.trim();
    if (message.role !== 'user' || content.length === 0) return [];
    return [
      {
        content,
        importance: 5,
        category: null,
        occurred_at: message.created_at ?? jobCreatedAt.toISOString(),
        source_message_indexes: [index],
      },
    ];
  });
}

function isRetryable(error: unknown): boolean {
  if (isDatabaseUnavailable(error)) return true;
  return typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === true;
}

const PUBLIC_MESSAGES: Record<string, string> = {
  llm_timeout: 'the language model did not answer in time',
  llm_rate_limited: 'the language model endpoint rate-limited the request',
  llm_unavailable: 'the language model endpoint was unavailable',
  llm_invalid_output: 'the language model did not return valid structured output, even after a correction',
  llm_request_rejected: 'the language model endpoint rejected the request',
  embedding_unavailable: 'the embedding endpoint was unavailable',
  embedding_rejected: 'the embedding endpoint rejected the request',
  embedding_input_too_long: 'a text was longer than the embedding model accepts',
  database_unavailable: 'the database was unavailable',
  resolution_contended: "the user's memories kept changing while the job decided; it is retried",
  invalid_job_payload: 'the stored job payload is not valid',
};

/** A code and a fixed message safe to show the caller: never model output, transcript text or a stack. */
function toJobError(error: unknown): JobError {
  if (isDatabaseUnavailable(error)) return { code: 'database_unavailable', message: PUBLIC_MESSAGES.database_unavailable! };
  if (error && typeof error === 'object' && 'name' in error && error.name === 'ZodError') {
    return { code: 'invalid_job_payload', message: PUBLIC_MESSAGES.invalid_job_payload! };
  }
  const code = error && typeof error === 'object' && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  if (code && PUBLIC_MESSAGES[code]) return { code, message: PUBLIC_MESSAGES[code] };
  return { code: 'internal', message: 'the job failed with an internal error' };
}

import { createHash } from 'node:crypto';
import { SCOPES, requireScope, resolveUserId, visibleUser } from '../auth/principal.js';
import { withTenant } from '../db/tenant.js';
import { lastStatement } from '../db/client.js';
import { DomainError, notFound } from '../shared/errors.js';
import type { RequestContext } from '../shared/context.js';
import type { JobQueue } from '../queue/types.js';
import { EXTRACTION_KIND } from './job-kind.js';
import * as jobsRepo from './jobs-repository.js';
import type { ExtractBody, JobDto, JobPayload, JobResult } from './schemas.js';
import { redactTranscript } from '../governance/door.js';
import { noneSkipped } from '../governance/facts.js';
import { tenantSettings } from '../settings/service.js';

/** Key order never changes a hash: the same body sent twice hashes the same. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export interface AcceptedJob {
  job_id: string;
  status: JobDto['status'];
  status_url: string;
}

/**
 * Accepts a transcript: the job row (the durable outbox) commits first, then the queue is told.
 * If the queue is down the job is still accepted; the sweeper enqueues it later.
 */
export async function acceptExtraction(ctx: RequestContext, queue: JobQueue, body: ExtractBody, idempotencyKey: string | undefined): Promise<AcceptedJob> {
  requireScope(ctx.principal, SCOPES.write);
  const { tenantId } = ctx.principal;
  const userId = resolveUserId(ctx.principal, body.user_id);
  const given: JobPayload = { messages: body.messages, metadata: body.metadata ?? {}, infer: body.infer, instructions: body.instructions, categories: body.categories };
  // The hash is of the body as sent (a replay matches whatever the settings say since); only a
  // digest of it is kept.
  const bodyHash = createHash('sha256')
    .update(stableStringify({ user_id: userId, agent_id: body.agent_id ?? null, run_id: body.run_id ?? null, ...given }))
    .digest('hex');
  const settings = await tenantSettings(ctx.services.database, tenantId);
  const payload = redactTranscript(given, settings.pii.mode);
  const job = {
    tenantId,
    userId,
    agentId: body.agent_id ?? null,
    runId: body.run_id ?? null,
    idempotencyKey: idempotencyKey ?? null,
    bodyHash,
    payload,
    createdAt: ctx.services.clock(),
  };
  // The insert is its transaction's only statement, so its COMMIT goes down with it. A key already
  // taken inserts nothing; that job is then read in a transaction of its own, which sees it even
  // when its own transaction committed while the insert waited on it.
  const insertedRow = await withTenant(ctx.services.database, tenantId, (tx) => {
    lastStatement(tx);
    return jobsRepo.insertJob(tx, job);
  });
  const inserted = insertedRow !== undefined;
  const row =
    insertedRow ??
    (await withTenant(
      ctx.services.database,
      tenantId,
      (tx) => {
        lastStatement(tx);
        return jobsRepo.findJobByIdempotencyKey(tx, tenantId, userId, idempotencyKey!);
      },
      { readOnly: true },
    ));
  if (!row) throw new Error('idempotency key conflict without a visible row');
  if (!inserted && row.bodyHash !== bodyHash) {
    throw new DomainError('idempotency_conflict', 'this Idempotency-Key was already used with a different body');
  }
  if (inserted) await queue.enqueue({ kind: EXTRACTION_KIND, tenantId, jobId: row.id });
  return { job_id: row.id, status: row.status, status_url: `/jobs/${row.id}` };
}

export async function getJob(ctx: RequestContext, id: string): Promise<JobDto> {
  requireScope(ctx.principal, SCOPES.read);
  const { tenantId } = ctx.principal;
  const row = await withTenant(ctx.services.database, tenantId, (tx) => jobsRepo.findJob(tx, tenantId, id, visibleUser(ctx.principal)), { readOnly: true });
  if (!row) throw notFound('job');
  const dto: JobDto = { job_id: row.id, status: row.status, created_at: row.createdAt.toISOString() };
  // Before success `result` holds only the usage of failed attempts (see markForRetry).
  if (row.result && row.status === 'succeeded') {
    const result = row.result as Partial<JobResult>;
    // Jobs that finished before skipped counts existed skipped nothing.
    dto.result = { ...result, skipped: result.skipped ?? noneSkipped() } as JobResult;
  }
  if (row.error) dto.error = row.error;
  if (row.finishedAt) dto.finished_at = row.finishedAt.toISOString();
  return dto;
}

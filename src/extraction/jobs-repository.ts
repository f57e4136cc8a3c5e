import { and, eq, sql } from 'drizzle-orm';
import { query, type Db } from '../db/client.js';
import { extractionJobs, type JobStatus } from '../db/schema.js';

export type JobRow = typeof extractionJobs.$inferSelect;

export interface NewJob {
  tenantId: string;
  userId: string;
  agentId: string | null;
  runId: string | null;
  idempotencyKey: string | null;
  bodyHash: string;
  payload: unknown;
  createdAt: Date;
}

/** Inserts the job, or returns the row already holding the idempotency key (inserted = false). */
export async function insertJobOrGetExisting(tx: Db, job: NewJob): Promise<{ row: JobRow; inserted: boolean }> {
  const [inserted] = await tx
    .insert(extractionJobs)
    .values({ ...job, updatedAt: job.createdAt, runAfter: job.createdAt })
    .onConflictDoNothing({ target: [extractionJobs.tenantId, extractionJobs.idempotencyKey] })
    .returning();
  if (inserted) return { row: inserted, inserted: true };
  const [existing] = await tx
    .select()
    .from(extractionJobs)
    .where(and(eq(extractionJobs.tenantId, job.tenantId), eq(extractionJobs.idempotencyKey, job.idempotencyKey!)))
    .limit(1);
  if (!existing) throw new Error('idempotency key conflict without a visible row');
  return { row: existing, inserted: false };
}

export async function findJob(tx: Db, tenantId: string, id: string, userId?: string): Promise<JobRow | undefined> {
  const [row] = await tx
    .select()
    .from(extractionJobs)
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), userId === undefined ? undefined : eq(extractionJobs.userId, userId)))
    .limit(1);
  return row;
}

/**
 * Takes a job for processing: a queued job whose time has come, or a running one whose lease ran
 * out (its worker died). Returns undefined when the job is finished, gone, or another worker's.
 */
export async function claimJob(tx: Db, tenantId: string, id: string, leaseMs: number): Promise<JobRow | undefined> {
  const [row] = await tx
    .update(extractionJobs)
    .set({
      status: 'running',
      attempts: sql`${extractionJobs.attempts} + 1`,
      lockedUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
      startedAt: sql`coalesce(${extractionJobs.startedAt}, now())`,
      updatedAt: sql`now()`,
    })
    .where(
      and(
        eq(extractionJobs.tenantId, tenantId),
        eq(extractionJobs.id, id),
        sql`(${extractionJobs.status} = 'queued' or (${extractionJobs.status} = 'running' and ${extractionJobs.lockedUntil} < now()))`,
      ),
    )
    .returning();
  return row;
}

/** Locks the job row for the apply transaction; the caller checks it is still its to finish. */
export async function lockJob(tx: Db, tenantId: string, id: string): Promise<{ status: JobStatus; attempts: number } | undefined> {
  const rows = await query<{ status: JobStatus; attempts: number }>(
    tx,
    sql`select status, attempts from extraction_jobs where tenant_id = ${tenantId} and id = ${id} for update`,
  );
  return rows[0];
}

export async function markSucceeded(tx: Db, tenantId: string, id: string, result: unknown, purgePayload: boolean): Promise<void> {
  await tx
    .update(extractionJobs)
    .set({
      status: 'succeeded',
      result,
      error: null,
      lockedUntil: null,
      finishedAt: sql`now()`,
      updatedAt: sql`now()`,
      ...(purgePayload ? { payload: null } : {}),
    })
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id)));
}

/**
 * A retryable failure: back to queued, due again after the backoff, with the error kept for GET
 * /jobs. `partial` (what the attempts spent so far) waits in `result` until the job succeeds;
 * GET /jobs shows `result` only then.
 */
export async function markForRetry(tx: Db, tenantId: string, id: string, error: { code: string; message: string }, delayMs: number, partial?: unknown): Promise<void> {
  await tx
    .update(extractionJobs)
    .set({
      status: 'queued',
      error,
      ...(partial === undefined ? {} : { result: partial }),
      lockedUntil: null,
      runAfter: sql`now() + make_interval(secs => ${delayMs / 1000})`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), eq(extractionJobs.status, 'running')));
}

export async function markFailed(tx: Db, tenantId: string, id: string, error: { code: string; message: string }, partial?: unknown): Promise<void> {
  await tx
    .update(extractionJobs)
    .set({ status: 'failed', error, ...(partial === undefined ? {} : { result: partial }), lockedUntil: null, finishedAt: sql`now()`, updatedAt: sql`now()` })
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), sql`${extractionJobs.status} <> 'succeeded'`));
}

/** Keys of jobs that are due (queued and not touched for `staleAfterMs`) or whose lease expired. */
export async function dueJobs(tx: Db, staleAfterMs: number, limit: number): Promise<Array<{ tenantId: string; id: string }>> {
  const rows = await query<{ tenant_id: string; id: string }>(
    tx,
    sql`select tenant_id, id from engram_due_jobs(now() - make_interval(secs => ${staleAfterMs / 1000}), ${limit})`,
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id }));
}

/** Drops transcripts of finished jobs older than the retention window. */
export async function purgeExpiredTranscripts(tx: Db, tenantId: string, retentionHours: number): Promise<number> {
  const rows = await tx
    .update(extractionJobs)
    .set({ payload: null })
    .where(
      and(
        eq(extractionJobs.tenantId, tenantId),
        sql`${extractionJobs.status} in ('succeeded', 'failed')`,
        sql`${extractionJobs.payload} is not null`,
        sql`${extractionJobs.finishedAt} < now() - make_interval(hours => ${retentionHours})`,
      ),
    )
    .returning({ id: extractionJobs.id });
  return rows.length;
}

import { and, eq, sql } from 'drizzle-orm';
import { query, queryText, type Db } from '../db/client.js';
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

/** What accepting a job needs of its row. */
export interface AcceptedJobRow {
  id: string;
  status: JobStatus;
  bodyHash: string;
}

// Fixed text: drizzle's insert builder (every column mapped, every row returned whole) was most of
// an accepted extraction's own CPU (`npm run bench -- ops --profile`).
const INSERT_JOB = `
      insert into extraction_jobs (tenant_id, user_id, agent_id, run_id, idempotency_key, body_hash, payload, created_at, updated_at, run_after)
      values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::timestamptz, $8::timestamptz, $8::timestamptz)
      on conflict (tenant_id, user_id, idempotency_key) do nothing
      returning id, status, body_hash`;
const FIND_BY_IDEMPOTENCY_KEY = `
      select id, status, body_hash from extraction_jobs
      where tenant_id = $1 and user_id = $2 and idempotency_key = $3 limit 1`;

/** Inserts the job; nothing when its idempotency key is taken (findJobByIdempotencyKey reads that one). */
export async function insertJob(tx: Db, job: NewJob): Promise<AcceptedJobRow | undefined> {
  const [inserted] = await queryText<RawAcceptedJob>(tx, INSERT_JOB, [
    job.tenantId,
    job.userId,
    job.agentId,
    job.runId,
    job.idempotencyKey,
    job.bodyHash,
    JSON.stringify(job.payload),
    job.createdAt.toISOString(),
  ]);
  return inserted && acceptedJob(inserted);
}

/** The job holding an idempotency key, which belongs to one user of the tenant (another user's identical key is another job). */
export async function findJobByIdempotencyKey(tx: Db, tenantId: string, userId: string, idempotencyKey: string): Promise<AcceptedJobRow | undefined> {
  const [existing] = await queryText<RawAcceptedJob>(tx, FIND_BY_IDEMPOTENCY_KEY, [tenantId, userId, idempotencyKey]);
  return existing && acceptedJob(existing);
}

type RawAcceptedJob = { id: string; status: JobStatus; body_hash: string };
const acceptedJob = (r: RawAcceptedJob): AcceptedJobRow => ({ id: r.id, status: r.status, bodyHash: r.body_hash });

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
 * out (its worker died; `tookOver` says so). Returns undefined when the job is finished, gone, or
 * another worker's.
 */
export async function claimJob(tx: Db, tenantId: string, id: string, leaseMs: number): Promise<{ row: JobRow; tookOver: boolean } | undefined> {
  // Sent together, run in this order: the update finds the row locked by the select, and nothing
  // when there is none. The select is started first and both take the same steps through drizzle,
  // so it reaches the connection first (were it second, every claim would read as a takeover).
  const [[before], [row]] = await Promise.all([
    query<{ status: JobStatus }>(tx, sql`select status from extraction_jobs where tenant_id = ${tenantId} and id = ${id} for update`),
    tx
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
      .returning(),
  ]);
  return row && before ? { row, tookOver: before.status === 'running' } : undefined;
}

/**
 * Extends the lease of the attempt that claimed the job (its `attempts` number), while it runs.
 * False when the job is no longer that attempt's: finished, erased, or taken over.
 */
export async function renewLease(tx: Db, tenantId: string, id: string, attempts: number, leaseMs: number): Promise<boolean> {
  const rows = await tx
    .update(extractionJobs)
    .set({ lockedUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), eq(extractionJobs.status, 'running'), eq(extractionJobs.attempts, attempts)))
    .returning({ id: extractionJobs.id });
  return rows.length > 0;
}

/** Milliseconds until a running job's lease lapses (0 when it has), by the database's clock. */
export async function leaseRemainingMs(tx: Db, tenantId: string, id: string): Promise<number | undefined> {
  const [row] = await query<{ ms: number | string | null }>(
    tx,
    sql`select greatest(0, extract(epoch from (locked_until - now())) * 1000) as ms from extraction_jobs where tenant_id = ${tenantId} and id = ${id} and status = 'running'`,
  );
  return row?.ms == null ? undefined : Number(row.ms);
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
export async function markForRetry(
  tx: Db,
  tenantId: string,
  id: string,
  attempts: number,
  error: { code: string; message: string },
  delayMs: number,
  partial?: unknown,
): Promise<void> {
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
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), eq(extractionJobs.status, 'running'), eq(extractionJobs.attempts, attempts)));
}

/**
 * The job failed for good: its transcript goes at once (nothing will ever read it again, and a
 * failed job must not keep personal data longer than a succeeded one). Only the attempt that
 * holds the job may fail it.
 */
export async function markFailed(tx: Db, tenantId: string, id: string, attempts: number, error: { code: string; message: string }, partial?: unknown): Promise<void> {
  await tx
    .update(extractionJobs)
    .set({
      status: 'failed',
      error,
      payload: null,
      ...(partial === undefined ? {} : { result: partial }),
      lockedUntil: null,
      finishedAt: sql`now()`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(extractionJobs.tenantId, tenantId), eq(extractionJobs.id, id), eq(extractionJobs.status, 'running'), eq(extractionJobs.attempts, attempts)));
}

/** Keys of jobs that are due (queued and not touched for `staleAfterMs`) or whose lease expired. */
export async function dueJobs(tx: Db, staleAfterMs: number, limit: number): Promise<Array<{ tenantId: string; id: string }>> {
  const rows = await query<{ tenant_id: string; id: string }>(
    tx,
    sql`select tenant_id, id from engram_due_jobs(now() - make_interval(secs => ${staleAfterMs / 1000}), ${limit})`,
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id }));
}

/** Whether one job is due now: queued and its time has come, or running with a lapsed lease. */
export async function isJobDue(tx: Db, tenantId: string, id: string): Promise<boolean> {
  const rows = await query<{ id: string }>(
    tx,
    sql`select id from extraction_jobs where tenant_id = ${tenantId} and id = ${id}
        and ((status = 'queued' and run_after <= now()) or (status = 'running' and locked_until < now()))`,
  );
  return rows.length > 0;
}

/** Jobs by state across tenants (counts only), for metrics. */
export async function countJobsByState(tx: Db): Promise<Record<'queued' | 'running' | 'failed', number>> {
  const rows = await query<{ status: string; n: number | string }>(tx, sql`select status, n from engram_job_counts()`);
  const counts = { queued: 0, running: 0, failed: 0 };
  for (const row of rows) if (row.status === 'queued' || row.status === 'running' || row.status === 'failed') counts[row.status] = Number(row.n);
  return counts;
}

/** Drops the transcripts of at most `limit` jobs that finished before `finishedBefore`, across tenants. */
export async function purgeTranscripts(tx: Db, finishedBefore: Date, limit: number): Promise<number> {
  const [row] = await query<{ n: number }>(tx, sql`select engram_purge_transcripts(${finishedBefore.toISOString()}::timestamptz, ${limit}) as n`);
  return Number(row?.n ?? 0);
}

/** Forgets the idempotency keys of at most `limit` finished jobs accepted before `createdBefore`, across tenants. */
export async function expireIdempotencyKeys(tx: Db, createdBefore: Date, limit: number): Promise<number> {
  const [row] = await query<{ n: number }>(tx, sql`select engram_expire_idempotency_keys(${createdBefore.toISOString()}::timestamptz, ${limit}) as n`);
  return Number(row?.n ?? 0);
}

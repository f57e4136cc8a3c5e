/**
 * The generic background-work queue. A job is a row in its owner's table (the durable outbox) and
 * a kind; the module that owns a kind registers how to run one job and how to find due ones. A
 * queue only decides when and where a job runs, so losing its contents loses no job.
 */

/** One job of one kind, as queues carry it: keys only, never its payload. */
export interface JobRef {
  kind: string;
  tenantId: string;
  jobId: string;
}

/** A job key without its kind, as a kind's due-job finder returns it. */
export interface DueJob {
  tenantId: string;
  jobId: string;
}

export interface JobError {
  code: string;
  message: string;
}

/** How one processing attempt ended, for the queue implementation to act on. */
export type JobOutcome =
  | { kind: 'succeeded' }
  | { kind: 'skipped'; reason: 'finished' | 'gone' }
  /** Another worker holds the job's lease; `retryAfterMs`: when that lease lapses if not renewed. */
  | { kind: 'skipped'; reason: 'busy'; retryAfterMs?: number }
  | { kind: 'retry'; delayMs: number; error: JobError }
  | { kind: 'failed'; error: JobError };

/** Job counts by state, read from the kind's table (the outbox), for metrics. */
export type JobStateCounts = Record<'queued' | 'running' | 'failed', number>;

/** What the module owning a kind of job registers with the queue. */
export interface JobKind {
  readonly name: string;
  /** Runs one attempt. Claims the job itself (its lease lives in the kind's table). */
  process(ref: DueJob): Promise<JobOutcome>;
  /**
   * Jobs that should be running: queued and due (untouched for `staleAfterMs`), or running with a
   * lapsed lease. Across tenants; keys only.
   */
  findDue(staleAfterMs: number, limit: number): Promise<DueJob[]>;
  /** Whether one job is still due now: the sweeper's re-check before it re-sends a job. */
  isDue(ref: DueJob): Promise<boolean>;
  /** Counts by state (metrics); omitted by kinds that keep no such table. */
  countByState?(): Promise<JobStateCounts>;
}

/**
 * Background work that is not a job of its own but a recurring bounded sweep (retention, expiry):
 * every worker process runs it on its interval. `run` does one bounded pass and returns how many
 * rows it handled; it must be safe to run in several processes at once.
 */
export interface PeriodicTask {
  readonly name: string;
  readonly intervalMs: number;
  run(): Promise<number>;
}

/** What a queue reports for metrics; every method is optional to call. */
export interface QueueObserver {
  enqueueFailed(kind: string): void;
  requeued(kind: string, count: number): void;
}

export interface JobQueue {
  readonly kind: 'bullmq' | 'database';
  /** Registers a kind of job; before `startWorker`, and in every process that enqueues or works it. */
  register(kind: JobKind): void;
  /** Registers a recurring sweep, run by every process that works jobs. */
  schedule(task: PeriodicTask): void;
  /** Called after the job row committed. Never throws: a job the queue missed is swept up later. */
  enqueue(ref: JobRef): Promise<void>;
  /**
   * Drops jobs from the queue and every trace of their ids it keeps (erasure); a job already
   * running finds its row gone and applies nothing.
   */
  remove(refs: JobRef[]): Promise<void>;
  /** Starts processing the registered kinds, and running the scheduled sweeps, in this process. */
  startWorker(): void;
  /** Jobs waiting or delayed (not running) in the queue itself. */
  depth(): Promise<number>;
  /** Counts by kind and state from the kinds' tables (the outbox), for metrics. */
  stateCounts(): Promise<Array<{ kind: string; counts: JobStateCounts }>>;
  ping(): Promise<void>;
  /**
   * Stops taking jobs and lets the ones in hand finish; the queue can still enqueue (an API
   * draining its last requests). A no-op where no worker runs.
   */
  stopWorker(): Promise<void>;
  /** Stops taking jobs, lets the ones in hand finish, then releases connections. */
  close(): Promise<void>;
}

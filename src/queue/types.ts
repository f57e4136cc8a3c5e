import type { JobOutcome, JobRef } from '../extraction/pipeline.js';

export type JobProcessor = (ref: JobRef) => Promise<JobOutcome>;

/**
 * Where accepted extraction jobs wait. The job row in PostgreSQL is always the durable record;
 * a queue only decides when and where a job runs, so losing its contents loses no job.
 */
export interface JobQueue {
  readonly kind: 'bullmq' | 'database';
  /** Called after the job row committed. Never throws: a job the queue missed is swept up later. */
  enqueue(ref: JobRef): Promise<void>;
  /** Drops jobs from the queue (erasure); a job already running finds its row gone and applies nothing. */
  remove(refs: JobRef[]): Promise<void>;
  /** Starts processing in this process. */
  startWorker(processor: JobProcessor): void;
  /** Jobs waiting or delayed (not running). */
  depth(): Promise<number>;
  ping(): Promise<void>;
  /**
   * Stops taking jobs and lets the ones in hand finish; the queue can still enqueue (an API
   * draining its last requests). A no-op where no worker runs.
   */
  stopWorker(): Promise<void>;
  /** Stops taking jobs, lets the ones in hand finish, then releases connections. */
  close(): Promise<void>;
}

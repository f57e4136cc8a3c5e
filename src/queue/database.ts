import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { withAppRole } from '../db/tenant.js';
import * as jobsRepo from '../extraction/jobs-repository.js';
import type { JobRef } from '../extraction/pipeline.js';
import type { JobProcessor, JobQueue } from './types.js';

export interface DatabaseQueueOptions {
  config: Config;
  database: Database;
  logger: Logger;
  /** How often to look for due jobs when nothing nudged the runner. */
  pollIntervalMs?: number;
}

/**
 * The queue without Redis: the extraction_jobs table is the queue. The runner polls for due rows
 * (and is nudged on enqueue), claims each atomically, and runs at most `concurrency` at a time.
 * Jobs accepted before a crash are due rows after the restart; a job whose worker died is due
 * again once its lease expires.
 */
export class DatabaseJobQueue implements JobQueue {
  readonly kind = 'database';
  private processor: JobProcessor | undefined;
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private nudgedWhilePolling = false;
  private stopped = false;
  private readonly pollIntervalMs: number;

  constructor(private readonly options: DatabaseQueueOptions) {
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
  }

  async enqueue(_ref: JobRef): Promise<void> {
    this.nudge();
  }

  async remove(_refs: JobRef[]): Promise<void> {
    // The rows are the queue: erasure deleted them already.
  }

  startWorker(processor: JobProcessor): void {
    this.processor = processor;
    this.timer = setInterval(() => this.nudge(), this.pollIntervalMs);
    this.timer.unref();
    this.nudge();
  }

  private nudge(): void {
    if (!this.processor || this.stopped) return;
    if (this.polling) {
      // A poll is under way and may have read the due rows already: look again when it ends.
      this.nudgedWhilePolling = true;
      return;
    }
    this.polling = this.poll()
      .catch((error: unknown) => this.options.logger.warn({ err: (error as Error).name }, 'job poll failed'))
      .finally(() => {
        this.polling = undefined;
        if (this.nudgedWhilePolling) {
          this.nudgedWhilePolling = false;
          this.nudge();
        }
      });
  }

  private async poll(): Promise<void> {
    const { config, database } = this.options;
    const free = config.jobs.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const due = await withAppRole(database, (tx) => jobsRepo.dueJobs(tx, 0, free + this.inFlight.size));
    for (const ref of due) {
      if (this.stopped || this.inFlight.size >= config.jobs.concurrency) break;
      if (this.inFlight.has(ref.id)) continue;
      let takeNext = false;
      const run = this.processor!({ tenantId: ref.tenantId, jobId: ref.id })
        .then((outcome) => {
          // After a retryable failure (the database may be struggling) the poll timer paces us.
          takeNext = outcome.kind !== 'retry';
        })
        .catch((error: unknown) => this.options.logger.error({ jobId: ref.id, err: (error as Error).name }, 'job processing crashed'))
        .finally(() => {
          // The slot is free only once the job has left inFlight: a nudge before that found no
          // room, and the next due job waited for the poll timer.
          this.inFlight.delete(ref.id);
          if (takeNext) this.nudge();
        });
      this.inFlight.set(ref.id, run);
    }
  }

  async depth(): Promise<number> {
    const due = await withAppRole(this.options.database, (tx) => jobsRepo.dueJobs(tx, 0, 10_000));
    return due.length;
  }

  async ping(): Promise<void> {}

  async stopWorker(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.polling;
    await Promise.all(this.inFlight.values());
  }

  async close(): Promise<void> {
    await this.stopWorker();
  }
}

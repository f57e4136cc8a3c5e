import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { withAppRole } from '../db/tenant.js';
import * as jobsRepo from '../extraction/jobs-repository.js';
import type { JobRef } from '../extraction/pipeline.js';
import type { JobProcessor, JobQueue } from './types.js';
import { withTimeout } from '../shared/timeout.js';

export const QUEUE_NAME = 'extraction';

interface JobData {
  tenantId: string;
  jobId: string;
}

export interface BullQueueOptions {
  config: Config;
  database: Database;
  logger: Logger;
}

/**
 * BullMQ carries only (tenant, job id): transcripts never reach Redis, so a Redis snapshot holds
 * no personal data and erasure only has to drop ids. Retries and backoff are decided by the job
 * row (its attempts), not by BullMQ's counter, so a redelivery never costs an attempt.
 */
export class BullJobQueue implements JobQueue {
  readonly kind = 'bullmq';
  readonly queue: Queue<JobData>;
  private readonly connection: Redis;
  private worker: Worker<JobData> | undefined;
  private workerConnection: Redis | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(private readonly options: BullQueueOptions) {
    const url = options.config.redisUrl;
    if (!url) throw new Error('REDIS_URL is required for the BullMQ queue');
    // Producer commands fail fast while Redis is down; the sweeper re-enqueues what was missed.
    this.connection = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    this.connection.on('error', () => {});
    this.queue = new Queue<JobData>(QUEUE_NAME, { connection: this.connection, prefix: options.config.jobs.queuePrefix });
    this.queue.on('error', () => {});
  }

  async enqueue(ref: JobRef): Promise<void> {
    try {
      await withTimeout(
        this.queue.add('extract', { tenantId: ref.tenantId, jobId: ref.jobId }, { jobId: ref.jobId, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } }),
        2000,
      );
    } catch (error) {
      this.options.logger.warn({ jobId: ref.jobId, err: (error as Error).name }, 'could not enqueue to Redis; the sweeper will');
    }
  }

  async remove(refs: JobRef[]): Promise<void> {
    await Promise.all(
      refs.map(async (ref) => {
        try {
          await this.queue.remove(ref.jobId);
        } catch {
          // Locked by a worker right now: that worker finds the row gone and applies nothing.
        }
      }),
    );
  }

  startWorker(processor: JobProcessor): void {
    const { config, logger } = this.options;
    this.workerConnection = new Redis(config.redisUrl!, { maxRetriesPerRequest: null });
    this.workerConnection.on('error', () => {});
    const lockDuration = Math.min(30_000, config.jobs.leaseMs);
    this.worker = new Worker<JobData>(
      QUEUE_NAME,
      async (job: Job<JobData>, token?: string) => {
        const outcome = await processor({ tenantId: job.data.tenantId, jobId: job.data.jobId });
        if (outcome.kind === 'retry') {
          await job.moveToDelayed(Date.now() + outcome.delayMs, token);
          throw new DelayedError();
        }
        if (outcome.kind === 'failed') throw new UnrecoverableError(outcome.error.code);
        return outcome.kind;
      },
      {
        connection: this.workerConnection,
        prefix: config.jobs.queuePrefix,
        concurrency: config.jobs.concurrency,
        lockDuration,
        stalledInterval: lockDuration,
        maxStalledCount: 1000,
      },
    );
    this.worker.on('error', (error) => logger.warn({ err: error.name }, 'queue worker error'));
    // Every process that works jobs also re-enqueues the ones Redis lost (a restart or a flush).
    this.startSweeper();
  }

  private startSweeper(): void {
    const { config } = this.options;
    const tick = () => {
      this.sweeping ??= this.sweepOnce()
        .then(() => undefined)
        .catch((error: unknown) => this.options.logger.warn({ err: (error as Error).name }, 'queue sweep failed'))
        .finally(() => {
          this.sweeping = undefined;
        });
    };
    this.sweeper = setInterval(tick, config.jobs.sweepIntervalMs);
    this.sweeper.unref();
    tick();
  }

  /** Re-adds due job rows that Redis no longer holds (lost in a restart, or their worker died). */
  async sweepOnce(): Promise<number> {
    const { config, database } = this.options;
    const due = await withAppRole(database, (tx) => jobsRepo.dueJobs(tx, config.jobs.staleAfterMs, 500));
    let requeued = 0;
    for (const ref of due) {
      const existing = await this.queue.getJob(ref.id);
      if (existing) {
        const state = await existing.getState();
        if (state !== 'completed' && state !== 'failed' && state !== 'unknown') continue;
        await existing.remove().catch(() => {});
      }
      await this.enqueue({ tenantId: ref.tenantId, jobId: ref.id });
      requeued += 1;
    }
    if (requeued > 0) this.options.logger.info({ requeued }, 'sweeper re-enqueued jobs');
    return requeued;
  }

  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('wait', 'delayed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async ping(): Promise<void> {
    await this.connection.ping();
  }

  async stopWorker(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.sweeping;
    // Waits for the jobs in hand; takes no new ones meanwhile.
    if (this.worker) await this.worker.close();
  }

  async close(): Promise<void> {
    await this.stopWorker();
    await this.queue.close();
    this.workerConnection?.disconnect();
    this.connection.disconnect();
  }
}

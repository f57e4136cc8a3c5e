import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { withTimeout } from '../shared/timeout.js';
import { KindRegistry, PeriodicRunner } from './registry.js';
import type { JobKind, JobQueue, JobRef, JobStateCounts, PeriodicTask, QueueObserver } from './types.js';

/** The one BullMQ queue every kind of job shares (the name predates kinds; Redis keys keep it). */
export const QUEUE_NAME = 'extraction';

interface JobData {
  /** Absent on entries enqueued before jobs had kinds: they fail here and the sweeper re-sends them. */
  kind?: string;
  tenantId: string;
  jobId: string;
}

export interface BullQueueOptions {
  config: Config;
  logger: Logger;
  observer?: QueueObserver;
}

/**
 * BullMQ's own lock and stalled check, derived from the job lease: a dead worker's job is seen as
 * stalled within 2 × lockDuration, and its lease lapses within one lease period, so with the
 * defaults (lease 30 s) a killed worker's jobs run again within about 30 s.
 */
export function bullTimings(leaseMs: number): { lockDuration: number; stalledInterval: number } {
  const lockDuration = Math.min(15_000, leaseMs);
  return { lockDuration, stalledInterval: lockDuration };
}

/** Events-stream entries read per XRANGE call while erasing job ids from it. */
const EVENTS_PAGE = 1000;

/**
 * BullMQ carries only (kind, tenant, job id): payloads never reach Redis, so a Redis snapshot holds
 * no personal data and erasure only has to drop ids. Retries and backoff are decided by the job
 * row (its attempts), not by BullMQ's counter, so a redelivery never costs an attempt.
 */
export class BullJobQueue implements JobQueue {
  readonly kind = 'bullmq';
  readonly queue: Queue<JobData>;
  private readonly connection: Redis;
  private readonly kinds = new KindRegistry();
  private readonly periodic: PeriodicRunner;
  private worker: Worker<JobData> | undefined;
  private workerConnection: Redis | undefined;

  constructor(private readonly options: BullQueueOptions) {
    const url = options.config.redisUrl;
    if (!url) throw new Error('REDIS_URL is required for the BullMQ queue');
    // Producer commands fail fast while Redis is down; the sweeper re-enqueues what was missed.
    this.connection = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    this.connection.on('error', () => {});
    this.queue = new Queue<JobData>(QUEUE_NAME, { connection: this.connection, prefix: options.config.jobs.queuePrefix });
    this.queue.on('error', () => {});
    this.periodic = new PeriodicRunner(options.logger);
    this.periodic.add({ name: 'queue-sweep', intervalMs: options.config.jobs.sweepIntervalMs, run: () => this.sweepOnce() });
  }

  register(kind: JobKind): void {
    this.kinds.register(kind);
  }

  schedule(task: PeriodicTask): void {
    this.periodic.add(task);
  }

  async enqueue(ref: JobRef): Promise<void> {
    await this.add(ref);
  }

  /** Adds the job to Redis; false (logged and counted) when Redis could not take it. */
  private async add(ref: JobRef): Promise<boolean> {
    try {
      await withTimeout(
        this.queue.add(
          ref.kind,
          { kind: ref.kind, tenantId: ref.tenantId, jobId: ref.jobId },
          { jobId: ref.jobId, removeOnComplete: true, removeOnFail: { age: 7 * 24 * 3600 } },
        ),
        2000,
      );
      return true;
    } catch (error) {
      this.options.observer?.enqueueFailed(ref.kind);
      this.options.logger.warn({ jobId: ref.jobId, kind: ref.kind, err: (error as Error).name }, 'could not enqueue to Redis; the sweeper will');
      return false;
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
    // Last, since removing a job writes a "removed" event naming it.
    try {
      await this.dropFromEventsStream(new Set(refs.map((r) => r.jobId)));
    } catch (error) {
      this.options.logger.warn({ err: (error as Error).name }, 'could not drop erased job ids from the queue events stream');
    }
  }

  /**
   * Deletes the events-stream entries that name these jobs. The stream is capped by BullMQ
   * (10,000 entries by default), so one pass over it is bounded.
   */
  private async dropFromEventsStream(jobIds: Set<string>): Promise<number> {
    if (jobIds.size === 0) return 0;
    const key = `${this.options.config.jobs.queuePrefix}:${QUEUE_NAME}:events`;
    let start = '-';
    let dropped = 0;
    for (;;) {
      const page = (await this.connection.xrange(key, start, '+', 'COUNT', EVENTS_PAGE)) as Array<[string, string[]]>;
      const doomed = page.filter(([, fields]) => fields.some((value, i) => i % 2 === 1 && fields[i - 1] === 'jobId' && jobIds.has(value))).map(([id]) => id);
      if (doomed.length > 0) dropped += await this.connection.xdel(key, ...doomed);
      if (page.length < EVENTS_PAGE) return dropped;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  startWorker(): void {
    if (this.worker) return;
    const { config, logger } = this.options;
    this.workerConnection = new Redis(config.redisUrl!, { maxRetriesPerRequest: null });
    this.workerConnection.on('error', () => {});
    const { lockDuration, stalledInterval } = bullTimings(config.jobs.leaseMs);
    this.worker = new Worker<JobData>(
      QUEUE_NAME,
      async (job: Job<JobData>, token?: string) => {
        const kind = job.data.kind === undefined ? undefined : this.kinds.get(job.data.kind);
        if (!kind) {
          // An entry from before kinds, or of a kind this process does not know: let it go from
          // Redis; its row is the job, and the sweeper sends it again while it is due.
          logger.warn({ jobId: job.id, kind: job.data.kind }, 'queue entry of no registered kind dropped');
          return 'skipped';
        }
        const outcome = await kind.process({ tenantId: job.data.tenantId, jobId: job.data.jobId });
        const delayMs = outcome.kind === 'retry' ? outcome.delayMs : outcome.kind === 'skipped' && outcome.reason === 'busy' ? outcome.retryAfterMs : undefined;
        if (delayMs !== undefined) {
          // A busy job comes back when its holder's lease would lapse: if that worker died, the
          // job resumes then, rather than waiting for the sweeper.
          await job.moveToDelayed(Date.now() + delayMs, token);
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
        stalledInterval,
        maxStalledCount: 1000,
      },
    );
    this.worker.on('error', (error) => logger.warn({ err: error.name }, 'queue worker error'));
    // Every process that works jobs also re-enqueues the ones Redis lost, and runs the sweeps.
    this.periodic.start();
  }

  /**
   * Re-adds due jobs that Redis no longer holds (lost in a restart, or their worker died). A job
   * missing from Redis is re-checked in the database before it is sent: it may have finished
   * (and left Redis) since the due list was read.
   */
  async sweepOnce(): Promise<number> {
    let total = 0;
    for (const kind of this.kinds.all()) {
      const due = await kind.findDue(this.options.config.jobs.staleAfterMs, 500);
      let requeued = 0;
      for (const ref of due) {
        const existing = await this.queue.getJob(ref.jobId);
        if (existing) {
          const state = await existing.getState();
          if (state !== 'completed' && state !== 'failed' && state !== 'unknown') continue;
        }
        if (!(await kind.isDue(ref))) continue;
        if (existing) await existing.remove().catch(() => {});
        if (await this.add({ kind: kind.name, ...ref })) requeued += 1;
      }
      if (requeued > 0) {
        this.options.observer?.requeued(kind.name, requeued);
        this.options.logger.info({ kind: kind.name, requeued }, 'sweeper re-enqueued jobs');
      }
      total += requeued;
    }
    return total;
  }

  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('wait', 'delayed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  stateCounts(): Promise<Array<{ kind: string; counts: JobStateCounts }>> {
    return this.kinds.stateCounts();
  }

  async ping(): Promise<void> {
    await this.connection.ping();
  }

  async stopWorker(): Promise<void> {
    await this.periodic.stop();
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

import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { KindRegistry, PeriodicRunner } from './registry.js';
import type { DueJob, JobKind, JobQueue, JobRef, JobStateCounts, PeriodicTask } from './types.js';
import { detachedFromRequest } from '../shared/timeout.js';

export interface DatabaseQueueOptions {
  config: Config;
  logger: Logger;
  /** How often to look for due jobs when nothing nudged the runner. */
  pollIntervalMs?: number;
}

/**
 * The queue without Redis: the kinds' tables are the queue. The runner polls every kind for due
 * rows (and is nudged on enqueue), each kind claims its job atomically, and at most `concurrency`
 * run at a time. Jobs accepted before a crash are due rows after the restart; a job whose worker
 * died is due again once its lease lapses.
 */
export class DatabaseJobQueue implements JobQueue {
  readonly kind = 'database';
  private readonly kinds = new KindRegistry();
  private readonly periodic: PeriodicRunner;
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private nudgedWhilePolling = false;
  private started = false;
  private stopped = false;
  private readonly pollIntervalMs: number;

  constructor(private readonly options: DatabaseQueueOptions) {
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.periodic = new PeriodicRunner(options.logger);
  }

  register(kind: JobKind): void {
    this.kinds.register(kind);
  }

  schedule(task: PeriodicTask): void {
    this.periodic.add(task);
  }

  async enqueue(_ref: JobRef): Promise<void> {
    this.nudge();
  }

  async remove(_refs: JobRef[]): Promise<void> {
    // The rows are the queue: erasure deleted them already.
  }

  startWorker(): void {
    if (this.started) return;
    this.started = true;
    this.timer = setInterval(() => this.nudge(), this.pollIntervalMs);
    this.timer.unref();
    this.periodic.start();
    this.nudge();
  }

  private nudge(): void {
    if (!this.started || this.stopped) return;
    if (this.polling) {
      // A poll is under way and may have read the due rows already: look again when it ends.
      this.nudgedWhilePolling = true;
      return;
    }
    // An enqueue from a request nudges: the poll and its jobs must not run under that request's deadline.
    this.polling = detachedFromRequest(() => this.poll())
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
    const { concurrency } = this.options.config.jobs;
    for (const kind of this.kinds.all()) {
      const free = concurrency - this.inFlight.size;
      if (free <= 0) return;
      const due = await kind.findDue(0, free + this.inFlight.size);
      for (const ref of due) {
        if (this.stopped || this.inFlight.size >= concurrency) return;
        this.run(kind, ref);
      }
    }
  }

  private run(kind: JobKind, ref: DueJob): void {
    const key = `${kind.name}:${ref.jobId}`;
    if (this.inFlight.has(key)) return;
    let takeNext = false;
    const run = kind
      .process(ref)
      .then((outcome) => {
        // After a retryable failure (the database may be struggling) the poll timer paces us.
        takeNext = outcome.kind !== 'retry';
      })
      .catch((error: unknown) => this.options.logger.error({ jobId: ref.jobId, kind: kind.name, err: (error as Error).name }, 'job processing crashed'))
      .finally(() => {
        // The slot is free only once the job has left inFlight: a nudge before that found no
        // room, and the next due job waited for the poll timer.
        this.inFlight.delete(key);
        if (takeNext) this.nudge();
      });
    this.inFlight.set(key, run);
  }

  async depth(): Promise<number> {
    let depth = 0;
    for (const kind of this.kinds.all()) depth += (await kind.findDue(0, 10_000)).length;
    return depth;
  }

  stateCounts(): Promise<Array<{ kind: string; counts: JobStateCounts }>> {
    return this.kinds.stateCounts();
  }

  async ping(): Promise<void> {}

  async stopWorker(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.periodic.stop();
    await this.polling;
    await Promise.all(this.inFlight.values());
  }

  async close(): Promise<void> {
    await this.stopWorker();
  }
}

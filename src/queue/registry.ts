import type { Logger } from 'pino';
import type { JobKind, JobStateCounts, PeriodicTask } from './types.js';

/** The kinds registered with one queue, by name. */
export class KindRegistry {
  private readonly kinds = new Map<string, JobKind>();

  register(kind: JobKind): void {
    if (this.kinds.has(kind.name)) throw new Error(`job kind "${kind.name}" is registered twice`);
    this.kinds.set(kind.name, kind);
  }

  get(name: string): JobKind | undefined {
    return this.kinds.get(name);
  }

  all(): JobKind[] {
    return [...this.kinds.values()];
  }

  async stateCounts(): Promise<Array<{ kind: string; counts: JobStateCounts }>> {
    const counted = this.all().filter((k) => k.countByState);
    return Promise.all(counted.map(async (k) => ({ kind: k.name, counts: await k.countByState!() })));
  }
}

/**
 * Runs each periodic task on its own interval in this process, never two runs of one task at
 * once; a failed run is logged and the next tick tries again.
 */
export class PeriodicRunner {
  private readonly tasks: PeriodicTask[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();
  private started = false;

  constructor(private readonly logger: Logger) {}

  add(task: PeriodicTask): void {
    if (this.tasks.some((t) => t.name === task.name)) throw new Error(`periodic task "${task.name}" is scheduled twice`);
    this.tasks.push(task);
    if (this.started) this.startTask(task);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const task of this.tasks) this.startTask(task);
  }

  private startTask(task: PeriodicTask): void {
    const tick = () => {
      if (!this.started || this.running.has(task.name)) return;
      const run = task
        .run()
        .then((handled) => {
          if (handled > 0) this.logger.info({ task: task.name, handled }, 'periodic task ran');
        })
        .catch((error: unknown) => this.logger.warn({ task: task.name, err: (error as Error).name }, 'periodic task failed'))
        .finally(() => this.running.delete(task.name));
      this.running.set(task.name, run);
    };
    const timer = setInterval(tick, task.intervalMs);
    timer.unref();
    this.timers.push(timer);
    tick();
  }

  /** Stops the timers and waits for runs under way. */
  async stop(): Promise<void> {
    this.started = false;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.all(this.running.values());
  }
}

/**
 * Renews a job's lease every `intervalMs` while `work` runs, so a live worker keeps its job however
 * long it takes while a dead one's lease lapses within one lease period. `renew` answers false when
 * the job is no longer this attempt's (taken over or erased): renewal stops, the attempt's own
 * apply step then finds it is not the owner.
 */
export async function withLeaseHeartbeat<T>(intervalMs: number, renew: () => Promise<boolean>, logger: Logger, work: () => Promise<T>): Promise<T> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const beat = () => {
    timer = setTimeout(() => {
      renew().then(
        (owned) => {
          if (owned && !stopped) beat();
        },
        (error: unknown) => {
          // The database may be back by the next beat; the lease is long enough to miss one.
          logger.warn({ err: (error as Error).name }, 'could not renew a job lease');
          if (!stopped) beat();
        },
      );
    }, intervalMs);
    timer.unref();
  };
  beat();
  try {
    return await work();
  } finally {
    stopped = true;
    if (timer) clearTimeout(timer);
  }
}

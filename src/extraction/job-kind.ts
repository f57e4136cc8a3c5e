import { withAppRole, withTenant } from '../db/tenant.js';
import type { JobOutcomeLabel } from '../observability/metrics.js';
import type { JobKind, JobQueue, PeriodicTask } from '../queue/types.js';
import * as jobsRepo from './jobs-repository.js';
import { processJob, type PipelineDeps } from './pipeline.js';

/** Extraction's name in the generic queue (BullMQ job name, metrics label). */
export const EXTRACTION_KIND = 'extraction';

/** Rows one sweep statement touches, and statements per run: bounded work per tick. */
const SWEEP_BATCH = 500;
const SWEEP_BATCHES_PER_RUN = 20;

export interface ExtractionJobsOptions {
  /** Told how each attempt ended and how long it took (metrics). */
  observeJob?: (outcome: JobOutcomeLabel, durationMs: number) => void;
}

/** Extraction as a kind of job: the pipeline runs it, its table (the outbox) says what is due. */
export function extractionJobKind(deps: PipelineDeps, options: ExtractionJobsOptions = {}): JobKind {
  const { database } = deps;
  return {
    name: EXTRACTION_KIND,
    async process(ref) {
      const started = performance.now();
      try {
        const outcome = await processJob(deps, ref);
        options.observeJob?.(outcome.kind, performance.now() - started);
        return outcome;
      } catch (error) {
        options.observeJob?.('crashed', performance.now() - started);
        throw error;
      }
    },
    async findDue(staleAfterMs, limit) {
      const rows = await withAppRole(database, (tx) => jobsRepo.dueJobs(tx, staleAfterMs, limit));
      return rows.map((r) => ({ tenantId: r.tenantId, jobId: r.id }));
    },
    isDue: (ref) => withTenant(database, ref.tenantId, (tx) => jobsRepo.isJobDue(tx, ref.tenantId, ref.jobId)),
    countByState: () => withAppRole(database, (tx) => jobsRepo.countJobsByState(tx)),
  };
}

/**
 * The retention sweeps of extraction jobs: transcripts of finished jobs older than
 * TRANSCRIPT_RETENTION_HOURS (0: right away; success and failure drop them already, this catches
 * the rest), and idempotency keys older than IDEMPOTENCY_TTL_HOURS. Bounded batches, skipping
 * rows another process is sweeping.
 */
export function extractionSweeps(deps: Pick<PipelineDeps, 'config' | 'database'>): PeriodicTask[] {
  const { config, database } = deps;
  const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
  const inBatches = async (batch: () => Promise<number>) => {
    let total = 0;
    for (let i = 0; i < SWEEP_BATCHES_PER_RUN; i++) {
      const n = await batch();
      total += n;
      if (n < SWEEP_BATCH) break;
    }
    return total;
  };
  return [
    {
      name: 'extraction-transcript-retention',
      intervalMs: config.jobs.retentionSweepIntervalMs,
      run: () =>
        inBatches(() => withAppRole(database, (tx) => jobsRepo.purgeTranscripts(tx, hoursAgo(config.jobs.transcriptRetentionHours), SWEEP_BATCH))),
    },
    {
      name: 'extraction-idempotency-expiry',
      intervalMs: config.jobs.retentionSweepIntervalMs,
      run: () => inBatches(() => withAppRole(database, (tx) => jobsRepo.expireIdempotencyKeys(tx, hoursAgo(config.jobs.idempotencyTtlHours), SWEEP_BATCH))),
    },
  ];
}

/** Registers extraction jobs and their sweeps with a queue (every process that enqueues or works them). */
export function registerExtractionJobs(queue: JobQueue, deps: PipelineDeps, options: ExtractionJobsOptions = {}): void {
  queue.register(extractionJobKind(deps, options));
  for (const task of extractionSweeps(deps)) queue.schedule(task);
}

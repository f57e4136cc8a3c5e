import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ModelCall } from '../llm/types.js';
import type { JobStateCounts, QueueObserver } from '../queue/types.js';
import { withTimeout } from '../shared/timeout.js';

/**
 * Prometheus metrics for one runtime. Each runtime owns its Registry (never prom-client's global
 * one), so tests can build many apps in one process. Label values are bounded by construction:
 * route templates, statuses, outcomes and configured model names, never a tenant, user or raw id.
 */

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const WAIT_SECONDS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];
const MODEL_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120];
const CANDIDATES = [0, 1, 5, 10, 25, 50, 100, 250, 500, 1000];

/** How a job attempt ended in the worker: the pipeline's outcomes, plus a processor that threw. */
export type JobOutcomeLabel = 'succeeded' | 'failed' | 'retry' | 'skipped' | 'crashed';

export interface Metrics {
  readonly registry: Registry;
  observeHttp(method: string, route: string, status: number, durationMs: number): void;
  observeRecall(durationMs: number, candidates: number): void;
  observeJob(outcome: JobOutcomeLabel, durationMs: number): void;
  /** Time from a job's acceptance to its first start. */
  observeQueueWait(waitMs: number): void;
  observeModelCall(call: ModelCall): void;
  /** Where the queue-depth gauge reads from at scrape time. */
  setQueueDepth(source: () => Promise<number>): void;
  /** Where the outbox gauge (jobs by kind and state, from the database) reads from at scrape time. */
  setQueueStates(source: () => Promise<Array<{ kind: string; counts: JobStateCounts }>>): void;
  /** A job attempt took over a job whose worker's lease lapsed (that worker died or stalled). */
  observeLeaseExpiry(kind: string): void;
  /** Counts enqueue failures and sweeper re-queues, as the queue reports them. */
  readonly queueObserver: QueueObserver;
  /** Memories past their expires_at that the retention sweep erased (with their history). */
  observeMemoriesExpired(count: number): void;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  readonly contentType: string;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'engram_' });

  const httpRequests = new Counter({
    name: 'engram_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'engram_http_request_duration_seconds',
    help: 'HTTP request latency, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS,
    registers: [registry],
  });
  const recallDuration = new Histogram({
    name: 'engram_recall_duration_seconds',
    help: 'Recall latency: embedding the query, retrieving and scoring candidates.',
    buckets: SECONDS,
    registers: [registry],
  });
  const recallCandidates = new Histogram({
    name: 'engram_recall_candidates',
    help: 'Candidates scored per recall.',
    buckets: CANDIDATES,
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'engram_extraction_jobs_total',
    help: 'Extraction job attempts processed by this process, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const jobDuration = new Histogram({
    name: 'engram_extraction_job_duration_seconds',
    help: 'Extraction job attempt duration, by outcome.',
    labelNames: ['outcome'] as const,
    buckets: JOB_SECONDS,
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'engram_extraction_queue_wait_seconds',
    help: 'Time from a job being accepted to its first attempt starting.',
    buckets: WAIT_SECONDS,
    registers: [registry],
  });
  let depthSource: (() => Promise<number>) | undefined;
  let depthUnreadable = false;
  // Unlabelled gauges print 0 when empty, so an unreadable depth is left out by hand: a 0 would
  // say "no backlog" exactly when nobody knows.
  class OptionalGauge extends Gauge {
    override async get() {
      const metric = await super.get();
      return depthUnreadable ? { ...metric, values: [] } : metric;
    }
  }
  new OptionalGauge({
    name: 'engram_queue_depth',
    help: 'Jobs waiting in the queue (queued or delayed, not running), read at scrape time; absent when the queue cannot be read.',
    registers: [registry],
    async collect() {
      if (!depthSource) return;
      try {
        this.set(await withTimeout(depthSource(), 2000));
        depthUnreadable = false;
      } catch {
        // The queue is unreachable: report nothing rather than fail the scrape (readiness says why).
        depthUnreadable = true;
      }
    },
  });
  let statesSource: (() => Promise<Array<{ kind: string; counts: JobStateCounts }>>) | undefined;
  new Gauge({
    name: 'engram_queue_jobs',
    help: 'Jobs in the outbox (the database) by kind and state: queued, running, failed; absent when the database cannot be read.',
    labelNames: ['kind', 'state'] as const,
    registers: [registry],
    async collect() {
      if (!statesSource) return;
      try {
        const states = await withTimeout(statesSource(), 2000);
        this.reset();
        for (const { kind, counts } of states) {
          for (const [state, count] of Object.entries(counts)) this.set({ kind, state }, count);
        }
      } catch {
        this.reset();
      }
    },
  });
  const enqueueFailures = new Counter({
    name: 'engram_queue_enqueue_failures_total',
    help: 'Jobs accepted into the outbox that the queue (Redis) could not take at once; the sweeper sends them later.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const leaseExpiries = new Counter({
    name: 'engram_queue_lease_expiries_total',
    help: 'Jobs taken over after their worker stopped renewing its lease (it died or stalled).',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const requeues = new Counter({
    name: 'engram_queue_sweeper_requeues_total',
    help: 'Due jobs the sweeper sent to the queue again because the queue no longer held them.',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const modelCalls = new Counter({
    name: 'engram_model_calls_total',
    help: 'Calls to the chat and embedding endpoints, by kind, model and outcome.',
    labelNames: ['kind', 'model', 'outcome'] as const,
    registers: [registry],
  });
  const modelDuration = new Histogram({
    name: 'engram_model_call_duration_seconds',
    help: 'Latency of calls to the chat and embedding endpoints, by kind, model and outcome.',
    labelNames: ['kind', 'model', 'outcome'] as const,
    buckets: MODEL_SECONDS,
    registers: [registry],
  });
  const modelTokens = new Counter({
    name: 'engram_model_tokens_total',
    help: 'Tokens the endpoints reported, by kind, model and type (prompt or completion): the cost basis.',
    labelNames: ['kind', 'model', 'type'] as const,
    registers: [registry],
  });

  const memoriesExpired = new Counter({
    name: 'engram_memories_expired_total',
    help: 'Memories past their expires_at erased with their history, by the retention sweep or by a write for their user.',
    registers: [registry],
  });

  return {
    registry,
    contentType: registry.contentType,
    observeMemoriesExpired(count) {
      memoriesExpired.inc(count);
    },
    observeHttp(method, route, status, durationMs) {
      const labels = { method, route, status: String(status) };
      httpRequests.inc(labels);
      httpDuration.observe(labels, durationMs / 1000);
    },
    observeRecall(durationMs, candidates) {
      recallDuration.observe(durationMs / 1000);
      recallCandidates.observe(candidates);
    },
    observeJob(outcome, durationMs) {
      jobs.inc({ outcome });
      jobDuration.observe({ outcome }, durationMs / 1000);
    },
    observeQueueWait(waitMs) {
      queueWait.observe(Math.max(0, waitMs) / 1000);
    },
    observeModelCall(call) {
      const labels = { kind: call.kind, model: call.model, outcome: call.outcome };
      modelCalls.inc(labels);
      modelDuration.observe(labels, call.durationMs / 1000);
      if (call.promptTokens > 0) modelTokens.inc({ kind: call.kind, model: call.model, type: 'prompt' }, call.promptTokens);
      if (call.completionTokens > 0) modelTokens.inc({ kind: call.kind, model: call.model, type: 'completion' }, call.completionTokens);
    },
    setQueueDepth(source) {
      depthSource = source;
    },
    setQueueStates(source) {
      statesSource = source;
    },
    observeLeaseExpiry(kind) {
      leaseExpiries.inc({ kind });
    },
    queueObserver: {
      enqueueFailed: (kind) => enqueueFailures.inc({ kind }),
      requeued: (kind, count) => requeues.inc({ kind }, count),
    },
    render: () => registry.metrics(),
  };
}

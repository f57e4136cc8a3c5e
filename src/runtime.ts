import type { Logger } from 'pino';
import { createLogger } from './observability/logger.js';
import type { Config } from './config.js';
import { resolveJwtSecret, resolveServerSecret } from './auth/dev-secret.js';
import { deriveServerKeys } from './auth/server-keys.js';
import { createTokenVerifier } from './auth/verifier.js';
import type { Database } from './db/client.js';
import { settleDatabaseEmbedder } from './db/embedder-record.js';
import { openDatabase, prepareDatabase } from './db/open.js';
import { warnIfSuperuserLogin } from './db/login-role.js';
import { EXTRACTION_KIND, registerExtractionJobs } from './extraction/job-kind.js';
import type { PipelineDeps } from './extraction/pipeline.js';
import type { EmbedderSpec } from './llm/embedders.js';
import { createProviders, type Providers } from './extraction/providers.js';
import { registerExtractionRoutes } from './extraction/routes.js';
import { memoryExpirySweep } from './governance/retention.js';
import { registerSettingsRoutes } from './settings/routes.js';
import { buildApp, type ReadinessCheck } from './http/app.js';
import { createRateLimiter } from './http/rate-limit.js';
import { registerQueueDashboard } from './queue/dashboard.js';
import { DatabaseJobQueue } from './queue/database.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import type { JobQueue } from './queue/types.js';
import type { Services } from './shared/context.js';
import { createNotifier } from './events/notifier.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { registerWebhookRoutes } from './webhooks/routes.js';
import { resolveWebhookKey } from './webhooks/secrets.js';

export interface Runtime {
  config: Config;
  services: Services;
  providers: Providers;
  queue: JobQueue;
  pipeline: PipelineDeps;
  metrics: Metrics;
  app: ReturnType<typeof buildApp>;
  /** Where a generated development secret lives, when one is in use. */
  devSecretFile: string | undefined;
  /** Starts the queue's worker (extraction jobs, the sweeps) in this process (WORKER=inline, or the worker entry). */
  startWorker(): void;
  /** Stops taking jobs and waits for the ones in hand (graceful shutdown); the API keeps serving. */
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: Logger;
  database?: Database;
  clock?: () => Date;
  providers?: Partial<Providers>;
}

/**
 * BullMQ when Redis is configured, else the database-backed runner; both over the kinds' job rows.
 * BullMQ and ioredis load only then: without Redis (the embedded start) they would hold ~30 MiB.
 */
export async function createQueue(config: Config, logger: Logger, metrics?: Metrics): Promise<JobQueue> {
  if (!config.redisUrl) return new DatabaseJobQueue({ config, logger });
  const { BullJobQueue } = await import('./queue/bullmq.js');
  return new BullJobQueue({ config, logger, ...(metrics ? { observer: metrics.queueObserver } : {}) });
}

/** Builds every long-lived part once; main.ts and the worker entry run it, tests drive it in-process. */
export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const database = options.database ?? (await openDatabase(config));
  let embedder: EmbedderSpec;
  try {
    await prepareDatabase(database, config.migrateOnStart);
    await warnIfSuperuserLogin(database, config.production, logger);
    // The database keeps the embedder it was filled with; a conflicting setting stops start-up here.
    // Held before the embedder check: a re-embed under way holds the lock, so the check waits for it.
    await database.holdServing?.();
    embedder = await settleDatabaseEmbedder(database, config);
  } catch (error) {
    if (!options.database) await database.close();
    throw error;
  }
  const { secret, generatedAt } = resolveJwtSecret(config);
  const verifier = createTokenVerifier({ ...config.auth, jwtSecret: secret });
  const metrics = createMetrics();
  const providers: Providers = { ...(await createProviders(config.llm, (call) => metrics.observeModelCall(call), embedder)), ...options.providers };
  // The local model takes about a second to load: in the background now, not in the first request.
  providers.embedder.warmUp?.();
  const queue = await createQueue(config, logger, metrics);
  metrics.setQueueDepth(() => queue.depth());
  metrics.setQueueStates(() => queue.stateCounts());
  const serverSecret = resolveServerSecret(config, secret);
  const notifier = createNotifier(config, database, logger);
  const webhookKey = resolveWebhookKey(config, serverSecret);
  const dispatcher = new WebhookDispatcher({ config, database, logger, key: webhookKey, notifier, registry: metrics.registry });
  const services: Services = {
    config,
    database,
    embedder: providers.embedder,
    clock: options.clock ?? (() => new Date()),
    logger,
    keys: deriveServerKeys(serverSecret),
    onUserErased: (tenantId, jobIds) => queue.remove(jobIds.map((jobId) => ({ kind: EXTRACTION_KIND, tenantId, jobId }))),
    metrics,
    notifier,
  };
  const pipeline: PipelineDeps = {
    config,
    database,
    logger,
    ...providers,
    onJobClaimed: (job) => {
      if (job.attempts === 1) metrics.observeQueueWait(Date.now() - job.createdAt.getTime());
    },
    onLeaseExpired: () => metrics.observeLeaseExpiry(EXTRACTION_KIND),
    onMemoriesExpired: (n) => metrics.observeMemoriesExpired(n),
  };
  registerExtractionJobs(queue, pipeline, { observeJob: (outcome, ms) => metrics.observeJob(outcome, ms) });
  queue.schedule(
    memoryExpirySweep({ database, intervalMs: config.jobs.retentionSweepIntervalMs, onErased: (n) => metrics.observeMemoriesExpired(n) }),
  );
  const rateLimiter = createRateLimiter({
    perMinute: config.http.rateLimitPerMinute,
    redisUrl: config.redisUrl,
    keyPrefix: config.jobs.queuePrefix,
    logger,
  });
  // Not critical: while Redis is down the outbox keeps accepting jobs and the sweeper sends them later.
  const readiness: ReadinessCheck[] = config.redisUrl ? [{ name: 'redis', critical: false, check: () => queue.ping() }] : [];
  const app = buildApp({
    services,
    verifier,
    readiness,
    metrics,
    rateLimiter,
    extraRoutes: [
      (a) => registerExtractionRoutes(a, services, queue),
      (a) => registerWebhookRoutes(a, services, { key: webhookKey, allowPrivate: config.webhooks.allowPrivate }),
      (a) => registerSettingsRoutes(a, services),
      (a) => registerQueueDashboard(a, queue),
    ],
  });
  let workerStarted = false;
  return {
    config,
    services,
    providers,
    queue,
    pipeline,
    metrics,
    app,
    devSecretFile: generatedAt,
    startWorker() {
      if (workerStarted) return;
      workerStarted = true;
      queue.startWorker();
      dispatcher.start();
    },
    async stopWorker() {
      await Promise.all([queue.stopWorker(), dispatcher.stop()]);
    },
    async close() {
      await rateLimiter?.close();
      await dispatcher.stop();
      await queue.close();
      await notifier.close();
      await providers.embedder.close?.();
      if (!options.database) await database.close();
    },
  };
}

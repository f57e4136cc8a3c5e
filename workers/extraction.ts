import { ConfigError, loadConfig } from '../src/config.js';
import { serveWorkerEndpoints } from '../src/observability/worker-http.js';
import { createRuntime } from '../src/runtime.js';

/**
 * A separate BullMQ worker process over the same modules as the API. SIGTERM: stop taking jobs,
 * finish the one in hand, close connections, exit. With WORKER_METRICS_PORT it also serves
 * /healthz and /metrics.
 */
try {
  const config = loadConfig();
  if (!config.redisUrl || !config.databaseUrl) {
    process.stderr.write('Invalid configuration: REDIS_URL and DATABASE_URL are required for `npm run worker`\n');
    process.exit(1);
  }
  const runtime = await createRuntime(config);
  const { logger } = runtime.services;
  runtime.startWorker();
  const http =
    config.workerMetricsPort === undefined
      ? undefined
      : serveWorkerEndpoints({ host: config.host, port: config.workerMetricsPort, metrics: runtime.metrics, logger });
  logger.info({ queue: runtime.queue.kind, concurrency: config.jobs.concurrency, extraction: runtime.providers.extractor.name }, 'engram worker started');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker shutting down');
    // Under the 10 s an orchestrator waits before SIGKILL. A job cut off here is not lost: its
    // row stays, and BullMQ's stalled check (or the sweeper) hands it to another worker.
    const force = setTimeout(() => {
      logger.error({ deadlineMs: 9_000 }, 'shutdown deadline passed; exiting with a job in hand');
      process.exit(1);
    }, 9_000);
    force.unref();
    http?.close();
    if (http && 'closeIdleConnections' in http) http.closeIdleConnections();
    runtime.close().then(
      () => {
        logger.info('worker stopped');
        process.exit(0);
      },
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `engram worker failed to start: ${(error as Error).message}`}\n`);
  process.exit(1);
}

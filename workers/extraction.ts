import { ConfigError, loadConfig } from '../src/config.js';
import { createRuntime } from '../src/runtime.js';

/**
 * A separate BullMQ worker process over the same modules as the API. SIGTERM: stop taking jobs,
 * finish the one in hand, close connections, exit.
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
  logger.info({ queue: runtime.queue.kind, concurrency: config.jobs.concurrency, extraction: runtime.providers.extractor.name }, 'engram worker started');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker shutting down');
    runtime.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `engram worker failed to start: ${(error as Error).message}`}\n`);
  process.exit(1);
}

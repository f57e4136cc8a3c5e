import { ConfigError, loadConfig, type Config } from './config.js';
import { startupBanner } from './banner.js';
import { createRuntime } from './runtime.js';
import { serveHttp } from './http/serve.js';

// Whatever this process creates (the embedded database under DATA_DIR above all) is the owner's
// alone: files 0600, folders 0700.
process.umask(0o077);

/** Under the 10 s that Docker and Kubernetes wait between SIGTERM and SIGKILL. */
const SHUTDOWN_DEADLINE_MS = 9_000;

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}

try {
  const runtime = await createRuntime(config);
  const { logger } = runtime.services;
  if (config.worker === 'inline') runtime.startWorker();
  const server = serveHttp({ fetch: runtime.app.fetch, port: config.port, hostname: config.host }, (info) => {
    // For a developer at a terminal or on the embedded default; production log streams stay pure JSON.
    if (process.stdout.isTTY || !config.databaseUrl) process.stdout.write(`${startupBanner(runtime, info.port)}\n`);
    logger.info({ port: info.port, database: runtime.services.database.kind, queue: runtime.queue.kind }, 'engram listening');
  });
  server.on('error', (error: NodeJS.ErrnoException) => {
    process.stderr.write(`engram failed to start: cannot listen on ${config.host}:${config.port} (${error.code ?? error.message})\n`);
    process.exit(1);
  });
  let stopping = false;
  /**
   * Graceful stop, well inside the 10 s an orchestrator waits before SIGKILL: stop accepting,
   * finish the requests and the job in hand, then close the queue and the database pool. A job
   * cut off by the deadline is not lost: its row stays, and its lease expiring hands it on.
   */
  const shutdown = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // close() ends idle keep-alive sockets once; busy ones become idle after their response.
    const closeIdle = () => ('closeIdleConnections' in server ? server.closeIdleConnections() : undefined);
    closeIdle();
    const idleSweep = setInterval(closeIdle, 100);
    try {
      await Promise.all([closed, runtime.stopWorker()]);
    } finally {
      clearInterval(idleSweep);
    }
    await runtime.close();
  };
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error({ deadlineMs: SHUTDOWN_DEADLINE_MS }, 'shutdown deadline passed; exiting with work in hand');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    force.unref();
    shutdown().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: (error as Error).name }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (error) {
  process.stderr.write(`engram failed to start: ${(error as Error).message}\n`);
  process.exit(1);
}

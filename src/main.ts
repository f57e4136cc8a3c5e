import { serve } from '@hono/node-server';
import { ConfigError, loadConfig, type Config } from './config.js';
import { startupBanner } from './banner.js';
import { createRuntime } from './runtime.js';

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
  const server = serve({ fetch: runtime.app.fetch, port: config.port, hostname: config.host }, (info) => {
    process.stdout.write(`${startupBanner(runtime, info.port)}\n`);
    logger.info({ port: info.port, database: runtime.services.database.kind, queue: runtime.queue.kind }, 'engram listening');
  });
  server.on('error', (error: NodeJS.ErrnoException) => {
    process.stderr.write(`engram failed to start: cannot listen on ${config.host}:${config.port} (${error.code ?? error.message})\n`);
    process.exit(1);
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    server.close(() => {
      runtime.close().finally(() => process.exit(0));
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
} catch (error) {
  process.stderr.write(`engram failed to start: ${(error as Error).message}\n`);
  process.exit(1);
}

import { serve } from '@hono/node-server';
import { ConfigError, loadConfig, type Config } from './config.js';
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
    const base = `http://${config.host}:${info.port}`;
    logger.info(
      {
        api: base,
        openapi: `${base}/openapi.json`,
        database: runtime.services.database.kind,
        embeddings: runtime.services.embedder.name,
        extraction: `${runtime.providers.extractor.name} + ${runtime.providers.resolver.name}`,
        queue: runtime.queue.kind,
        worker: config.worker,
      },
      'engram listening',
    );
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

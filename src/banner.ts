import path from 'node:path';
import type { Runtime } from './runtime.js';

/** The few lines a developer needs after `npm start`: where things are and how to get a token. */
export function startupBanner(runtime: Runtime, port: number): string {
  const { config, services, providers, queue } = runtime;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const database =
    services.database.kind === 'pglite'
      ? `embedded PostgreSQL (PGlite + pgvector) in ${path.resolve(config.dataDir, 'pg')}`
      : 'PostgreSQL at DATABASE_URL';
  const queueLine =
    queue.kind === 'bullmq'
      ? `BullMQ on REDIS_URL, worker ${config.worker === 'inline' ? 'in this process' : 'off (run `npm run worker`)'}`
      : 'in-process, durable in the database';
  const llm = config.llm.remote
    ? `${providers.extractor.name}, embeddings ${providers.embedder.name}`
    : `offline (no OPENAI_API_KEY / OPENAI_BASE_URL): heuristic extraction, embeddings ${providers.embedder.name}, no LLM`;
  // The token command must see the same DATA_DIR as this process to sign with the same secret.
  const dataDirPrefix = path.resolve(config.dataDir) === path.resolve('./.data') ? '' : `DATA_DIR=${config.dataDir} `;
  const token = runtime.devSecretFile
    ? `${dataDirPrefix}npm run token -- --tenant demo --user alice   (dev secret: ${runtime.devSecretFile})`
    : config.auth.jwtSecret
      ? 'npm run token -- --tenant demo --user alice   (signed with AUTH_JWT_SECRET)'
      : 'tokens come from your identity provider (AUTH_JWKS_URL)';
  return [
    `Engram API  ${base}   OpenAPI ${base}/openapi.json   docs ${base}/docs`,
    `  database  ${database}`,
    `  queue     ${queueLine}`,
    `  models    ${llm}`,
    `  token     ${token}`,
  ].join('\n');
}

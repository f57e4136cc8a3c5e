import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import pino from 'pino';
import postgres from 'postgres';
import { signDevToken } from '../src/auth/sign.js';
import { loadConfig, type Config } from '../src/config.js';
import { createRuntime, type Runtime } from '../src/runtime.js';
import { TEMPLATE_DB, adminUrl, databaseUrl } from '../test/support/env.js';

/**
 * The real service behind @hono/node-server on loopback, over a PostgreSQL database of its own
 * (cloned from the migrated test template), for the event and portability benchmarks.
 */
export interface BenchServer {
  /** The database's name, to look at it afterwards with `close({ keepDatabase: true })`. */
  database: string;
  base: string;
  config: Config;
  runtime: Runtime;
  owner: ReturnType<typeof postgres>;
  token(tenant: string, user: string, scope?: string): Promise<string>;
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export async function startBenchServer(env: Record<string, string> = {}): Promise<BenchServer> {
  const name = `engram_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name} template ${TEMPLATE_DB}`).catch(() => admin.unsafe(`create database ${name}`));
  } finally {
    await admin.end();
  }
  const secret = `bench-${randomUUID()}-${randomUUID()}`;
  const config = loadConfig({ DATABASE_URL: databaseUrl(name), MIGRATE_ON_START: 'true', AUTH_JWT_SECRET: secret, LOG_LEVEL: 'silent', EMBEDDINGS: 'lexical', ...env });
  const runtime = await createRuntime(config, { logger: pino({ level: 'silent' }) });
  const server = serve({ fetch: runtime.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const owner = postgres(databaseUrl(name), { max: 2, onnotice: () => {} });
  return {
    database: name,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    config,
    runtime,
    owner,
    token: (tenant, user, scope = 'memories:read memories:write memories:delete engram:admin') =>
      signDevToken({ secret, issuer: config.auth.issuer, audience: config.auth.audience, tenantClaim: config.auth.tenantClaim, tenant, user, scope, ttlSeconds: 3600 }),
    async close({ keepDatabase = false } = {}) {
      // The clients' keep-alive sockets would hold close() open.
      if ('closeAllConnections' in server) server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
      await owner.end();
      if (keepDatabase) return;
      const drop = postgres(adminUrl(), { max: 1, onnotice: () => {} });
      await drop.unsafe(`drop database if exists ${name} with (force)`).finally(() => drop.end());
    },
  };
}

/**
 * The in-process service a load benchmark drives (`bench biguser`, `bench tenant`): on the embedded
 * backend (in memory), or on PostgreSQL in a database of its own, dropped at the end unless named
 * (`--database`: made if missing and kept, so one large load serves several runs).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import postgres from 'postgres';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/client.js';
import { createRuntime, type Runtime } from '../src/runtime.js';
import { adminUrl, databaseUrl } from '../test/support/env.js';

/** What a load's end vacuums, as autovacuum soon would: memories and recall's copies of their words. */
export const VACUUM_AFTER_LOAD = 'vacuum (analyze) memories, memory_search';

export interface BenchRuntime {
  runtime: Runtime;
  database: Database;
  /** VACUUM (ANALYZE) memories and the text arm's copies, as a load's end would see it after autovacuum. */
  vacuum: () => Promise<void>;
  close: () => Promise<void>;
}

export async function openBenchRuntime(
  env: Record<string, string | undefined>,
  options: { backend: string; database?: string | undefined; clock?: (() => Date) | undefined },
): Promise<BenchRuntime> {
  const logger = pino({ level: 'silent' });
  if (options.backend === 'pglite') {
    const { openPglite } = await import('../src/db/pglite.js');
    const database = await openPglite({ dataDir: undefined });
    const runtime = await createRuntime({ ...loadConfig(env), migrateOnStart: true }, { logger, database, clock: options.clock });
    return {
      runtime,
      database,
      vacuum: async () => void (await database.client.query(VACUUM_AFTER_LOAD)),
      close: async () => {
        await runtime.close();
        await database.close();
      },
    };
  }
  const name = options.database ?? `engram_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`--database ${name}: lower-case letters, digits and _ only`);
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
  if (!exists) await admin.unsafe(`create database ${name}`);
  await admin.end();
  const runtime = await createRuntime(loadConfig({ ...env, DATABASE_URL: databaseUrl(name), MIGRATE_ON_START: 'true' }), { logger, clock: options.clock });
  return {
    runtime,
    database: runtime.services.database,
    vacuum: async () => {
      const owner = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
      await owner.unsafe(VACUUM_AFTER_LOAD);
      await owner.end();
    },
    close: async () => {
      await runtime.close();
      if (options.database) return;
      const a = postgres(adminUrl(), { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

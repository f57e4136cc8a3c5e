import type { Config } from '../config.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { assertServingRoleIsSafe, query, type Database } from './client.js';
import { MIGRATIONS_FOLDER } from './paths.js';

/** The configured database: PostgreSQL at DATABASE_URL, else embedded PGlite under DATA_DIR. Each driver loads only when used. */
export async function openDatabase(config: Config): Promise<Database> {
  if (config.databaseUrl) {
    const { dbConnectMs, dbAcquireMs } = config.timeouts;
    const { openPostgres } = await import('./postgres.js');
    return openPostgres({ url: config.databaseUrl, connectTimeoutMs: dbConnectMs, acquireTimeoutMs: dbAcquireMs });
  }
  const { openPglite } = await import('./pglite.js');
  return openPglite({ dataDir: config.dataDir });
}

/**
 * Migrates when asked, then refuses to serve unless the schema is current and row-level security
 * will hold: a service that starts on an unmigrated database answers every request with an error.
 */
export async function prepareDatabase(database: Database, migrate: boolean): Promise<void> {
  if (migrate) await database.migrate();
  await assertSchemaCurrent(database);
  await assertServingRoleIsSafe(database);
}

export class SchemaNotCurrentError extends Error {
  constructor(detail: string) {
    super(`the database schema is not current (${detail}): run \`npm run db:migrate\`, or start with MIGRATE_ON_START=true`);
    this.name = 'SchemaNotCurrentError';
  }
}

async function assertSchemaCurrent(database: Database): Promise<void> {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] };
  const [tables] = await query<{ memories: string | null }>(database.db, sql`select to_regclass('public.memories')::text as memories`);
  if (!tables?.memories) throw new SchemaNotCurrentError('no memories table');
  let applied: number;
  try {
    const [row] = await query<{ n: number | string }>(database.db, sql`select count(*) as n from drizzle.__drizzle_migrations`);
    applied = Number(row?.n ?? 0);
  } catch {
    // The application role itself may not read drizzle's bookkeeping; the tables exist, so trust them.
    return;
  }
  if (applied < journal.entries.length) throw new SchemaNotCurrentError(`${journal.entries.length - applied} migration(s) pending`);
}

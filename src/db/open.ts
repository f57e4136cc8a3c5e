import type { Config } from '../config.js';
import { assertServingRoleIsSafe, type Database } from './client.js';
import { openPostgres } from './postgres.js';

/** The configured database: PostgreSQL at DATABASE_URL, else embedded PGlite under DATA_DIR. */
export async function openDatabase(config: Config): Promise<Database> {
  if (config.databaseUrl) return openPostgres({ url: config.databaseUrl });
  const { openPglite } = await import('./pglite.js');
  return openPglite({ dataDir: config.dataDir });
}

/** Migrates when asked, then refuses to serve unless row-level security will hold. */
export async function prepareDatabase(database: Database, migrate: boolean): Promise<void> {
  if (migrate) await database.migrate();
  await assertServingRoleIsSafe(database);
}

import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { query, type Database } from './client.js';

/**
 * Defence in depth: requests run as `engram_app` under row-level security either way, but a
 * superuser login could `RESET ROLE` from inside a request transaction if SQL injection were ever
 * found. In production the login role should be the application role alone (README, compose).
 */
export async function warnIfSuperuserLogin(database: Database, production: boolean, logger: Logger): Promise<boolean> {
  // The embedded database has one user, a superuser, and nobody else can log in to it.
  if (!production || database.kind !== 'postgres') return false;
  const [me] = await query<{ rolname: string; rolsuper: boolean }>(
    database.db,
    sql`select rolname, rolsuper from pg_roles where rolname = session_user`,
  );
  if (!me?.rolsuper) return false;
  logger.warn(
    { role: me.rolname },
    'DATABASE_URL logs in as a superuser in production: use a login role that is only engram_app for the service, and an owner role for migrations (see README, "Running in production")',
  );
  return true;
}

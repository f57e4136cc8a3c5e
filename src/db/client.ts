import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { sql, type SQL } from 'drizzle-orm';
import type * as schema from './schema.js';

export type Schema = typeof schema;
/** Either driver's drizzle instance, or a transaction of it: repositories take this. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

/** The unprivileged role every request runs under (created by the security migration). */
export const APP_ROLE = 'engram_app';

export interface TransactionOptions {
  readOnly?: boolean;
}

export interface Database {
  readonly kind: 'postgres' | 'pglite';
  readonly db: Db;
  /** True when the login role is not the application role, so each transaction must SET ROLE. */
  readonly switchesRole: boolean;
  /**
   * Runs `work` in one transaction whose first act is `set_config(name, value, true)` for each of
   * `settings`, in order; commits when `work` resolves, rolls back when it throws. A read-only
   * transaction (`readOnly`) refuses writes, and its result may be returned before its COMMIT is
   * acknowledged: it has nothing to make durable.
   */
  inTransaction<T>(settings: ReadonlyArray<readonly [string, string]>, work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T>;
  migrate(): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Marks this process as one serving the database until close (PostgreSQL: a shared advisory
   * lock on a connection of its own), so that `db:reembed` refuses to run under it. PGlite has no
   * need: its DATA_DIR lock admits one process.
   */
  holdServing?(): Promise<void>;
  /** For `db:reembed`: true when no process serves the database, which then cannot start serving until close. */
  claimExclusive?(): Promise<boolean>;
}

/** The advisory lock (the two-key form: apart from the per-user locks' one-key space) that serving processes share. */
export const SERVING_LOCK: readonly [number, number] = [0x656e6772, 1];

/** The advisory lock migrations run under, so an API and a worker starting at once migrate one after the other. */
export const MIGRATION_LOCK: readonly [number, number] = [0x656e6772, 2];

/** Raw `execute` results differ by driver (an array for postgres.js, `{rows}` for PGlite). */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  if (result && typeof result === 'object' && 'rows' in result && Array.isArray(result.rows)) return result.rows as T[];
  return [];
}

/** `select set_config($1, $2, true), …` for the settings, one pair of parameters each. */
export function setConfigStatement(settings: ReadonlyArray<readonly [string, string]>): SQL {
  return sql`select ${sql.join(
    settings.map(([name, value]) => sql`set_config(${name}, ${value}, true)`),
    sql`, `,
  )}`;
}

/** The text setConfigStatement builds for `count` settings, their names and values as $1, $2, …. */
export function setConfigStatementText(count: number): string {
  return `select ${Array.from({ length: count }, (_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')}`;
}

/** Each open transaction's way to send its COMMIT with the next statement (postgres.ts). */
export const lastStatements = new WeakMap<Db, () => void>();

/**
 * Says that the next statement on `tx` is its last: its COMMIT then goes down with it, one write
 * and one answer instead of two (on PostgreSQL; elsewhere nothing). A statement after that one is
 * refused, so nothing can run outside the transaction's tenant. When none follows (work ends
 * first), the COMMIT is sent as usual. A transaction that writes still waits for its COMMIT's
 * answer before it returns; should that last statement fail, PostgreSQL ends the transaction with
 * a rollback instead, and the statement's error is the one thrown.
 */
export function lastStatement(tx: Db): void {
  lastStatements.get(tx)?.();
}

export async function query<T>(db: Db, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(statement));
}

/** The driver client under a drizzle database or transaction: postgres.js's or PGlite's. */
interface DriverClient {
  unsafe?: (text: string, parameters: never[]) => Promise<unknown>;
  query?: (text: string, parameters: unknown[]) => Promise<unknown>;
}

/**
 * One statement given as its text and parameters, sent straight to the driver under `db` (the
 * same connection and transaction): for the hot reads, whose fixed text drizzle would otherwise
 * build again on every request (measured: the largest part of a get's own CPU). Values travel
 * only as parameters; times come back as text (postgres.js, as drizzle set it up) or as Date
 * (PGlite), JSON as text or parsed, so callers accept both.
 */
export async function queryText<T>(db: Db, text: string, parameters: unknown[]): Promise<T[]> {
  const client = (db as unknown as { session: { client: DriverClient } }).session.client;
  const result = client.unsafe ? await client.unsafe(text, parameters as never[]) : await client.query!(text, parameters);
  return rowsOf<T>(result);
}

export class UnsafeRoleError extends Error {
  constructor(role: string, reason: string) {
    super(`refusing to serve requests as role "${role}": ${reason} (row-level security would not hold)`);
    this.name = 'UnsafeRoleError';
  }
}

/** Start-up guard: the role requests run under must be subject to row-level security. */
export async function assertServingRoleIsSafe(database: Database): Promise<void> {
  const rows = await query<{ rolname: string; rolsuper: boolean; rolbypassrls: boolean }>(
    database.db,
    sql`select rolname, rolsuper, rolbypassrls from pg_roles where rolname = ${APP_ROLE}`,
  );
  const role = rows[0];
  if (!role) throw new UnsafeRoleError(APP_ROLE, 'the role does not exist (run `npm run db:migrate`)');
  if (role.rolsuper) throw new UnsafeRoleError(APP_ROLE, 'it is a superuser');
  if (role.rolbypassrls) throw new UnsafeRoleError(APP_ROLE, 'it has BYPASSRLS');
  const owned = await query<{ tablename: string }>(
    database.db,
    sql`select tablename from pg_tables where schemaname = 'public' and tableowner = ${APP_ROLE}`,
  );
  if (owned.length > 0) throw new UnsafeRoleError(APP_ROLE, `it owns ${owned.map((t) => t.tablename).join(', ')}`);
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ACQUIRE_TIMEOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '3D000', // invalid_catalog_name: the database is gone or renamed
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
  '55000', // object_not_in_prerequisite_state: e.g. the database does not allow connections
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

/** An error `isDatabaseUnavailable` recognises, shaped like postgres.js's own connection errors. */
export function connectionError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * True when an error (or an error in its cause chain) means the database could not be reached.
 * The first error in the chain that names a code of its own decides: a model provider's error
 * wrapping a refused connection (its cause's ECONNREFUSED) is the provider's, not the database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 6; depth++) {
    if (typeof current === 'object' && 'code' in current && current.code != null) return UNAVAILABLE_CODES.has(String(current.code));
    current = typeof current === 'object' && 'cause' in current ? current.cause : undefined;
  }
  return false;
}

/** The PostgreSQL error code (SQLSTATE) of an error or its cause, if any. */
export function sqlState(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 6; depth++) {
    if (typeof current === 'object' && 'code' in current && typeof current.code === 'string' && /^[0-9A-Z]{5}$/.test(current.code)) {
      return current.code;
    }
    current = typeof current === 'object' && 'cause' in current ? current.cause : undefined;
  }
  return undefined;
}

/**
 * SQLSTATE class 22, data exception: a value the database cannot take (out of range, malformed,
 * not in the encoding). Only a request's values reach a statement, so it is the client's fault.
 */
export function isDataException(error: unknown): boolean {
  return sqlState(error)?.startsWith('22') ?? false;
}

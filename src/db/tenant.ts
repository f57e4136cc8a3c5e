import { APP_ROLE, type Database, type Db, type TransactionOptions } from './client.js';

/**
 * Runs `work` in one transaction bound to a tenant: the role is switched to the unprivileged
 * application role and app.tenant_id set, both transaction-local, so row-level security decides
 * what every statement can see and write, and nothing leaks to the next user of the connection.
 */
export async function withTenant<T>(database: Database, tenantId: string, work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T> {
  const role: Array<readonly [string, string]> = database.switchesRole ? [['role', APP_ROLE]] : [];
  return database.inTransaction([...role, ['app.tenant_id', tenantId]], work, options);
}

/** A transaction under the application role with no tenant: for cross-tenant queue bookkeeping only. */
export async function withAppRole<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  if (!database.switchesRole) return database.inTransaction([], work);
  return database.inTransaction([['role', APP_ROLE]], work);
}

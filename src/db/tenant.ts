import { APP_ROLE, type Database, type Db, type TransactionOptions } from './client.js';

/**
 * Runs `work` in one transaction bound to a tenant: the role is switched to the unprivileged
 * application role and app.tenant_id set, both transaction-local, so row-level security decides
 * what every statement can see and write, and nothing leaks to the next user of the connection.
 */
export async function withTenant<T>(database: Database, tenantId: string, work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T> {
  return database.inTransaction([...appRole(database), ['app.tenant_id', tenantId]], work, options);
}

/** A transaction under the application role with no tenant: for cross-tenant queue bookkeeping only. */
export async function withAppRole<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  return database.inTransaction(appRole(database), work);
}

/** The setting that switches to the application role, when the login role is another. */
function appRole(database: Database): Array<readonly [string, string]> {
  return database.switchesRole ? [['role', APP_ROLE]] : [];
}

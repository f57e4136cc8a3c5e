import { sql } from 'drizzle-orm';
import { APP_ROLE, type Database, type Db } from './client.js';

/**
 * Runs `work` in one transaction bound to a tenant: the role is switched to the unprivileged
 * application role and app.tenant_id set, both transaction-local, so row-level security decides
 * what every statement can see and write, and nothing leaks to the next user of the connection.
 */
export async function withTenant<T>(database: Database, tenantId: string, work: (tx: Db) => Promise<T>): Promise<T> {
  return database.db.transaction(async (tx) => {
    if (database.switchesRole) {
      await tx.execute(sql`select set_config('role', ${APP_ROLE}, true), set_config('app.tenant_id', ${tenantId}, true)`);
    } else {
      await tx.execute(sql`select set_config('app.tenant_id', ${tenantId}, true)`);
    }
    return work(tx as unknown as Db);
  });
}

/** A transaction under the application role with no tenant: for cross-tenant queue bookkeeping only. */
export async function withAppRole<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  return database.db.transaction(async (tx) => {
    if (database.switchesRole) await tx.execute(sql`select set_config('role', ${APP_ROLE}, true)`);
    return work(tx as unknown as Db);
  });
}

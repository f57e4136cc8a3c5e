import { openPostgres } from '../../src/db/postgres.js';
import { assertServingRoleIsSafe } from '../../src/db/client.js';
import { TEST_DATABASE_URL } from './env.js';

/** Migrates the shared test database once per run; test files isolate themselves by tenant. */
export default async function setup(): Promise<void> {
  const database = await openPostgres({ url: TEST_DATABASE_URL, maxConnections: 1 });
  try {
    await database.migrate();
    await assertServingRoleIsSafe(database);
  } finally {
    await database.close();
  }
}

import postgres from 'postgres';
import { openPostgres } from '../../src/db/postgres.js';
import { assertServingRoleIsSafe } from '../../src/db/client.js';
import { TEMPLATE_DB, TEST_DATABASE_URL, adminUrl, databaseUrl } from './env.js';

/**
 * Migrates the shared test database (files isolate themselves by tenant) and a template that
 * files needing a database of their own clone (see startTestApp's `isolated`).
 */
export default async function setup(): Promise<void> {
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 as one from pg_database where datname = ${TEMPLATE_DB}`;
    if (!exists) await admin.unsafe(`create database ${TEMPLATE_DB}`);
    // Databases a crashed earlier run left behind.
    const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like 'engram_iso_%'`;
    // Only those older than two hours: another run on this machine may be using newer ones.
    const cutoff = Math.floor(Date.now() / 1000) - 2 * 3600;
    for (const { datname } of leftovers) {
      const created = Number(/^engram_iso_(\d+)_/.exec(datname)?.[1] ?? 0);
      if (created < cutoff) await admin.unsafe(`drop database if exists ${datname} with (force)`);
    }
  } finally {
    await admin.end();
  }
  for (const url of [TEST_DATABASE_URL, databaseUrl(TEMPLATE_DB)]) {
    const database = await openPostgres({ url, maxConnections: 1 });
    try {
      await database.migrate();
      await assertServingRoleIsSafe(database);
    } finally {
      await database.close();
    }
  }
}

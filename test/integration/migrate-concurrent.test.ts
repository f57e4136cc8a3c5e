import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.js';
import { adminUrl, databaseUrl } from '../support/env.js';
import { TEST_BACKEND } from '../support/harness.js';

/** An API and a worker started at once on a new database both migrate it (MIGRATE_ON_START). */
describe.runIf(TEST_BACKEND === 'postgres')('two processes migrating a new database at once', () => {
  const name = `engram_migrate_${randomBytes(4).toString('hex')}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  afterAll(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  it('both succeed, one after the other, and the schema is migrated once', async () => {
    await admin.unsafe(`create database ${name}`);
    const [first, second] = await Promise.all([openPostgres({ url: databaseUrl(name) }), openPostgres({ url: databaseUrl(name) })]);
    try {
      const results = await Promise.allSettled([first.migrate(), second.migrate()]);
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok']);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
    const db = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
    try {
      const [row] = await db<{ n: string }[]>`select count(*) as n from drizzle.__drizzle_migrations`;
      const [distinct] = await db<{ n: string }[]>`select count(distinct hash) as n from drizzle.__drizzle_migrations`;
      expect(Number(row!.n)).toBeGreaterThan(0);
      expect(row!.n).toBe(distinct!.n);
    } finally {
      await db.end();
    }
  });
});

import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ROLE, assertServingRoleIsSafe, query, UnsafeRoleError, type Database, type Db } from '../../src/db/client.js';
import { openPostgres } from '../../src/db/postgres.js';
import { derivedTenantTables, tenantTables } from '../../src/db/schema.js';
import { withTenant } from '../../src/db/tenant.js';
import { TEST_DATABASE_URL } from '../support/env.js';
import { ownerSql, uniqueTenant } from '../support/harness.js';

/**
 * Row-level security in the database itself, below the HTTP layer: what a transaction running
 * under the application role can see and write, depending on the tenant it set (or did not set).
 */

type TenantTable = (typeof tenantTables)[number];

let database: Database;
const owner = ownerSql();
const tenantA = uniqueTenant('rls-a');
const tenantB = uniqueTenant('rls-b');

/** One row in every tenant table, written through withTenant (so under RLS) for `tenant`. */
async function seedTenant(tenant: string): Promise<void> {
  await withTenant(database, tenant, async (tx) => {
    const memoryId = randomUUID();
    await tx.execute(sql`
      insert into memories (tenant_id, id, user_id, content, content_hash, embedding)
      values (${tenant}, ${memoryId}, 'alice', ${`secret of ${tenant}`}, ${`hash-${tenant}`}, '[1,0,0]'::vector)`);
    await tx.execute(sql`
      insert into memory_events (tenant_id, memory_id, user_id, event, new_content, actor)
      values (${tenant}, ${memoryId}, 'alice', 'ADD', ${`secret of ${tenant}`}, 'user:alice')`);
    await tx.execute(sql`
      insert into extraction_jobs (tenant_id, user_id, body_hash, payload)
      values (${tenant}, 'alice', ${`body-${tenant}`}, ${JSON.stringify({ messages: [{ role: 'user', content: `transcript of ${tenant}` }] })}::jsonb)`);
    await tx.execute(sql`
      insert into erasures (tenant_id, subject_hash, scope, counts)
      values (${tenant}, ${`subject-${tenant}`}, 'user', '{"memories": 0}'::jsonb)`);
    await tx.execute(sql`
      insert into tenant_settings (tenant_id, settings) values (${tenant}, ${JSON.stringify({ extraction: { instructions: `rules of ${tenant}` } })}::jsonb)`);
    const endpointId = randomUUID();
    await tx.execute(sql`
      insert into webhook_endpoints (tenant_id, id, url, events, secret_ciphertext)
      values (${tenant}, ${endpointId}, ${`https://hooks.example.com/${tenant}`}, '{memory.created}', 'v1:x:y:z')`);
    await tx.execute(sql`
      insert into webhook_deliveries (tenant_id, endpoint_id, event, user_id, payload)
      values (${tenant}, ${endpointId}, 'memory.created', 'alice', ${JSON.stringify({ data: { content: `secret of ${tenant}` } })}::jsonb)`);
  });
}

/** Raw SQL with a table name taken from the schema's list (never from input). */
function table(name: TenantTable) {
  return sql.raw(`"${name}"`);
}

async function tenantsVisible(tx: Db, name: TenantTable): Promise<string[]> {
  const rows = await query<{ tenant_id: string }>(tx, sql`select distinct tenant_id from ${table(name)} order by tenant_id`);
  return rows.map((r) => r.tenant_id);
}

async function countOf(tx: Db, name: TenantTable, tenant?: string): Promise<number> {
  const rows = await query<{ n: number | string }>(
    tx,
    tenant === undefined
      ? sql`select count(*)::int as n from ${table(name)}`
      : sql`select count(*)::int as n from ${table(name)} where tenant_id = ${tenant}`,
  );
  return Number(rows[0]!.n);
}

/** A transaction under the application role that never sets a tenant. */
function withoutTenant<T>(db: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  return db.db.transaction(async (tx) => {
    await tx.execute(sql.raw(`set local role ${APP_ROLE}`));
    return work(tx as unknown as Db);
  });
}

beforeAll(async () => {
  database = await openPostgres({ url: TEST_DATABASE_URL, maxConnections: 4 });
  expect(database.switchesRole).toBe(true);
  await seedTenant(tenantA);
  await seedTenant(tenantB);
});

afterAll(async () => {
  await database.close();
  await owner.end({ timeout: 5 });
});

describe('the seeded rows exist (seen by the owner, past RLS)', () => {
  it.each(tenantTables)('%s has one row of each tenant', async (name) => {
    const rows = await owner.unsafe(`select tenant_id, count(*)::int as n from "${name}" where tenant_id in ($1, $2) group by tenant_id order by tenant_id`, [
      tenantA,
      tenantB,
    ]);
    expect(rows.map((r) => [r.tenant_id, r.n])).toEqual([
      [tenantA, 1],
      [tenantB, 1],
    ]);
  });
});

describe('with tenant a set', () => {
  it.each(tenantTables)('%s shows only tenant a rows', async (name) => {
    await withTenant(database, tenantA, async (tx) => {
      expect(await tenantsVisible(tx, name)).toEqual([tenantA]);
      expect(await countOf(tx, name, tenantB)).toBe(0);
      expect(await countOf(tx, name, tenantA)).toBe(1);
    });
    // And symmetrically for b: the rows are there, just not for a.
    await withTenant(database, tenantB, async (tx) => {
      expect(await tenantsVisible(tx, name)).toEqual([tenantB]);
    });
  });

  it('cannot find tenant b rows by their content or id', async () => {
    const [bMemory] = await owner`select id from memories where tenant_id = ${tenantB}`;
    await withTenant(database, tenantA, async (tx) => {
      const byContent = await query(tx, sql`select id from memories where content = ${`secret of ${tenantB}`}`);
      const byId = await query(tx, sql`select id from memories where id = ${bMemory!.id}`);
      const jobs = await query(tx, sql`select id from extraction_jobs where payload::text like ${`%transcript of ${tenantB}%`}`);
      expect([byContent.length, byId.length, jobs.length]).toEqual([0, 0, 0]);
    });
  });

  it.each(['memories', 'memory_events', 'extraction_jobs', 'erasures', 'tenant_settings', 'webhook_endpoints', 'webhook_deliveries'] as const)('refuses to insert a %s row with tenant_id b', async (name) => {
    const statements: Record<TenantTable, ReturnType<typeof sql>> = {
      memories: sql`insert into memories (tenant_id, user_id, content, content_hash, embedding)
                    values (${tenantB}, 'mallory', 'planted', 'planted-hash', '[0,1,0]'::vector)`,
      memory_events: sql`insert into memory_events (tenant_id, memory_id, user_id, event, actor)
                         values (${tenantB}, ${randomUUID()}, 'mallory', 'ADD', 'user:mallory')`,
      extraction_jobs: sql`insert into extraction_jobs (tenant_id, user_id, body_hash) values (${tenantB}, 'mallory', 'planted')`,
      erasures: sql`insert into erasures (tenant_id, subject_hash, scope, counts) values (${tenantB}, 'planted', 'user', '{}'::jsonb)`,
      tenant_settings: sql`insert into tenant_settings (tenant_id, settings) values (${tenantB}, '{"planted": true}'::jsonb)`,
      webhook_endpoints: sql`insert into webhook_endpoints (tenant_id, url, events, secret_ciphertext) values (${tenantB}, 'https://evil.example.com', '{user.erased}', 'x')`,
      webhook_deliveries: sql`insert into webhook_deliveries (tenant_id, endpoint_id, event, payload) values (${tenantB}, ${randomUUID()}, 'user.erased', '{}'::jsonb)`,
    };
    const error = await withTenant(database, tenantA, (tx) => tx.execute(statements[name])).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeDefined();
    expect(sqlStateOf(error)).toBe('42501');
    expect(String((error as { cause?: { message?: string } }).cause?.message ?? error)).toMatch(/row-level security/);
    const [planted] = await owner.unsafe(`select count(*)::int as n from "${name}" where tenant_id = $1 and tenant_id is not null and ${plantedPredicate(name)}`, [
      tenantB,
    ]);
    expect(planted!.n).toBe(0);
  });

  it('cannot move its own row into tenant b, nor update or delete tenant b rows', async () => {
    const moved = await withTenant(database, tenantA, (tx) => tx.execute(sql`update memories set tenant_id = ${tenantB} where tenant_id = ${tenantA}`)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(sqlStateOf(moved)).toBe('42501');

    const touched = await withTenant(database, tenantA, async (tx) => {
      const updated = await query(tx, sql`update memories set content = 'overwritten' where tenant_id = ${tenantB} returning id`);
      const deletedEvents = await query(tx, sql`delete from memory_events where tenant_id = ${tenantB} returning id`);
      const deletedJobs = await query(tx, sql`delete from extraction_jobs where tenant_id = ${tenantB} returning id`);
      return [updated.length, deletedEvents.length, deletedJobs.length];
    });
    expect(touched).toEqual([0, 0, 0]);
    const [b] = await owner`select content from memories where tenant_id = ${tenantB}`;
    expect(b!.content).toBe(`secret of ${tenantB}`);
    const [events] = await owner`select count(*)::int as n from memory_events where tenant_id = ${tenantB}`;
    expect(events!.n).toBe(1);
  });
});

describe('with no tenant set', () => {
  it.each(tenantTables)('%s shows nothing at all', async (name) => {
    const seen = await withoutTenant(database, async (tx) => {
      const [role] = await query<{ current_user: string }>(tx, sql`select current_user`);
      expect(role!.current_user).toBe(APP_ROLE);
      return countOf(tx, name);
    });
    expect(seen).toBe(0);
    // The table is not empty: the owner sees at least the two seeded rows.
    const [all] = await owner.unsafe(`select count(*)::int as n from "${name}"`);
    expect(all!.n).toBeGreaterThanOrEqual(2);
  });

  it('cannot insert a row for any tenant', async () => {
    const error = await withoutTenant(database, (tx) =>
      tx.execute(sql`insert into memory_events (tenant_id, memory_id, user_id, event, actor) values (${tenantA}, ${randomUUID()}, 'x', 'ADD', 'x')`),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(sqlStateOf(error)).toBe('42501');
  });
});

describe('on a pool of one connection', () => {
  it('a transaction after one that served tenant a sees nothing: the setting is transaction-local', async () => {
    const single = await openPostgres({ url: TEST_DATABASE_URL, maxConnections: 1 });
    try {
      const served = await withTenant(single, tenantA, async (tx) => {
        const [row] = await query<{ pid: number; n: number }>(tx, sql`select pg_backend_pid() as pid, (select count(*)::int from memories) as n`);
        return row!;
      });
      expect(served.n).toBeGreaterThan(0);

      const after = await withoutTenant(single, async (tx) => {
        const [row] = await query<{ pid: number; tenant: string | null; n: number; events: number; jobs: number }>(
          tx,
          sql`select pg_backend_pid() as pid, current_setting('app.tenant_id', true) as tenant,
                     (select count(*)::int from memories) as n,
                     (select count(*)::int from memory_events) as events,
                     (select count(*)::int from extraction_jobs) as jobs`,
        );
        return row!;
      });
      // Same physical connection, and yet nothing of tenant a is left on it.
      expect(after.pid).toBe(served.pid);
      expect(after.tenant ?? '').toBe('');
      expect([after.n, after.events, after.jobs]).toEqual([0, 0, 0]);

      // Nor is the role left switched: outside a transaction the login role is back.
      const [outside] = await query<{ current_user: string; pid: number }>(single.db, sql`select current_user, pg_backend_pid() as pid`);
      expect(outside!.pid).toBe(served.pid);
      expect(outside!.current_user).not.toBe(APP_ROLE);

      // The next tenant on the same connection sees only its own rows.
      const next = await withTenant(single, tenantB, (tx) => tenantsVisible(tx, 'memories'));
      expect(next).toEqual([tenantB]);
    } finally {
      await single.close();
    }
  });
});

describe('the role requests run under', () => {
  it('is engram_app, neither superuser nor BYPASSRLS, and owns no table', async () => {
    const role = await withTenant(database, tenantA, async (tx) => {
      const [row] = await query<{ current_user: string; rolsuper: boolean; rolbypassrls: boolean; owned: number }>(
        tx,
        sql`select current_user, r.rolsuper, r.rolbypassrls,
                   (select count(*)::int from pg_tables where schemaname = 'public' and tableowner = current_user) as owned
            from pg_roles r where r.rolname = current_user`,
      );
      return row!;
    });
    expect(role).toEqual({ current_user: APP_ROLE, rolsuper: false, rolbypassrls: false, owned: 0 });
  });

  it('every tenant table (derived ones too) has row-level security enabled and forced, with a tenant policy for USING and WITH CHECK', async () => {
    const rows = await owner`
      select c.relname, c.relrowsecurity, c.relforcerowsecurity
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relname in ${owner([...tenantTables, ...derivedTenantTables])}
      order by c.relname`;
    expect(rows.map((r) => r.relname)).toEqual([...tenantTables, ...derivedTenantTables].sort());
    for (const row of rows) expect({ table: row.relname, rls: row.relrowsecurity, force: row.relforcerowsecurity }).toEqual({ table: row.relname, rls: true, force: true });

    const policies = await owner`
      select tablename, qual, with_check from pg_policies
      where schemaname = 'public' and tablename in ${owner([...tenantTables, ...derivedTenantTables])} and policyname = 'tenant_isolation'`;
    expect(policies.map((p) => p.tablename).sort()).toEqual([...tenantTables, ...derivedTenantTables].sort());
    for (const p of policies) {
      expect(p.qual).toContain("current_setting('app.tenant_id'");
      expect(p.with_check).toContain("current_setting('app.tenant_id'");
    }
  });

  it('every public table with a tenant_id column is a tenant table (a new table cannot be forgotten)', async () => {
    const rows = await owner`
      select table_name from information_schema.columns
      where table_schema = 'public' and column_name = 'tenant_id' order by table_name`;
    expect(rows.map((r) => r.table_name)).toEqual([...tenantTables, ...derivedTenantTables].sort());
  });
});

describe('assertServingRoleIsSafe', () => {
  /** A Database whose queries answer with canned rows, in order: the role row, then the owned tables. */
  function fakeDatabase(role: { rolname: string; rolsuper: boolean; rolbypassrls: boolean } | undefined, owned: string[] = []): Database {
    const answers: unknown[][] = [role ? [role] : [], owned.map((tablename) => ({ tablename }))];
    const db = { execute: async () => answers.shift() ?? [] } as unknown as Db;
    return {
      kind: 'postgres',
      db,
      switchesRole: true,
      inTransaction: async (_settings, work) => work(db),
      migrate: async () => {},
      ping: async () => {},
      close: async () => {},
    };
  }

  it('accepts the real database', async () => {
    await expect(assertServingRoleIsSafe(database)).resolves.toBeUndefined();
  });

  it('accepts a safe role', async () => {
    await expect(assertServingRoleIsSafe(fakeDatabase({ rolname: APP_ROLE, rolsuper: false, rolbypassrls: false }))).resolves.toBeUndefined();
  });

  it('rejects a superuser role', async () => {
    await expect(assertServingRoleIsSafe(fakeDatabase({ rolname: APP_ROLE, rolsuper: true, rolbypassrls: false }))).rejects.toThrow(
      /superuser/,
    );
  });

  it('rejects a BYPASSRLS role', async () => {
    await expect(assertServingRoleIsSafe(fakeDatabase({ rolname: APP_ROLE, rolsuper: false, rolbypassrls: true }))).rejects.toThrow(
      /BYPASSRLS/,
    );
  });

  it('rejects a missing role and a role that owns tables', async () => {
    await expect(assertServingRoleIsSafe(fakeDatabase(undefined))).rejects.toBeInstanceOf(UnsafeRoleError);
    await expect(assertServingRoleIsSafe(fakeDatabase({ rolname: APP_ROLE, rolsuper: false, rolbypassrls: false }, ['memories']))).rejects.toThrow(
      /owns memories/,
    );
  });
});

function sqlStateOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 6; depth++) {
    if (typeof current === 'object' && 'code' in current && typeof current.code === 'string') return current.code;
    current = typeof current === 'object' && 'cause' in current ? current.cause : undefined;
  }
  return undefined;
}

function plantedPredicate(name: TenantTable): string {
  switch (name) {
    case 'memories':
      return `content = 'planted'`;
    case 'memory_events':
      return `user_id = 'mallory'`;
    case 'extraction_jobs':
      return `body_hash = 'planted'`;
    case 'erasures':
      return `subject_hash = 'planted'`;
    case 'tenant_settings':
      return `settings ? 'planted'`;
    case 'webhook_endpoints':
      return `url = 'https://evil.example.com'`;
    case 'webhook_deliveries':
      return `event = 'user.erased' and payload = '{}'::jsonb`;
  }
}

import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ROLE, lastStatement, query, queryText, sqlState, type Database } from '../../src/db/client.js';
import { withTenant } from '../../src/db/tenant.js';
import { TEST_BACKEND, startTestApp, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * The database layer's transactions, on both backends. On PostgreSQL BEGIN, the settings and the
 * first statement travel together and parameterised statements are prepared per connection
 * (src/db/postgres.ts); what must hold whatever the wire does is below.
 */

let app: TestApp;
let database: Database;
const tenant = uniqueTenant('tx');

beforeAll(async () => {
  app = await startTestApp();
  database = app.runtime.services.database;
});
afterAll(async () => {
  await app?.close();
});

const insertMemory = (id: string, content: string) => sql`
  insert into memories (tenant_id, id, user_id, content, content_hash, embedding)
  values (${tenant}, ${id}, 'alice', ${content}, ${`hash-${id}`}, '[1,0,0]'::vector)`;

const insertMemoryText = `
  insert into memories (tenant_id, id, user_id, content, content_hash, embedding)
  values ($1, $2, 'alice', $3, $4, '[1,0,0]'::vector)`;

const storedIds = async (ids: string[]) =>
  (await app.ownerQuery<{ id: string }>('select id from memories where tenant_id = $1 and id = any($2::uuid[])', [tenant, ids])).map((r) => r.id);

describe('transactions bound to a tenant', () => {
  it('run their first statement under the settings: the application role and the tenant', async () => {
    const [row] = await withTenant(database, tenant, (tx) =>
      query<{ tenant: string; role: string }>(tx, sql`select current_setting('app.tenant_id', true) as tenant, current_user as role`),
    );
    expect(row).toEqual({ tenant, role: APP_ROLE });
  });

  it('leave nothing set for the next transaction on the connection', async () => {
    // More transactions than the pool has connections, so connections are reused.
    for (let i = 0; i < 25; i++) await withTenant(database, tenant, (tx) => query(tx, sql`select 1`));
    const rows = await database.inTransaction([], (tx) =>
      query<{ tenant: string | null }>(tx, sql`select nullif(current_setting('app.tenant_id', true), '') as tenant`),
    );
    expect(rows).toEqual([{ tenant: null }]);
  });

  it('commit before they return: another connection sees the write at once', async () => {
    const id = randomUUID();
    await withTenant(database, tenant, (tx) => tx.execute(insertMemory(id, 'committed')));
    expect(await storedIds([id])).toEqual([id]);
  });

  it('roll back everything they wrote when the work throws, and throw its error', async () => {
    const id = randomUUID();
    const failure = new Error('the work failed');
    await expect(
      withTenant(database, tenant, async (tx) => {
        await tx.execute(insertMemory(id, 'rolled back'));
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await storedIds([id])).toEqual([]);
  });

  it("throw the settings' own error when they fail, not the aborted statements' after them", async () => {
    await expect(database.inTransaction([['role', 'no_such_role_engram']], (tx) => query(tx, sql`select 1`))).rejects.toThrow(
      /no_such_role_engram/,
    );
    // The connection is usable afterwards.
    const [row] = await withTenant(database, tenant, (tx) => query<{ one: number }>(tx, sql`select 1 as one`));
    expect(Number(row!.one)).toBe(1);
  });

  it('refuse writes when read-only, and serve reads', async () => {
    const id = randomUUID();
    const refused = await withTenant(database, tenant, (tx) => tx.execute(insertMemory(id, 'read only')), { readOnly: true }).catch((e: unknown) => e);
    expect(sqlState(refused)).toBe('25006'); // read_only_sql_transaction
    expect(await storedIds([id])).toEqual([]);
    const [row] = await withTenant(database, tenant, (tx) => query<{ ro: string }>(tx, sql`select current_setting('transaction_read_only') as ro`), {
      readOnly: true,
    });
    expect(row!.ro).toBe('on');
  });

  it('keep many concurrent transactions apart, read-only ones (whose COMMIT is not awaited) among them', async () => {
    const tenants = Array.from({ length: 8 }, (_, i) => `${tenant}-c${i}`);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const own = tenants[i % tenants.length]!;
        return withTenant(
          database,
          own,
          async (tx) => {
            const [row] = await query<{ tenant: string }>(tx, sql`select current_setting('app.tenant_id', true) as tenant`);
            return { own, seen: row!.tenant };
          },
          { readOnly: i % 2 === 0 },
        );
      }),
    );
    for (const r of results) expect(r.seen).toBe(r.own);
  });
});

describe('a read-only transaction told its last statement', () => {
  const settingsSeen = (tx: Parameters<Parameters<typeof withTenant>[2]>[0]) =>
    query<{ tenant: string; role: string; ro: string }>(
      tx,
      sql`select current_setting('app.tenant_id', true) as tenant, current_user as role, current_setting('transaction_read_only') as ro`,
    );

  it('runs that statement inside the transaction: the role, the tenant, read-only', async () => {
    const [row] = await withTenant(
      database,
      tenant,
      async (tx) => {
        await query(tx, sql`select 1`);
        lastStatement(tx);
        return settingsSeen(tx);
      },
      { readOnly: true },
    );
    expect(row).toEqual({ tenant, role: APP_ROLE, ro: 'on' });
  });

  it.runIf(TEST_BACKEND === 'postgres')('refuses a statement after it, which would run without the role and the tenant', async () => {
    const after = await withTenant(
      database,
      tenant,
      async (tx) => {
        lastStatement(tx);
        await query(tx, sql`select 1`);
        return settingsSeen(tx);
      },
      { readOnly: true },
    ).catch((e: unknown) => e);
    expect(after).toBeInstanceOf(Error);
    // drizzle wraps the driver's error in its own, the refusal as its cause.
    expect(String((after as Error).cause ?? after)).toMatch(/after the last statement/);
    // The connection is clean and usable afterwards (more uses than the pool has connections).
    for (let i = 0; i < 12; i++) {
      const [row] = await database.inTransaction([], (tx) => query<{ tenant: string | null }>(tx, sql`select nullif(current_setting('app.tenant_id', true), '') as tenant`));
      expect(row!.tenant).toBeNull();
    }
  });

  it('rolls back, and throws the statement\'s error, when that statement fails', async () => {
    const failed = await withTenant(
      database,
      tenant,
      (tx) => {
        lastStatement(tx);
        return query(tx, sql`select 1 / 0`);
      },
      { readOnly: true },
    ).catch((e: unknown) => e);
    expect(sqlState(failed)).toBe('22012'); // division_by_zero
    const [row] = await withTenant(database, tenant, (tx) => settingsSeen(tx), { readOnly: true });
    expect(row!.tenant).toBe(tenant);
  });

  it('commits as usual when the work sends nothing after being told', async () => {
    const [row] = await withTenant(
      database,
      tenant,
      async (tx) => {
        const seen = await settingsSeen(tx);
        lastStatement(tx);
        return seen;
      },
      { readOnly: true },
    );
    expect(row!.tenant).toBe(tenant);
  });
});

describe('a writing transaction told its last statement', () => {
  it('commits what it wrote before it returns: another connection sees every write at once', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    await withTenant(database, tenant, async (tx) => {
      await query(tx, insertMemory(a, `first ${a}`));
      lastStatement(tx);
      await query(tx, insertMemory(b, `last ${b}`));
    });
    expect((await storedIds([a, b])).sort()).toEqual([a, b].sort());
  });

  it('rolls back every write, and throws the statement\'s error, when that last statement fails', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const failed = await withTenant(database, tenant, async (tx) => {
      await query(tx, insertMemory(a, `kept only if committed ${a}`));
      // Raw statements, made as they are called (drizzle's query() makes its statement a tick later).
      const second = queryText(tx, insertMemoryText, [tenant, b, `second ${b}`, `hash-${b}`]);
      lastStatement(tx);
      // The same id again: a unique violation, with the COMMIT already on its way behind it.
      await Promise.all([second, queryText(tx, insertMemoryText, [tenant, a, `again ${a}`, `hash-again-${a}`])]);
    }).catch((e: unknown) => e);
    expect(sqlState(failed)).toBe('23505');
    expect(await storedIds([a, b])).toEqual([]);
    // The connection is clean and usable afterwards (more uses than the pool has connections).
    for (let i = 0; i < 12; i++) {
      const [row] = await database.inTransaction([], (tx) => query<{ tenant: string | null }>(tx, sql`select nullif(current_setting('app.tenant_id', true), '') as tenant`));
      expect(row!.tenant).toBeNull();
    }
  });

  it.runIf(TEST_BACKEND === 'postgres')('refuses a statement after it, and keeps nothing the transaction wrote before the refusal', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const after = await withTenant(database, tenant, async (tx) => {
      lastStatement(tx);
      await query(tx, insertMemory(a, `last ${a}`));
      await query(tx, insertMemory(b, `after the last ${b}`));
    }).catch((e: unknown) => e);
    expect(String((after as Error).cause ?? after)).toMatch(/after the last statement/);
    // The last statement was committed with it; the one after never ran, without the tenant or otherwise.
    expect(await storedIds([a, b])).toEqual([a]);
  });
});

describe.runIf(TEST_BACKEND === 'postgres')('parameterised statements on PostgreSQL', () => {
  it('are prepared once per connection and reused', async () => {
    const marker = `prepared-${randomUUID()}`;
    const prepared = await withTenant(database, tenant, async (tx) => {
      for (let i = 0; i < 3; i++) await query(tx, sql`select ${marker}::text as marker, ${i}::int as i`);
      return query<{ statement: string }>(tx, sql`select statement from pg_prepared_statements where statement like ${'%::text as marker%'}`);
    });
    expect(prepared).toHaveLength(1);
  });
});

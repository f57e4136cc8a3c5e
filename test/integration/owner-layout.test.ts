import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withAppRole, withTenant } from '../../src/db/tenant.js';
import { eraseExpiredBatch } from '../../src/governance/retention.js';
import { RECALL_MAX_TERMS, collectCandidates } from '../../src/recall/service.js';
import { queryWordForms } from '../../src/recall/word-forms.js';
import { adminUrl, databaseUrl } from '../support/env.js';
import { TEST_BACKEND, startTestApp, tokenFor, type TestApp } from '../support/harness.js';

/**
 * The production layout (deploy/postgres-init.sh): the migrations run as an owner that is no
 * superuser and has no BYPASSRLS, so FORCE row-level security holds the owner too. The tables the
 * triggers keep (the large scope's word counts and text copies) must follow every write then as
 * well, those made outside any tenant (the expiry sweep, an operator's SQL) included.
 */
describe.runIf(TEST_BACKEND === 'postgres')('an owner that is no superuser (the production layout)', { timeout: 120_000 }, () => {
  const suffix = randomBytes(4).toString('hex');
  const ownerRole = `engram_owner_${suffix}`;
  const name = `engram_layout_${suffix}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const ownerUrl = new URL(databaseUrl(name));
  ownerUrl.username = ownerRole;
  let owner: ReturnType<typeof postgres>;
  let app: TestApp;
  const tenant = 'layout';
  const user = 'ida';

  beforeAll(async () => {
    await admin.unsafe(`create role ${ownerRole} login nosuperuser nobypassrls`);
    await admin.unsafe(`grant engram_app to ${ownerRole}`);
    await admin.unsafe(`create database ${name} owner ${ownerRole}`);
    const db = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
    await db.unsafe('create extension if not exists vector');
    await db.end();
    app = await startTestApp({ DATABASE_URL: ownerUrl.toString(), MIGRATE_ON_START: 'true' });
    owner = postgres(ownerUrl.toString(), { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await owner?.end();
    await app?.close();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.unsafe(`drop owned by ${ownerRole} cascade`).catch(() => undefined);
    await admin.unsafe(`drop role if exists ${ownerRole}`);
    await admin.end();
  });

  /** The copies and the counts as the triggers keep them, against what the memories give. */
  async function expectDerivedEqual() {
    const [copies, fromMemories, counts, fromCounts] = await Promise.all([
      superuserRows(`select id::text, user_id, valid_to::text, expires_at::text, search_text::text from memory_search order by id`),
      superuserRows(`select id::text, user_id, valid_to::text, expires_at::text, search_text::text from memories order by id`),
      superuserRows(`select user_id, lexeme, documents::text from memory_lexeme_stats order by user_id, lexeme`),
      superuserRows(
        `select user_id, lexeme, count(*)::text as documents from memories m cross join lateral unnest(array_append(tsvector_to_array(m.search_text), '')) as u(lexeme)
         where valid_to is null group by user_id, lexeme order by user_id, lexeme`,
      ),
    ]);
    expect(copies).toEqual(fromMemories);
    expect(counts).toEqual(fromCounts);
  }
  async function superuserRows(text: string) {
    const db = postgres(databaseUrl(name), { max: 1, onnotice: () => {} });
    try {
      return [...(await db.unsafe(text))];
    } finally {
      await db.end();
    }
  }

  it('keeps the copies and the counts through writes within a tenant, an operator update and the expiry sweep, and recall reads them', async () => {
    const [role] = (await owner.unsafe(`select rolsuper as is_superuser from pg_roles where rolname = current_user`)) as unknown as Array<{ is_superuser: boolean }>;
    expect(role?.is_superuser).toBe(false);
    const token = await tokenFor({ tenant, user });
    const added = await app.call('POST', '/memories', {
      token,
      body: { memories: [{ content: 'Ida rows the quarry lake at dawn' }, { content: 'Ida keeps bees behind the quarry' }, { content: 'Ida bakes rye bread on Sundays' }] },
    });
    expect(added.status).toBe(201);
    const ids = (added.body as { memories: Array<{ id: string }> }).memories.map((m) => m.id);
    await expectDerivedEqual();

    // An operator's own SQL as the owner, outside any tenant: an expiry set on two memories.
    await owner.unsafe(`update memories set expires_at = now() - interval '1 minute' where id in ($1, $2)`, [ids[0]!, ids[1]!]);
    await expectDerivedEqual();

    // The expiry sweep, as the service runs it (the application role calling the owner's function).
    const erased = await withAppRole(app.runtime.services.database, (tx) => eraseExpiredBatch(tx, new Date(), 100));
    expect(erased).toBe(2);
    await expectDerivedEqual();
    expect(await superuserRows(`select id::text from memory_search`)).toEqual([{ id: ids[2]! }]);

    // Recall's large-scope path reads the copies through the owner's function, in the tenant.
    const text = 'Where does Ida bake bread?';
    const [embedding] = await app.runtime.services.embedder.embed([text]);
    const pool = await withTenant(app.runtime.services.database, tenant, (tx) =>
      collectCandidates(
        tx,
        { tenantId: tenant, userId: user, embedding: embedding!, text, wordForms: queryWordForms(text), asOf: undefined, now: new Date(), poolSize: 100, maxTerms: RECALL_MAX_TERMS, scanLimit: 2000, largeScope: { rerank: 0 } },
        undefined,
        'quantized',
      ),
    );
    expect(pool.candidates.filter((c) => c.textScore > 0).map((c) => c.id)).toEqual([ids[2]!]);
  });

  it('lets no role but the application execute a function that runs as the owner', async () => {
    // app.tenant_id is a setting any role may change: executed by another login, such a function
    // would read any tenant's rows past row-level security.
    const open = await owner.unsafe(
      `select p.proname::text as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = 'public' and p.prosecdef
         and (p.proacl is null or exists (select 1 from aclexplode(p.proacl) a where a.grantee = 0 and a.privilege_type = 'EXECUTE'))
       order by 1`,
    );
    expect(open.map((r) => r.name)).toEqual([]);
    const owned = await owner.unsafe(`select count(*)::int as n from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public' and p.prosecdef`);
    expect(owned[0]!.n).toBeGreaterThan(5);
  });
});

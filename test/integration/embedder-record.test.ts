import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import type { Database } from '../../src/db/client.js';
import { reembedDatabase } from '../../src/db/reembed.js';
import { LexicalEmbedder } from '../../src/llm/lexical-embedder.js';
import type { Embedder } from '../../src/llm/types.js';
import { createRuntime } from '../../src/runtime.js';
import { TEST_JWT_SECRET } from '../support/env.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * A database keeps the embedder it was filled with: restarts on the same database with other
 * settings, and `npm run db:reembed`'s resume after a failure part-way. On both backends.
 */

let app: TestApp;
let database: Database;
const contents: string[] = [];

/** The service's configuration for another start on the app's database; nothing set unless given. */
function configFor(env: Record<string, string>): Config {
  const base = { AUTH_JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent', MIGRATE_ON_START: 'false' };
  return loadConfig(TEST_BACKEND === 'pglite' ? { ...base, ...env } : { ...base, DATABASE_URL: app.databaseUrl, ...env });
}

async function startWith(env: Record<string, string>) {
  return createRuntime(configFor(env), { database, logger: pino({ level: 'silent' }) });
}

async function storedSizes(): Promise<Record<number, number>> {
  const rows = await app.ownerQuery<{ dims: number; n: number }>('select vector_dims(embedding) as dims, count(*)::int as n from memories group by 1');
  return Object.fromEntries(rows.map((r) => [Number(r.dims), Number(r.n)]));
}

beforeAll(async () => {
  app = await startTestApp({ EMBEDDINGS: 'lexical', EMBEDDING_DIMENSIONS: '64' }, { isolated: true });
  database = app.runtime.services.database;
  // Two tenants, so the re-embed crosses a tenant boundary inside one batch.
  for (const [tenant, n] of [[uniqueTenant('emb-a'), 7], [uniqueTenant('emb-b'), 6]] as const) {
    const memories = Array.from({ length: n }, (_, i) => ({ content: `${tenant} keeps fact number ${i} about beekeeping` }));
    const res = await app.call('POST', '/memories', { token: await tokenFor({ tenant, user: 'alice' }), body: { memories } });
    expect(res.status).toBe(201);
    contents.push(...memories.map((m) => m.content));
  }
});

afterAll(async () => {
  await app?.close();
});

describe('a database filled by one embedder', () => {
  it('goes on with it and its size when EMBEDDINGS and EMBEDDING_DIMENSIONS are unset', async () => {
    const runtime = await startWith({});
    try {
      expect(runtime.services.embedder.name).toBe('offline:lexical');
      expect(runtime.services.embedder.dimensions).toBe(64);
    } finally {
      await runtime.close();
    }
  });

  it('refuses to start with an explicit other embedder or size, in one line naming what filled it', async () => {
    await expect(startWith({ EMBEDDINGS: 'local' })).rejects.toThrow(
      /^EMBEDDINGS=local does not match: this database was filled by lexical:hashed-word-features \(64 dimensions\); unset EMBEDDINGS to go on with it, or run `npm run db:reembed`/,
    );
    await expect(startWith({ EMBEDDINGS: 'lexical', EMBEDDING_DIMENSIONS: '32' })).rejects.toThrow(/^EMBEDDING_DIMENSIONS=32 does not match/);
    expect(await storedSizes()).toEqual({ 64: contents.length });
  });
});

describe('npm run db:reembed', () => {
  it.skipIf(TEST_BACKEND === 'pglite')('is refused while a service runs on the database', async () => {
    // Re-embedding under a running service mixed vectors of two embedders (its writes used the old one).
    const { openDatabase } = await import('../../src/db/open.js');
    const reembedder = await openDatabase(configFor({}));
    try {
      expect(await reembedder.claimExclusive!()).toBe(false);
      const [held] = await app.ownerQuery<{ n: number }>(
        "select count(*)::int as n from pg_locks where locktype = 'advisory' and mode = 'ShareLock' and granted",
      );
      expect(Number(held!.n)).toBeGreaterThanOrEqual(1);
    } finally {
      await reembedder.close();
    }
  });

  it('resumes after a failure part-way: every row ends on the new embedder, embedded exactly once', async () => {
    const target = { kind: 'lexical' as const, model: 'hashed-word-features', dimensions: 32 };
    const inner = new LexicalEmbedder(32);
    const written = new Map<string, number>();
    let calls = 0;
    let failOnCall = 3;
    const embedder: Embedder = {
      name: 'offline:lexical',
      kind: 'lexical',
      dimensions: 32,
      async embed(texts) {
        calls++;
        if (calls === failOnCall) throw new Error('killed mid-way');
        const vectors = await inner.embed(texts);
        for (const text of texts) written.set(text, (written.get(text) ?? 0) + 1);
        return vectors;
      },
    };

    await expect(reembedDatabase(database, embedder, target, { batchSize: 3 })).rejects.toThrow('killed mid-way');
    const midway = await storedSizes();
    expect(midway[32]).toBeGreaterThan(0);
    expect(midway[64]).toBeGreaterThan(0);
    // Mixed vectors: no start serves them until the re-embed is finished.
    await expect(startWith({})).rejects.toThrow(/re-embed of this database to lexical:hashed-word-features \(32 dimensions\) is unfinished/);

    failOnCall = -1;
    const progress: number[] = [];
    const outcome = await reembedDatabase(database, embedder, target, { batchSize: 3, onProgress: ({ done, total }) => progress.push(done / total) });
    expect(outcome).toEqual({ kind: 're-embedded', rows: midway[64] });
    expect(progress.at(-1)).toBe(1);
    expect(await storedSizes()).toEqual({ 32: contents.length });
    expect([...written.keys()].sort()).toEqual([...contents].sort());
    expect([...written.values()].every((n) => n === 1)).toBe(true);
    const rows = await app.ownerQuery<{ content: string; embedding: string }>('select content, embedding::text as embedding from memories');
    for (const row of rows) {
      const expected = inner.embedOne(row.content);
      (JSON.parse(row.embedding) as number[]).forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
    }

    const runtime = await startWith({});
    try {
      expect(runtime.services.embedder.dimensions).toBe(32);
    } finally {
      await runtime.close();
    }
    expect(await reembedDatabase(database, embedder, target)).toEqual({ kind: 'unchanged' });
  });
});

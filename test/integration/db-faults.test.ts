import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVING_LOCK, isDatabaseUnavailable, query } from '../../src/db/client.js';
import { openPostgres } from '../../src/db/postgres.js';
import { TEST_DATABASE_URL } from '../support/env.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { freePort } from '../support/process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/** Issue 11: what production does to the database under a running service (defects 1, 2 and 4). */

const admin = postgres(TEST_DATABASE_URL, { max: 2, onnotice: () => {} });
afterAll(() => admin.end());

async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((r) => setTimeout(r, 20));
}

/** Terminates a backend and waits until the server has let it go (its socket is closed by then). */
async function terminate(pid: number): Promise<void> {
  await admin`select pg_terminate_backend(${pid})`;
  await until(async () => (await admin`select 1 from pg_stat_activity where pid = ${pid}`).length === 0);
  await new Promise((r) => setTimeout(r, 50)); // lets the client's socket see its close first
}

function expectUnavailable(res: { status: number; headers: Headers; body: { code?: string } }): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.body.code).toBe('unavailable');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
}

describe('a connection dropped inside a transaction (defect 1)', () => {
  it('fails that transaction as unavailable, without killing the process, and the pool goes on', async () => {
    const database = await openPostgres({ url: TEST_DATABASE_URL });
    try {
      const failed = await database
        .inTransaction([], async (tx) => {
          const [me] = await query<{ pid: number }>(tx, sql`select pg_backend_pid() as pid`);
          await terminate(me!.pid);
          await query(tx, sql`select 1`); // written after the socket closed
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(isDatabaseUnavailable(failed)).toBe(true);
      for (const n of [1, 2]) {
        const [row] = await database.inTransaction([], (tx) => query<{ n: number }>(tx, sql`select ${n}::int as n`));
        expect(row).toEqual({ n });
      }
    } finally {
      await database.close();
    }
  });

  describe('over HTTP', () => {
    let app: TestApp;
    let token: string;
    beforeAll(async () => {
      app = await startTestApp({ REQUEST_TIMEOUT_MS: '20000' }, { isolated: true });
      token = await tokenFor({ tenant: uniqueTenant('dbfault'), user: 'alice' });
    });
    afterAll(() => app.close());

    const database = () => new URL(app.databaseUrl).pathname.slice(1);
    const add = (content: string) => app.call('POST', '/memories', { token, body: { memories: [{ content }] } });

    it('answers 503 when its backend is terminated mid-statement, and the next requests succeed', async () => {
      const owner = app.ownerSql();
      try {
        const pending = await owner.begin(async (tx) => {
          await tx`lock table memories in access exclusive mode`;
          const request = add('Alice waits on a lock');
          let pid: number | undefined;
          await until(async () => {
            const rows = await admin<{ pid: number }[]>`
              select pid from pg_stat_activity
              where datname = ${database()} and application_name = 'engram' and wait_event_type = 'Lock'`;
            pid = rows[0]?.pid;
            return pid !== undefined;
          });
          await terminate(pid!);
          return [await request];
        });
        expectUnavailable(pending[0]!);
      } finally {
        await owner.end();
      }
      expect((await add('Alice is back')).status).toBe(201);
      expect((await app.call('GET', '/memories', { token })).status).toBe(200);
    });

    it('keeps serving after every backend of the service is terminated', async () => {
      expect((await add('Alice before the purge')).status).toBe(201);
      const rows = await admin<{ pid: number }[]>`
        select pid from pg_stat_activity where datname = ${database()} and application_name = 'engram'`;
      expect(rows.length).toBeGreaterThan(0);
      for (const { pid } of rows) await terminate(pid);
      for (const content of ['Alice after the purge', 'Alice once more']) expect((await add(content)).status).toBe(201);
    });

    /** Whether a memory of this content is stored, once no transaction of the app is still open. */
    const stored = async (content: string) => {
      await until(async () => (await admin`select 1 from pg_stat_activity where datname = ${database()} and application_name = 'engram' and state <> 'idle'`).length === 0);
      const rows = await app.ownerQuery<{ n: number }>(`select count(*)::int as n from memories where content = $1`, [content]);
      return rows[0]!.n;
    };

    it('bounds a request that waits on the database with the request deadline: 503 and Retry-After, and its write is not applied after all', async () => {
      const short = await startTestApp({ DATABASE_URL: app.databaseUrl, REQUEST_TIMEOUT_MS: '1000' });
      const owner = app.ownerSql();
      try {
        const [res] = await owner.begin(async (tx) => {
          await tx`lock table memories in access exclusive mode`;
          return [await short.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice is stuck' }] } })];
        });
        expectUnavailable(res!);
        // The lock is gone and the transaction goes on, but the client was told to retry: it rolls back.
        expect(await stored('Alice is stuck')).toBe(0);
      } finally {
        await owner.end();
        await short.close();
      }
    });

    /**
     * Adds `content` through an app whose request bound is 1 s while the user's row of word counts is
     * held: the add's inserts, sent with its COMMIT, count their words into it (a trigger), so they
     * wait on it. Held `holdMs` past the moment the add waits, then let go; the add's answer.
     */
    const addWhileWordCountsHeld = async (content: string, holdMs: number) => {
      const short = await startTestApp({ DATABASE_URL: app.databaseUrl, REQUEST_TIMEOUT_MS: '1000' });
      const owner = app.ownerSql();
      try {
        expect((await short.call('POST', '/memories', { token, body: { memories: [{ content: `${content}, counted first` }] } })).status).toBe(201);
        const request = await owner.begin(async (tx) => {
          await tx`select 1 from memory_lexeme_stats where user_id = 'alice' and lexeme = '' for update`;
          const pending = short.call('POST', '/memories', { token, body: { memories: [{ content }] } });
          await until(async () => (await admin`select 1 from pg_stat_activity where datname = ${database()} and application_name = 'engram' and wait_event_type = 'Lock'`).length > 0);
          await new Promise((r) => setTimeout(r, holdMs));
          return { pending };
        });
        return await request.pending;
      } finally {
        await owner.end();
        await short.close();
      }
    };

    it('answers a write whose COMMIT was already sent when the deadline passed with its outcome, not a 503', async () => {
      const res = await addWhileWordCountsHeld('Alice commits late', 1200);
      expect(res.status).toBe(201);
      expect(await stored('Alice commits late')).toBe(1);
    });

    it('cancels a write whose COMMIT was sent but whose statement waits past twice the deadline: 503, and nothing stored', async () => {
      // Held past the statement's bound (twice the request's): as if never let go.
      expectUnavailable(await addWhileWordCountsHeld('Alice never commits', 2600));
      expect(await stored('Alice never commits')).toBe(0);
    });
  });
});

describe('every connection of the pool in use', () => {
  it('fails a transaction that finds none within the acquire bound as unavailable, and serves it once one is free', async () => {
    const database = await openPostgres({ url: TEST_DATABASE_URL, maxConnections: 1, acquireTimeoutMs: 600 });
    try {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const holder = database.inTransaction([], async (tx) => {
        await query(tx, sql`select 1`);
        await held;
      });
      await new Promise((r) => setTimeout(r, 50));
      const failed = await database.inTransaction([], (tx) => query(tx, sql`select 1`)).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isDatabaseUnavailable(failed)).toBe(true);
      expect((failed as { code?: string }).code).toBe('CONNECTION_ACQUIRE_TIMEOUT');
      // Asked for while the connection is held, answered when it is handed back.
      const waiting = database.inTransaction([], (tx) => query<{ n: number }>(tx, sql`select 7::int as n`));
      await new Promise((r) => setTimeout(r, 300));
      release();
      await holder;
      expect(await waiting).toEqual([{ n: 7 }]);
    } finally {
      await database.close();
    }
  });
});

describe("the serving lock's connection dropped", () => {
  const servingLockHolders = async () =>
    (
      await admin<{ pid: number }[]>`select pid from pg_locks where locktype = 'advisory' and granted and mode = 'ShareLock'
        and classid::bigint = ${SERVING_LOCK[0]} and objid::bigint = ${SERVING_LOCK[1]} and objsubid = 2`
    ).map((r) => r.pid);

  it('takes the lock again, so a re-embed still sees the service running', async () => {
    const serving = await openPostgres({ url: TEST_DATABASE_URL, servingLockCheckMs: 100 });
    const reembed = await openPostgres({ url: TEST_DATABASE_URL });
    try {
      const before = new Set(await servingLockHolders());
      await serving.holdServing!();
      const [mine] = (await servingLockHolders()).filter((pid) => !before.has(pid));
      expect(mine).toBeDefined();
      await terminate(mine!);
      await until(async () => (await servingLockHolders()).some((pid) => !before.has(pid) && pid !== mine));
      expect(await reembed.claimExclusive!()).toBe(false);
    } finally {
      await Promise.all([serving.close(), reembed.close()]);
    }
  });
});

describe('an unreachable database (defect 2)', () => {
  let proxy: TcpProxy;
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    const target = new URL(TEST_DATABASE_URL);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    app = await startTestApp({ DATABASE_URL: proxy.through(TEST_DATABASE_URL) });
    token = await tokenFor({ tenant: uniqueTenant('dbdown'), user: 'alice' });
  });
  afterAll(async () => {
    await app.close();
    await proxy.close();
  });

  async function servesAgain(): Promise<void> {
    await proxy.forward();
    // The first request after the database's return already succeeds: no reconnect back-off left.
    expect((await app.call('GET', '/memories', { token })).status).toBe(200);
    expect((await app.call('GET', '/readyz')).status).toBe(200);
  }

  /** Connection attempts still hanging on the black hole time out first; then requests succeed. */
  async function recovers(): Promise<void> {
    await proxy.forward();
    await until(async () => (await app.call('GET', '/memories', { token })).status === 200);
    expect((await app.call('GET', '/readyz')).status).toBe(200);
  }

  it('answers 503 with Retry-After while connections are refused, /readyz 503, then recovers', async () => {
    expect((await app.call('GET', '/memories', { token })).status).toBe(200);
    await proxy.refuse();
    const answers = await Promise.all(Array.from({ length: 12 }, () => app.call('GET', '/memories', { token })));
    for (const res of answers) expectUnavailable(res);
    const ready = await app.call('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: 'unavailable', checks: { database: 'unavailable' } });
    await servesAgain();
  });

  it('answers 503 with Retry-After while the server accepts and never answers, then recovers', async () => {
    expect((await app.call('GET', '/memories', { token })).status).toBe(200);
    proxy.blackhole();
    const answers = await Promise.all(Array.from({ length: 12 }, () => app.call('GET', '/memories', { token })));
    for (const res of answers) expectUnavailable(res);
    expect((await app.call('GET', '/readyz')).status).toBe(503);
    await recovers();
  });
});

describe('/readyz while Redis is down (defect 4)', () => {
  it('answers 200 and reports Redis as degraded', async () => {
    const port = await freePort();
    const app = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${port}/0` });
    try {
      const res = await app.call('GET', '/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'degraded', checks: { database: 'ok', redis: 'degraded' } });
    } finally {
      await app.close();
    }
  });
});

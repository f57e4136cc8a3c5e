import { guardUnawaitedTypeFetch } from './type-fetch.js';
import { drizzle } from 'drizzle-orm/postgres-js';
import { PostgresJsSession, PostgresJsTransaction } from 'drizzle-orm/postgres-js/session';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from './schema.js';
import { APP_ROLE, MIGRATION_LOCK, SERVING_LOCK, connectionError, isDatabaseUnavailable, lastStatements, setConfigStatementText, type Database, type Db, type TransactionOptions } from './client.js';
import { RequestExpiredError, requestDeadlines } from '../shared/timeout.js';
import { MIGRATIONS_FOLDER } from './paths.js';

export interface PostgresOptions {
  url: string;
  maxConnections?: number;
  /** Opening one connection, TCP connect to ready for queries. */
  connectTimeoutMs?: number;
  /** Taking a connection from the pool for a transaction, connecting included. */
  acquireTimeoutMs?: number;
  /** How often a serving process checks that it still holds the serving lock, and takes it again if not. */
  servingLockCheckMs?: number;
  /** postgres.js's statement hook: called with each statement's text and serialised parameters (benchmarks). */
  debug?: (connection: number, text: string, parameters: unknown[]) => void;
}

type Client = postgres.Sql;
type UnsafeOptions = NonNullable<Parameters<Client['unsafe']>[2]>;

/**
 * drizzle runs `execute` as an unnamed statement, which postgres.js sends in two round trips when
 * it has parameters (Parse + Describe, wait for the parameter types, then Bind + Execute), and
 * which PostgreSQL plans afresh every time. A parameterised statement is instead prepared once per
 * connection (postgres.js keeps them by text): one round trip from then on, and the server may
 * reuse the plan. Measured on recall (`npm run bench:locomo`), where a request runs three such
 * statements, this is the largest single saving. The statements' texts come from a bounded set:
 * values always travel as parameters (no SQL here inlines one), so the per-connection cache
 * cannot grow without bound. Statements without parameters (DDL in migrations among them) are
 * sent as before, in one round trip.
 */
export function preparingParameterised(client: Client): Client {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (text: string, parameters?: postgres.ParameterOrJSON<never>[], options?: UnsafeOptions) =>
          target.unsafe(text, parameters, parameters && parameters.length > 0 ? { ...options, prepare: true } : options);
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const work = args.pop() as (tx: Client) => unknown;
          return (target.begin as (...a: unknown[]) => Promise<unknown>)(...args, (tx: Client) => work(preparingParameterised(tx)));
        };
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}

/**
 * The parts of a postgres.js 3.4.9 query object the guard below uses: `handler` is what sends it
 * down its connection, `reject` settles it, and `options.onexecute` is called with the connection
 * a statement went down (postgres.js's own `begin` learns its connection the same way).
 */
interface QueryInternals {
  handler: (query: QueryInternals) => void;
  reject: (error: unknown) => void;
}
interface PooledConnection {
  id: number;
}

/**
 * Keeps a reserved connection from being used after its socket closed. postgres.js 3.4.9 takes a
 * statement sent on a reserved connection whose socket is gone and schedules its write to a null
 * socket, which throws from a timer and kills the process; and `release()` of such a connection
 * puts it among the open ones, where the next pooled statement meets the same end (upstream
 * porsager/postgres#1154, open; PR #1168 only guards the write, and then the statement hangs).
 * So: learn the connection's id from the first statement, hear of its close through the
 * client's `onclose`, then reject what was sent and what is sent later, and do not release it
 * (postgres.js has already moved it to its closed connections, to be reconnected).
 */
class ReservationGuard {
  private connectionId: number | undefined;
  private closedError: Error | undefined;
  private readonly inFlight = new Set<QueryInternals>();
  /** Called once, right after the first statement made from `armedAt` on is sent (lastStatement in client.ts). */
  private afterNext: (() => void) | undefined;
  private armedAt = 0;
  /** How many statements were made on the connection: postgres.js sends each a tick after it is made. */
  private made = 0;
  /** Set once the transaction's COMMIT was sent: a later statement would run outside it. */
  private sealedError: Error | undefined;
  private sealedAfter: unknown;

  constructor(private readonly byConnection: Map<number, ReservationGuard>) {}

  /** Set once the connection closed: the error every statement on it gets from then on. */
  get lost(): Error | undefined {
    return this.closedError;
  }

  /** The reserved connection, with every statement sent through the guard. */
  wrap(reserved: Client): Client {
    const onexecute = (connection: PooledConnection): boolean => {
      if (this.connectionId === undefined) {
        this.connectionId = connection.id;
        this.byConnection.set(connection.id, this);
      }
      return true;
    };
    return new Proxy(reserved, {
      get: (target, property, receiver) => {
        if (property !== 'unsafe') return Reflect.get(target, property, receiver) as unknown;
        return (text: string, parameters?: postgres.ParameterOrJSON<never>[], options?: UnsafeOptions) => {
          const query = target.unsafe(text, parameters, { ...options, onexecute } as UnsafeOptions);
          const internals = query as unknown as QueryInternals;
          const order = this.made++;
          const send = internals.handler;
          internals.handler = (q) => {
            if (this.closedError) return q.reject(this.closedError);
            if (this.sealedError && q !== this.sealedAfter) return q.reject(this.sealedError);
            this.inFlight.add(q);
            const settled = () => this.inFlight.delete(q);
            Promise.prototype.then.call(q, settled, settled);
            send(q);
            const after = this.afterNext;
            if (after && order >= this.armedAt) {
              this.afterNext = undefined;
              after();
            }
          };
          return query;
        };
      },
    });
  }

  /**
   * Runs `f` right after the next statement made from now on goes down the connection, in the
   * same tick (not after one made earlier, such as BEGIN, whose sending may still be pending).
   */
  afterNextStatement(f: () => void): void {
    this.afterNext = f;
    this.armedAt = this.made;
  }

  /** From now on every statement but `last` (already issued) is refused with `error`, without being sent. */
  seal(last: unknown, error: Error): void {
    this.sealedAfter = last;
    this.sealedError = error;
  }

  /** postgres.js's `onclose` for this connection: statements queued behind it would never settle. */
  connectionClosed(): void {
    this.closedError ??= connectionError('CONNECTION_CLOSED', 'the database connection closed during a transaction');
    for (const query of this.inFlight) query.reject(this.closedError);
    this.inFlight.clear();
    this.forget();
  }

  forget(): void {
    if (this.connectionId !== undefined && this.byConnection.get(this.connectionId) === this) this.byConnection.delete(this.connectionId);
  }
}

/**
 * How often a reservation still unanswered is asked for again. postgres.js 3.4.9 strands a
 * reservation when a closing connection takes it from the wait queue to reconnect with, and that
 * connection first fetches the array types: it drops the reservation, which no other connection can
 * then find (upstream #1195). That happens after the database comes back from an outage; a second
 * request stays in the queue and is served by the next connection that opens.
 */
const RESERVE_AGAIN_EVERY_MS = 250;

/**
 * `client.reserve()` with a deadline: postgres.js waits for a free connection without one, and a
 * queued reservation can even be stranded for good, so one unanswered is asked for again every
 * RESERVE_AGAIN_EVERY_MS. The first connection to arrive is used; one that arrives later (or
 * after the deadline) is handed straight back. The first refusal (the database is unreachable)
 * ends the wait.
 */
function reserveWithin(client: Client, ms: number): Promise<postgres.ReservedSql> {
  return new Promise((resolve, reject) => {
    let done = false;
    // One timer, re-armed while unanswered: almost every reservation is answered before it fires.
    let timer: NodeJS.Timeout | undefined;
    const deadline = performance.now() + ms;
    const finish = () => {
      done = true;
      clearTimeout(timer);
    };
    const ask = () =>
      client.reserve().then(
        (reserved) => {
          if (done) return reserved.release();
          finish();
          resolve(reserved);
        },
        (error: unknown) => {
          if (done) return;
          finish();
          reject(error as Error);
        },
      );
    const tick = () => {
      if (done) return;
      const left = deadline - performance.now();
      if (left <= 0) {
        finish();
        reject(connectionError('CONNECTION_ACQUIRE_TIMEOUT', `no database connection within ${ms} ms`));
        return;
      }
      ask();
      timer = setTimeout(tick, Math.min(RESERVE_AGAIN_EVERY_MS, left));
    };
    ask();
    timer = setTimeout(tick, Math.min(RESERVE_AGAIN_EVERY_MS, ms));
  });
}

/**
 * setConfigStatement's text for `count` settings, built once per count: drizzle would build the
 * same few statements again for every transaction (measured: a tenth of a small request's CPU).
 */
const setConfigTexts: string[] = [];
function setConfigText(count: number): string {
  return (setConfigTexts[count] ??= setConfigStatementText(count));
}

/** What a drizzle database built by `drizzle()` holds, read back to build transactions of our own. */
interface DrizzleInternals {
  dialect: ConstructorParameters<typeof PostgresJsSession>[1];
  session: { options: ConstructorParameters<typeof PostgresJsSession>[3] };
  _: { schema: unknown; fullSchema: Record<string, unknown>; tableNamesMap: Record<string, string> };
}

/**
 * Transactions that cost one round trip less than drizzle's, twice over. postgres.js's `begin`
 * waits for BEGIN before it runs anything else, and the settings (role, tenant) then take a round
 * trip of their own. Here a connection is reserved and BEGIN and the `set_config` statement are
 * sent at once, and the transaction's first statement follows them down the same connection
 * without waiting: PostgreSQL runs them in the order sent, so that statement still runs after the
 * settings. (Both are sent before `work` starts; its first statement cannot overtake them.) When
 * the settings fail, their error is the one thrown. drizzle's own transaction classes run `work`,
 * so repositories see no difference.
 */
function pipelinedTransactions(
  client: Client,
  db: ReturnType<typeof drizzle<typeof schema>>,
  guards: Map<number, ReservationGuard>,
  acquireTimeoutMs: number,
): Database['inTransaction'] {
  const internals = db as unknown as DrizzleInternals;
  const relational = { schema: internals._.schema, fullSchema: internals._.fullSchema, tableNamesMap: internals._.tableNamesMap };
  return async <T>(settings: ReadonlyArray<readonly [string, string]>, work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T> => {
    // The HTTP request this transaction serves, if any: once it was answered as timed out, the
    // transaction rolls back where it would commit, and no statement of it outlasts the request's bound
    // (shared/timeout.ts). An expired request takes no connection for a write it would roll back.
    const request = requestDeadlines.getStore();
    if (!options?.readOnly && request?.expired) throw new RequestExpiredError();
    const applied: ReadonlyArray<readonly [string, string]> = request ? [...settings, ['statement_timeout', String(2 * request.timeoutMs)]] : settings;
    const reserved = await reserveWithin(client, acquireTimeoutMs);
    const guard = new ReservationGuard(guards);
    const connection = preparingParameterised(guard.wrap(reserved));
    let finished = false;
    let commit: Promise<unknown> | undefined;
    let rolledBackExpired = false;
    const sendCommit = () => {
      rolledBackExpired = request?.expired === true && !options?.readOnly;
      if (rolledBackExpired) {
        commit = connection.unsafe('rollback').execute();
      } else {
        commit = connection.unsafe('commit').execute();
        if (request && !options?.readOnly) {
          request.committing += 1;
          void commit.then(
            () => void (request.committing -= 1),
            () => void (request.committing -= 1),
          );
        }
      }
      // Awaited below only when the work succeeded and wrote: a read-only COMMIT has nothing to make
      // durable, and after a failed last statement it is the rollback (the statement's error is thrown).
      commit.catch(() => {});
      finished = true;
      // Anything after the COMMIT would run outside the transaction: without the role and tenant.
      guard.seal(commit, new Error('a statement was sent after the last statement of its transaction'));
    };
    try {
      const begin = connection.unsafe(options?.readOnly ? 'begin read only' : 'begin').execute();
      const configured = applied.length > 0 ? connection.unsafe(setConfigText(applied.length), applied.flat() as never[]).execute() : undefined;
      const ready = Promise.all([begin, configured]);
      ready.catch(() => {}); // awaited below, after work: its error explains work's
      const session = new PostgresJsSession(connection as never, internals.dialect, relational as never, internals.session.options);
      const tx = new PostgresJsTransaction(internals.dialect, session, relational as never) as unknown as Db;
      // A transaction's COMMIT may go down with its last statement, in the same write.
      lastStatements.set(tx, () => guard.afterNextStatement(sendCommit));
      let result: T;
      try {
        result = await work(tx);
      } finally {
        await ready;
      }
      if (!commit) sendCommit();
      // The connection runs the COMMIT before anything its next user sends, so only a transaction
      // that wrote needs to hear it acknowledged.
      if (!options?.readOnly) await commit;
      if (rolledBackExpired) throw new RequestExpiredError();
      if (request && !options?.readOnly) request.committed = true;
      return result;
    } catch (error) {
      // A COMMIT already sent settles before the error is thrown, so the caller hears of the failure
      // once the transaction's outcome is decided (a rollback when the last statement failed).
      if (commit) await commit.catch(() => {});
      // Whatever a statement made of the lost connection, the cause is the database going away.
      if (guard.lost && !isDatabaseUnavailable(error)) throw Object.assign(connectionError('CONNECTION_CLOSED', guard.lost.message), { cause: error });
      throw error;
    } finally {
      if (!finished) await connection.unsafe('rollback').catch(() => {});
      guard.forget();
      if (!guard.lost) reserved.release();
    }
  };
}

export async function openPostgres(options: PostgresOptions): Promise<Database> {
  guardUnawaitedTypeFetch();
  const guards = new Map<number, ReservationGuard>();
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    connect_timeout: (options.connectTimeoutMs ?? 1000) / 1000,
    // postgres.js waits up to 20 s between attempts after repeated failures by default, which
    // keeps the service down long after the database is back; retry soon, at most every 0.5 s.
    backoff: (attempt: number) => Math.min(0.5, 0.05 * 2 ** attempt) * (0.5 + Math.random() / 2),
    idle_timeout: 30,
    onnotice: () => {},
    onclose: (connectionId: number) => guards.get(connectionId)?.connectionClosed(),
    connection: { application_name: 'engram' },
    ...(options.debug ? { debug: options.debug } : {}),
  });
  const db = drizzle(preparingParameterised(client), { schema });
  const inTransaction = pipelinedTransactions(client, db, guards, options.acquireTimeoutMs ?? 1500);
  const [me] = await client<{ current_user: string }[]>`select current_user`;
  // The connection holding the serving lock (holdServing, claimExclusive): the lock lives as long as it.
  let held: postgres.ReservedSql | undefined;
  let servingCheck: NodeJS.Timeout | undefined;
  // A dropped connection (a restart, a terminated backend) takes the shared lock with it, and a
  // re-embed could then start under a running service: it is checked for and taken again. A try,
  // so a re-embed that got in between is not waited for (the service's next start refuses).
  let heldPid: number | undefined;
  let checking = false;
  const takeServingLock = async (lock: 'pg_advisory_lock_shared' | 'pg_try_advisory_lock_shared') => {
    held ??= await client.reserve();
    const [row] = await held.unsafe<{ pid: number }[]>(`select pg_backend_pid() as pid, ${lock}($1, $2)`, [SERVING_LOCK[0], SERVING_LOCK[1]]);
    heldPid = row?.pid;
  };
  // Asked through the pool: a reserved connection whose socket is gone breaks on its next use.
  const keepServingLock = async () => {
    if (checking) return;
    checking = true;
    try {
      const [row] = await client<{ held: boolean }[]>`select exists (select 1 from pg_locks where locktype = 'advisory' and granted and pid = ${heldPid ?? 0}
        and classid::bigint = ${SERVING_LOCK[0]} and objid::bigint = ${SERVING_LOCK[1]} and objsubid = 2) as held`;
      if (row?.held) return;
      // Not released: postgres.js has already put the closed connection aside, and releasing it
      // would hand a connection without a socket to the pool's next user (as the transactions'
      // guard does not release a lost one either).
      held = undefined;
      await takeServingLock('pg_try_advisory_lock_shared');
    } catch {
      // The database is unreachable: the next check tries again.
    } finally {
      checking = false;
    }
  };
  return {
    kind: 'postgres',
    db: db as unknown as Db,
    switchesRole: me?.current_user !== APP_ROLE,
    inTransaction,
    async migrate() {
      // drizzle's migrator takes no lock: two processes migrating a new database at once both ran
      // CREATE EXTENSION, and one failed to start. The second now waits, then finds nothing to do.
      // The lock on a connection of its own, outside the pool, which may hold a single connection.
      const lock = postgres(options.url, { max: 1, connect_timeout: (options.connectTimeoutMs ?? 1000) / 1000, onnotice: () => {} });
      try {
        await lock`select pg_advisory_lock(${MIGRATION_LOCK[0]}, ${MIGRATION_LOCK[1]})`;
        await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
      } finally {
        await lock.end({ timeout: 5 }); // the session's end releases the lock
      }
    },
    async ping() {
      await client`select 1`;
    },
    async holdServing() {
      await takeServingLock('pg_advisory_lock_shared');
      servingCheck ??= setInterval(() => void keepServingLock(), options.servingLockCheckMs ?? 5000);
      servingCheck.unref();
    },
    async claimExclusive() {
      held ??= await client.reserve();
      const [row] = await held<{ ok: boolean }[]>`select pg_try_advisory_lock(${SERVING_LOCK[0]}, ${SERVING_LOCK[1]}) as ok`;
      return row?.ok === true;
    },
    async close() {
      clearInterval(servingCheck);
      held?.release();
      await client.end({ timeout: 5 });
    },
  };
}

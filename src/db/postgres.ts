import { drizzle } from 'drizzle-orm/postgres-js';
import { PostgresJsSession, PostgresJsTransaction } from 'drizzle-orm/postgres-js/session';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from './schema.js';
import { APP_ROLE, setConfigStatement, type Database, type Db, type TransactionOptions } from './client.js';
import { MIGRATIONS_FOLDER } from './paths.js';

export interface PostgresOptions {
  url: string;
  maxConnections?: number;
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
function pipelinedTransactions(client: Client, db: ReturnType<typeof drizzle<typeof schema>>): Database['inTransaction'] {
  const internals = db as unknown as DrizzleInternals;
  const relational = { schema: internals._.schema, fullSchema: internals._.fullSchema, tableNamesMap: internals._.tableNamesMap };
  return async <T>(settings: ReadonlyArray<readonly [string, string]>, work: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T> => {
    const reserved = await client.reserve();
    const connection = preparingParameterised(reserved);
    let finished = false;
    try {
      const begin = connection.unsafe(options?.readOnly ? 'begin read only' : 'begin').execute();
      const statement = settings.length > 0 ? internals.dialect.sqlToQuery(setConfigStatement(settings)) : undefined;
      const configured = statement ? connection.unsafe(statement.sql, statement.params as never[]).execute() : undefined;
      const ready = Promise.all([begin, configured]);
      ready.catch(() => {}); // awaited below, after work: its error explains work's
      const session = new PostgresJsSession(connection as never, internals.dialect, relational as never, internals.session.options);
      const tx = new PostgresJsTransaction(internals.dialect, session, relational as never);
      let result: T;
      try {
        result = await work(tx as unknown as Db);
      } finally {
        await ready;
      }
      const commit = connection.unsafe('commit').execute();
      finished = true;
      // The connection runs the COMMIT before anything its next user sends, so only a transaction
      // that wrote needs to hear it acknowledged.
      if (options?.readOnly) commit.catch(() => {});
      else await commit;
      return result;
    } finally {
      if (!finished) await connection.unsafe('rollback').catch(() => {});
      reserved.release();
    }
  };
}

export async function openPostgres(options: PostgresOptions): Promise<Database> {
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    connect_timeout: 5,
    idle_timeout: 30,
    onnotice: () => {},
    connection: { application_name: 'engram' },
  });
  const db = drizzle(preparingParameterised(client), { schema });
  const inTransaction = pipelinedTransactions(client, db);
  const [me] = await client<{ current_user: string }[]>`select current_user`;
  return {
    kind: 'postgres',
    db: db as unknown as Db,
    switchesRole: me?.current_user !== APP_ROLE,
    inTransaction,
    async migrate() {
      await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
    },
    async ping() {
      await client`select 1`;
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

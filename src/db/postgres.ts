import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import * as schema from './schema.js';
import { APP_ROLE, type Database, type Db } from './client.js';
import { MIGRATIONS_FOLDER } from './paths.js';

export interface PostgresOptions {
  url: string;
  maxConnections?: number;
}

export async function openPostgres(options: PostgresOptions): Promise<Database> {
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    connect_timeout: 5,
    idle_timeout: 30,
    onnotice: () => {},
    connection: { application_name: 'engram' },
  });
  const db = drizzle(client, { schema });
  const [me] = await client<{ current_user: string }[]>`select current_user`;
  return {
    kind: 'postgres',
    db: db as unknown as Db,
    switchesRole: me?.current_user !== APP_ROLE,
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

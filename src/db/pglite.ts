import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import * as schema from './schema.js';
import { setConfigStatement, type Database, type Db } from './client.js';
import { ensureDataDir, tightenDataDir } from './data-dir.js';
import { MIGRATIONS_FOLDER } from './paths.js';

export interface PgliteOptions {
  /** A folder for a persistent database, or undefined for an in-memory one (tests). */
  dataDir: string | undefined;
  /** Start from a dumped data directory (e.g. an already migrated one) instead of initdb. */
  loadDataDir?: Blob;
}

/**
 * Embedded PostgreSQL (PGlite, WebAssembly) with pgvector: the same schema, migrations and RLS
 * as production. PGlite's only user is a superuser, so every transaction switches to the
 * application role exactly as with a superuser DATABASE_URL; RLS then holds.
 */
export interface PgliteDatabase extends Database {
  /** The embedded server itself; its session is the superuser (the owner), past RLS. */
  readonly client: PGlite;
}

export async function openPglite(options: PgliteOptions): Promise<PgliteDatabase> {
  let dataDir: string | undefined;
  if (options.dataDir) dataDir = path.join(ensureDataDir(options.dataDir), 'pg');
  const client = await PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    extensions: { vector },
  });
  // PGlite lays out a new data directory with files 0666 whatever the umask; an older version of
  // this service left them so too. The 0700 folder above already keeps other users out.
  if (options.dataDir) tightenDataDir(options.dataDir);
  const db = drizzle(client, { schema });
  const typedDb = db as unknown as Db;
  return {
    kind: 'pglite',
    client,
    db: typedDb,
    switchesRole: true,
    inTransaction(settings, work, options) {
      return typedDb.transaction(
        async (tx) => {
          if (settings.length > 0) await tx.execute(setConfigStatement(settings));
          return work(tx as unknown as Db);
        },
        options?.readOnly ? { accessMode: 'read only' } : undefined,
      );
    },
    async migrate() {
      await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
    },
    async ping() {
      await client.query('select 1');
    },
    async close() {
      if (!client.closed) await client.close();
    },
  };
}

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import * as schema from './schema.js';
import { setConfigStatement, type Database, type Db } from './client.js';
import { RequestExpiredError, requestDeadlines } from '../shared/timeout.js';
import { ensureDataDir, lockDataDir, tightenDataDir } from './data-dir.js';
import { MIGRATIONS_FOLDER } from './paths.js';

/**
 * PostgreSQL's buffer cache inside PGlite's WebAssembly memory. initdb picks 128MB, and that memory
 * is touched at start: the larger part of the embedded start's resident memory
 * (`npm run bench:startup`). The data files are read through the operating system's page cache
 * anyway, so a smaller one costs little: measured with `npm run bench -- ops --backend pglite`.
 */
export const EMBEDDED_SHARED_BUFFERS = '16MB';

/**
 * Runs initdb for a new data directory in a child process (pglite-init.ts), whose memory is
 * returned to the system when it exits; the service then opens the directory as on any restart.
 * Measured with `npm run bench:startup`: the first start's resident memory falls from ~600 MB to
 * that of a restart, for about a second more of start-up.
 */
async function initialiseApart(dataDir: string): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  // Under tsx the sources are .ts and the child needs the same loader; compiled, plain .js.
  const script = path.join(path.dirname(self), `pglite-init${path.extname(self)}`);
  const child = spawn(process.execPath, [...loaderArguments(process.execArgv), script, dataDir, EMBEDDED_SHARED_BUFFERS], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`initialising the embedded database in ${dataDir} failed (exit ${code}): ${stderr.trim().slice(-500)}`);
}

/** The module loaders among Node's arguments (tsx's), without the rest (an --inspect port, a profiler). */
export function loaderArguments(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  const loader = /^--(import|require|loader|experimental-loader)(=|$)/;
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (!loader.test(arg)) continue;
    kept.push(arg);
    if (!arg.includes('=') && i + 1 < execArgv.length) kept.push(execArgv[++i]!);
  }
  return kept;
}

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
  let unlock = () => {};
  if (options.dataDir) {
    dataDir = path.join(ensureDataDir(options.dataDir), 'pg');
    unlock = lockDataDir(options.dataDir);
  }
  let client: PGlite;
  try {
    if (dataDir && !options.loadDataDir && !existsSync(path.join(dataDir, 'PG_VERSION'))) await initialiseApart(dataDir);
    client = await PGlite.create({
      ...(dataDir ? { dataDir } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      extensions: { vector },
      startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
    });
  } catch (error) {
    unlock();
    throw error;
  }
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
    async inTransaction(settings, work, options) {
      // As on PostgreSQL: a request already answered as timed out does not commit (shared/timeout.ts).
      const request = options?.readOnly ? undefined : requestDeadlines.getStore();
      if (request?.expired) throw new RequestExpiredError();
      let committing = false;
      try {
        const outcome = await typedDb.transaction(
          async (tx) => {
            if (settings.length > 0) await tx.execute(setConfigStatement(settings));
            const result = await work(tx as unknown as Db);
            if (request?.expired) throw new RequestExpiredError();
            if (request) {
              request.committing += 1;
              committing = true;
            }
            return result;
          },
          options?.readOnly ? { accessMode: 'read only' } : undefined,
        );
        // Reached only when the COMMIT succeeded (drizzle throws otherwise).
        if (request) request.committed = true;
        return outcome;
      } finally {
        if (committing) request!.committing -= 1;
      }
    },
    async migrate() {
      await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
    },
    async ping() {
      await client.query('select 1');
    },
    async close() {
      try {
        if (!client.closed) await client.close();
      } finally {
        unlock();
      }
    },
  };
}

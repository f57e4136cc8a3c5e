import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MIGRATIONS_FOLDER } from '../../src/db/paths.js';
import pino from 'pino';
import postgres from 'postgres';
import { signDevToken } from '../../src/auth/sign.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.js';
import { openPglite } from '../../src/db/pglite.js';
import { TEMPLATE_DB, TEST_DATABASE_URL, TEST_JWT_SECRET, adminUrl } from './env.js';
import { assertDocumentedResponse } from './openapi-check.js';

export const ALL_SCOPES = 'memories:read memories:write memories:delete';

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'silent',
    ...offlineEmbeddings(overrides),
    ...overrides,
  });
}

/**
 * Tests embed with the lexical embedder unless they ask for another (or point at an endpoint):
 * the local model costs a second and ~150 MB per load, and the few tests of it share one.
 */
export function offlineEmbeddings(overrides: Record<string, string>): Record<string, string> {
  return overrides.OPENAI_BASE_URL || overrides.OPENAI_API_KEY ? {} : { EMBEDDINGS: 'lexical' };
}

/** A tenant id no other test uses, so files can share one database and run in parallel. */
export function uniqueTenant(label = 't'): string {
  return `${label}-${randomUUID().slice(0, 12)}`;
}

export interface TokenOptions {
  tenant: string;
  user?: string | undefined;
  scope?: string;
  ttlSeconds?: number;
}

export function tokenFor(options: TokenOptions): Promise<string> {
  return signDevToken({
    secret: TEST_JWT_SECRET,
    issuer: 'memory-layer',
    audience: 'memory-api',
    tenantClaim: 'tenant_id',
    tenant: options.tenant,
    user: options.user,
    scope: options.scope ?? ALL_SCOPES,
    ttlSeconds: options.ttlSeconds ?? 600,
  });
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Skip the openapi.yaml drift check; only for a deliberately malformed request. */
  skipOpenApiCheck?: boolean;
}

export interface CallResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * Which backend the contract tests run against: real PostgreSQL + Redis (default), or embedded
 * PGlite with the in-process queue (the `npm start` default). vitest.config.ts runs the contract
 * files once per backend.
 */
export const TEST_BACKEND: 'postgres' | 'pglite' = process.env.TEST_BACKEND === 'pglite' ? 'pglite' : 'postgres';

/**
 * SQL as the database owner (a superuser, past RLS) on an app's database, on either backend:
 * a tagged template (values become parameters), `.unsafe(text, params)`, and `.json(value)`.
 */
export interface Owner {
  <T = any>(strings: TemplateStringsArray, ...values: unknown[]): Promise<T[]>;
  unsafe<T = any>(text: string, params?: unknown[]): Promise<T[]>;
  json(value: unknown): string;
  end(options?: unknown): Promise<void>;
}

function ownerOver(query: (text: string, params: unknown[]) => Promise<unknown[]>): Owner {
  const tagged = (strings: TemplateStringsArray, ...values: unknown[]) =>
    query(strings.reduce((text, part, i) => `${text}${part}${i < values.length ? `$${i + 1}` : ''}`, ''), values);
  return Object.assign(tagged, {
    unsafe: (text: string, params: unknown[] = []) => query(text, params),
    json: (value: unknown) => JSON.stringify(value),
    end: async () => {},
  }) as Owner;
}

export interface TestApp {
  /** Runs SQL as the database owner (superuser), past RLS, on this app's database. */
  ownerQuery<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** The same, as a tagged template; works on both backends. */
  owner: Owner;
  runtime: Runtime;
  /** The database this app serves (its own, for apps started with `isolated`). */
  databaseUrl: string;
  /** A superuser connection to this app's database, past RLS. */
  ownerSql(): ReturnType<typeof postgres>;
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<CallResult<T>>;
  close(): Promise<void>;
}

/** The real app (real PostgreSQL, application role, RLS) driven in-process through app.request(). */
export interface StartOptions extends RuntimeOptions {
  /**
   * Serve a fresh database cloned from the migrated test database. Apps that run a worker need
   * it: queue sweeps look across tenants, and must not pick up other test files' jobs.
   */
  isolated?: boolean;
}

export async function startTestApp(overrides: Record<string, string> = {}, options: StartOptions = {}): Promise<TestApp> {
  if (TEST_BACKEND === 'pglite') return startPgliteApp(overrides, options);
  const { isolated, ...runtimeOptions } = options;
  const databaseUrl = isolated ? await createIsolatedDatabase() : (overrides.DATABASE_URL ?? TEST_DATABASE_URL);
  let runtime: Runtime;
  try {
    runtime = await createRuntime(testConfig({ ...overrides, DATABASE_URL: databaseUrl }), { logger: pino({ level: 'silent' }), ...runtimeOptions });
  } catch (error) {
    if (isolated) await dropIsolatedDatabase(databaseUrl);
    throw error;
  }
  let owner: ReturnType<typeof postgres> | undefined;
  return {
    runtime,
    databaseUrl,
    ownerSql: () => postgres(databaseUrl, { max: 2, onnotice: () => {} }),
    async ownerQuery<T>(text: string, params: unknown[] = []) {
      owner ??= postgres(databaseUrl, { max: 1, onnotice: () => {} });
      return (await owner.unsafe(text, params as never[])) as unknown as T[];
    },
    owner: ownerOver(async (text, params) => {
      owner ??= postgres(databaseUrl, { max: 1, onnotice: () => {} });
      return [...(await owner.unsafe(text, params as never[]))];
    }),
    call: callThrough(runtime),
    async close() {
      await owner?.end();
      await runtime.close();
      if (isolated) await dropIsolatedDatabase(databaseUrl);
    },
  };
}

/** The embedded backend: a fresh in-memory PGlite per app, the in-process queue, no Redis. */
export async function startPgliteApp(overrides: Record<string, string>, options: StartOptions): Promise<TestApp> {
  const { isolated: _isolated, ...runtimeOptions } = options;
  const database = await openPglite({ dataDir: undefined, loadDataDir: await migratedPgliteSnapshot() });
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...rest } = overrides;
  const config = loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent', ...offlineEmbeddings(rest), ...rest });
  let runtime: Runtime;
  try {
    runtime = await createRuntime({ ...config, migrateOnStart: true }, { logger: pino({ level: 'silent' }), database, ...runtimeOptions });
  } catch (error) {
    await database.close();
    throw error;
  }
  return {
    runtime,
    databaseUrl: 'pglite://memory',
    ownerSql: () => {
      throw new Error('ownerSql() needs PostgreSQL; use ownerQuery(), which works on both backends');
    },
    async ownerQuery<T>(text: string, params: unknown[] = []) {
      return (await database.client.query<T>(text, params)).rows;
    },
    owner: ownerOver(async (text, params) => (await database.client.query(text, params)).rows),
    call: callThrough(runtime),
    async close() {
      await runtime.close();
      await database.close();
    },
  };
}

/**
 * A migrated PGlite data directory, dumped once per migration set into the temp folder: opening
 * from it skips initdb and the migrations, the slow part of an embedded start.
 */
async function migratedPgliteSnapshot(): Promise<Blob> {
  const migrations = readdirSync(MIGRATIONS_FOLDER, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((name) => {
      const file = path.join(MIGRATIONS_FOLDER, name);
      return statSync(file).isFile() ? `${name}\n${readFileSync(file, 'utf8')}` : name;
    })
    .join('\n');
  const digest = createHash('sha256').update(migrations).digest('hex').slice(0, 16);
  const file = path.join(tmpdir(), `engram-pglite-migrated-${digest}.tar.gz`);
  if (!existsSync(file)) {
    const fresh = await openPglite({ dataDir: undefined });
    try {
      await fresh.migrate();
      const dump = await fresh.client.dumpDataDir('gzip');
      const partial = `${file}.${process.pid}.${randomUUID()}`;
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
      renameSync(partial, file);
    } finally {
      await fresh.close();
    }
  }
  return new Blob([readFileSync(file)]);
}

function callThrough(runtime: Runtime): TestApp['call'] {
  return async (method, path, { token, body, rawBody, headers = {}, skipOpenApiCheck = false } = {}) => {
    const init: RequestInit = { method, headers: { ...headers } };
    const h = init.headers as Record<string, string>;
    if (token) h.authorization = `Bearer ${token}`;
    if (rawBody !== undefined) init.body = rawBody;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const response = await runtime.app.request(path, init);
    const text = await response.text();
    let parsed: unknown = text;
    // JSON and problem+json, not NDJSON (an export stays text: one JSON value a line).
    const json = /^application\/([\w.-]+\+)?json\b/.test(response.headers.get('content-type') ?? '');
    if (text && json) parsed = JSON.parse(text);
    // Every JSON answer must be one openapi.yaml documents for this route and status.
    if (!skipOpenApiCheck && json) assertDocumentedResponse(method, path, response.status, parsed, response.headers);
    return { status: response.status, headers: response.headers, body: parsed as any };
  };
}

async function createIsolatedDatabase(): Promise<string> {
  // The creation time in the name lets a later run clean up only what is surely abandoned.
  const name = `engram_iso_${Math.floor(Date.now() / 1000)}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    // A template copy is a file-level clone: migrated schema, roles' grants and policies included.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database ${name} template ${TEMPLATE_DB}`);
        break;
      } catch (error) {
        // Two files cloning at the same instant: the template is briefly busy.
        if (attempt >= 40 || !/being accessed by other users/.test(String(error))) throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropIsolatedDatabase(databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end();
  }
}


/** A superuser connection for checks that must see past RLS (e.g. proving erasure is complete). */
export function ownerSql() {
  return postgres(TEST_DATABASE_URL, { max: 2, onnotice: () => {} });
}

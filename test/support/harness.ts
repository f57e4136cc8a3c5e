import { randomUUID } from 'node:crypto';
import pino from 'pino';
import postgres from 'postgres';
import { signDevToken } from '../../src/auth/sign.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { TEST_DATABASE_URL, TEST_JWT_SECRET } from './env.js';

export const ALL_SCOPES = 'memories:read memories:write memories:delete';

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
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
}

export interface CallResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestApp {
  runtime: Runtime;
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<CallResult<T>>;
  close(): Promise<void>;
}

/** The real app (real PostgreSQL, application role, RLS) driven in-process through app.request(). */
export async function startTestApp(overrides: Record<string, string> = {}, options: { clock?: () => Date } = {}): Promise<TestApp> {
  const runtime = await createRuntime(testConfig(overrides), { logger: pino({ level: 'silent' }), ...options });
  return {
    runtime,
    async call(method, path, { token, body, rawBody, headers = {} } = {}) {
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
      if (text && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
      return { status: response.status, headers: response.headers, body: parsed as any };
    },
    close: () => runtime.close(),
  };
}

/** A superuser connection for checks that must see past RLS (e.g. proving erasure is complete). */
export function ownerSql() {
  return postgres(TEST_DATABASE_URL, { max: 2, onnotice: () => {} });
}

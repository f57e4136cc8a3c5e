import { SignJWT } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/client.js';
import { errorSummary } from '../../src/http/app.js';
import { TEST_JWT_SECRET } from '../support/env.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/** Findings of a black-box review of the running service, each pinned by a test. */
let app: TestApp;
const tenant = uniqueTenant('harden');

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

function signed(claims: Record<string, unknown>, withExp = true): Promise<string> {
  const jwt = new SignJWT({ tenant_id: tenant, scope: 'memories:read memories:write', ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('memory-layer')
    .setAudience('memory-api');
  if (withExp) jwt.setExpirationTime('5m');
  return jwt.sign(new TextEncoder().encode(TEST_JWT_SECRET));
}

describe('token subjects and lifetimes', () => {
  it('refuses a subject with a NUL byte (401, not a 500)', async () => {
    const res = await app.call('GET', '/memories', { token: await signed({ sub: 'al\u0000ice' }) });
    expect(res.status).toBe(401);
  });

  it('refuses subjects with lone surrogates, so two of them cannot collapse into one user', async () => {
    const a = await app.call('POST', '/memories', { token: await signed({ sub: 'a\ud800b' }), body: { memories: [{ content: 'surrogate fact' }] } });
    const b = await app.call('GET', '/memories', { token: await signed({ sub: 'a\udc00b' }) });
    expect([a.status, b.status]).toEqual([401, 401]);
  });

  it('refuses a token without exp: it would never expire', async () => {
    const res = await app.call('GET', '/memories', { token: await signed({ sub: 'alice' }, false) });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/exp/);
  });

  it('sends no error code in the challenge when no credentials were sent (RFC 6750 §3.1)', async () => {
    const none = await app.call('GET', '/memories');
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="engram"');
    const bad = await app.call('GET', '/memories', { token: 'not.a.token' });
    expect(bad.headers.get('www-authenticate')).toBe('Bearer realm="engram", error="invalid_token"');
  });
});

describe('infer: false', () => {
  it('refuses a user message too long to be stored as one memory, instead of cutting it', async () => {
    const token = await tokenFor({ tenant, user: 'long' });
    const res = await app.call('POST', '/memories/extract', {
      token,
      body: { infer: false, messages: [{ role: 'user', content: 'z'.repeat(10_050) }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('/messages/0/content');
    const assistant = await app.call('POST', '/memories/extract', {
      token,
      body: { infer: false, messages: [{ role: 'assistant', content: 'z'.repeat(10_050) }, { role: 'user', content: 'short' }] },
    });
    expect(assistant.status).toBe(202);
  });
});

describe('errors that reach the log or the caller', () => {
  it('a failed query is summarised without its message, which lists the parameters', () => {
    const error = new Error('Failed query: insert into memories ...\nparams: demo,alice,secret diagnosis: diabetes');
    const summary = JSON.stringify(errorSummary(error));
    expect(summary).not.toContain('diabetes');
    expect(summary).toContain('at ');
  });

  it('treats a database that is gone, renamed or closed to connections as unavailable (503), not a bug', () => {
    for (const code of ['3D000', '55000', '28P01', 'ECONNREFUSED', '57P01']) {
      expect(isDatabaseUnavailable({ cause: { code } }), code).toBe(true);
    }
    expect(isDatabaseUnavailable({ code: '23505' })).toBe(false);
  });
});

describe.skipIf(TEST_BACKEND !== 'postgres')('start-up on a database that was never migrated', () => {
  it('refuses to start with MIGRATE_ON_START=false, naming the fix', async () => {
    const { default: postgres } = await import('postgres');
    const { adminUrl, databaseUrl } = await import('../support/env.js');
    const { createRuntime } = await import('../../src/runtime.js');
    const { testConfig } = await import('../support/harness.js');
    const name = `engram_iso_${Math.floor(Date.now() / 1000)}_nomig${Math.random().toString(16).slice(2, 8)}`;
    const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    try {
      const config = testConfig({ DATABASE_URL: databaseUrl(name), MIGRATE_ON_START: 'false' });
      await expect(createRuntime(config, { logger: pino({ level: 'silent' }) })).rejects.toThrow(/not current.*npm run db:migrate/);
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/auth/principal.js';
import { createTokenVerifier, type TokenVerifier } from '../../src/auth/verifier.js';
import { registerExtractionRoutes } from '../../src/extraction/routes.js';
import { buildApp } from '../../src/http/app.js';
import { rateLimitKey } from '../../src/http/rate-limit.js';
import { registerQueueDashboard } from '../../src/queue/dashboard.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { ALL_SCOPES, TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, uniqueQueuePrefix } from '../support/jobs.js';
import { freePort } from '../support/process.js';

/**
 * RATE_LIMIT_PER_MINUTE is one count per tenant over every authenticated route, each request
 * verified and counted once; with Redis the count is shared by every instance, and a Redis that
 * stops answering leaves each instance counting on its own rather than failing requests.
 */

const apps: TestApp[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(prefixes.map((p) => deleteQueueKeys(p)));
});

async function start(overrides: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp(overrides);
  apps.push(app);
  return app;
}

/** Every kind of protected route: the list, an id under it, a job, and the operators' page. */
const ROUTES = () => ['/memories', `/memories/${randomUUID()}`, `/jobs/${randomUUID()}`, '/admin/queues'];
const everyScope = `${ALL_SCOPES} ${SCOPES.operator}`;

// Each case starts apps of its own (an embedded one takes a while on a busy machine).
describe('one counter per tenant', { timeout: 120_000 }, () => {
  it('counts /memories*, /jobs/* and /admin/* together: 4 requests a minute at a limit of 4, not 4 per group', async () => {
    const app = await start({ RATE_LIMIT_PER_MINUTE: '4' });
    const token = await tokenFor({ tenant: uniqueTenant('rl-one'), user: 'alice', scope: everyScope });
    const statuses: Record<string, number[]> = {};
    for (let round = 0; round < 4; round++) {
      for (const path of ROUTES()) {
        const res = await app.call('GET', path, { token });
        (statuses[path.split('/')[1]!] ??= []).push(res.status);
        if (res.status === 429) {
          expect(res.headers.get('content-type')).toBe('application/problem+json');
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        }
      }
    }
    const served = Object.values(statuses).flat().filter((s) => s !== 429).length;
    expect({ served, statuses }).toMatchObject({ served: 4 });

    // Another tenant has a counter of its own.
    const other = await tokenFor({ tenant: uniqueTenant('rl-other'), user: 'bob', scope: everyScope });
    expect((await app.call('GET', '/memories', { token: other })).status).toBe(200);
  });

  it('verifies each request\'s token once, on every protected route', async () => {
    const app = await start({});
    const { services, queue } = app.runtime;
    let verifications = 0;
    const inner = createTokenVerifier(services.config.auth);
    const spy: TokenVerifier = {
      verify(token) {
        verifications += 1;
        return inner.verify(token);
      },
    };
    const spied = buildApp({
      services,
      verifier: spy,
      extraRoutes: [(a) => registerExtractionRoutes(a, services, queue), (a) => registerQueueDashboard(a, queue)],
    });
    const token = await tokenFor({ tenant: uniqueTenant('rl-verify'), user: 'alice', scope: everyScope });
    const perRoute: Record<string, number> = {};
    for (const [method, path, body] of [
      ...ROUTES().map((p) => ['GET', p, undefined] as const),
      ['POST', '/memories/recall', { query: 'anything' }] as const,
      ['POST', '/memories', { memories: [{ content: 'counted once' }] }] as const,
    ]) {
      verifications = 0;
      const res = await spied.request(path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
      perRoute[`${method} ${path.replace(/[0-9a-f-]{36}/, '{id}')}`] = verifications;
    }
    expect(Object.values(perRoute).every((n) => n === 1), JSON.stringify(perRoute)).toBe(true);
  });
});

describe.skipIf(TEST_BACKEND === 'pglite')('with REDIS_URL: cluster-wide', { timeout: 120_000 }, () => {
  it('two instances sharing Redis share each tenant\'s count, and say the same exact Retry-After', async () => {
    const prefix = uniqueQueuePrefix('rl');
    prefixes.push(prefix);
    const settings = { RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix };
    const [a, b] = [await start(settings), await start(settings)];
    const tenant = uniqueTenant('rl-cluster');
    const token = await tokenFor({ tenant, user: 'alice', scope: everyScope });
    const statuses: number[] = [];
    for (const app of [a, b, a, b]) statuses.push((await app.call('GET', '/memories', { token })).status);
    expect(statuses).toEqual([200, 200, 200, 200]);

    // The window ends when the tenant's key expires: 30.9 s from now is Retry-After 31 on both.
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const key = rateLimitKey(prefix, tenant);
      expect(Number(await redis.get(key))).toBe(4);
      expect(await redis.pexpire(key, 30_900)).toBe(1);
      for (const app of [a, b]) {
        const refused = await app.call('GET', `/jobs/${randomUUID()}`, { token });
        expect(refused.status).toBe(429);
        expect(refused.body.code).toBe('rate_limited');
        expect(refused.headers.get('retry-after')).toBe('31');
      }
      // A new window once the key has gone, on either instance.
      await redis.del(key);
      expect((await b.call('GET', '/memories', { token })).status).toBe(200);
    } finally {
      redis.disconnect();
    }
  });

  it('fails open to a per-process count when Redis stops answering: requests still succeed up to the limit', async () => {
    const port = await freePort();
    const server: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    try {
      await waitForRedis(port);
      const prefix = uniqueQueuePrefix('rl-down');
      const app = await start({ RATE_LIMIT_PER_MINUTE: '3', REDIS_URL: `redis://127.0.0.1:${port}`, QUEUE_PREFIX: prefix });
      const tenant = uniqueTenant('rl-down');
      const token = await tokenFor({ tenant, user: 'alice', scope: ALL_SCOPES });
      expect((await app.call('GET', '/memories', { token })).status).toBe(200);
      const direct = new Redis(port, '127.0.0.1');
      try {
        // Counted in Redis: even an instance's first request waits for the shared counter.
        expect(await direct.get(rateLimitKey(prefix, tenant))).toBe('1');
      } finally {
        direct.disconnect();
      }

      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await app.call('GET', '/memories', { token })).status);
      // Each instance now counts on its own up to the limit, then 429; never a 5xx.
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    }
  });
});

/** Resolves once a Redis on the port answers PING (a fresh client per try: no reconnection logic). */
async function waitForRedis(port: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch (error) {
      if (attempt > 100) throw error;
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      probe.disconnect();
    }
  }
}

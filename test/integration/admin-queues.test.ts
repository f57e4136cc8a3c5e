import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteQueueKeys, uniqueQueuePrefix } from '../support/jobs.js';

/**
 * GET /admin/queues: bull-board over the BullMQ queue, which shows every tenant's jobs: only for
 * tokens with `engram:operator`, never for a tenant's `engram:admin`; with no Redis there is
 * nothing to show (404). The pglite backend never has Redis.
 */

const tenant = uniqueTenant('admin');
const prefix = uniqueQueuePrefix('admin');
const apps: TestApp[] = [];

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await deleteQueueKeys(prefix);
});

const tokens = async () => ({
  admin: await tokenFor({ tenant, user: 'operator', scope: 'engram:operator' }),
  user: await tokenFor({ tenant, user: 'someone' }),
  /** A tenant's administrator: every tenant scope there is, and still not an operator. */
  tenantAdmin: await tokenFor({ tenant, user: 'boss', scope: 'memories:read memories:write memories:delete memories:act_as engram:admin' }),
});

describe.skipIf(TEST_BACKEND === 'pglite')('with REDIS_URL', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix });
    apps.push(app);
  });

  it('answers 401 without a token and 403 without engram:operator (a tenant\'s engram:admin included), on the page and everything under it', async () => {
    const { user, tenantAdmin } = await tokens();
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/favicon-32x32.png']) {
      const anonymous = await app.call('GET', path, { skipOpenApiCheck: path !== '/admin/queues' });
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.headers.get('www-authenticate'), path).toMatch(/^Bearer/);
      for (const token of [user, tenantAdmin]) {
        const forbidden = await app.call('GET', path, { token, skipOpenApiCheck: path !== '/admin/queues' });
        expect(forbidden.status, path).toBe(403);
        expect(forbidden.body.detail, path).toMatch(/engram:operator/);
        expect(JSON.stringify(forbidden.body)).not.toContain('extraction');
      }
    }
  });

  it('answers the board\'s own misses (unknown page, asset, API route or queue) with problem+json 404s', async () => {
    const { admin } = await tokens();
    for (const path of ['/admin/queues/static/no-such-file.js', '/admin/queues/api/no-such-route', '/admin/queues/api/queues/no-such-queue/some-job']) {
      const res = await app.call('GET', path, { token: admin, skipOpenApiCheck: true });
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toBe('application/problem+json');
      expect(res.body, path).toMatchObject({ status: 404, code: 'not_found', request_id: res.headers.get('x-request-id') });
    }
  });

  it('serves the dashboard, its assets and its queue data to an admin token', async () => {
    const { admin } = await tokens();
    const page = await app.call('GET', '/admin/queues', { token: admin });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).toContain('<base href="/admin/queues/"');
    // No web fonts or anything else from another host.
    expect(page.body).not.toMatch(/(src|href)="https?:\/\//);

    const script = /<script[^>]+src="([^"]+)"/.exec(page.body as string)?.[1];
    expect(script).toBeDefined();
    const asset = await app.call('GET', `/admin/queues/${script}`, { token: admin });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);

    const data = await app.call('GET', '/admin/queues/api/queues', { token: admin, skipOpenApiCheck: true });
    expect(data.status).toBe(200);
    const queues = data.body.queues as Array<{ name: string; readOnlyMode: boolean }>;
    expect(queues.map((q) => q.name)).toEqual(['extraction']);
    expect(queues[0]!.readOnlyMode).toBe(true);
  });

  it('is read-only: it will not pause the queue, retry, clean or add jobs', async () => {
    const { admin } = await tokens();
    for (const [method, path] of [
      ['PUT', '/admin/queues/api/queues/pause'],
      ['PUT', '/admin/queues/api/queues/extraction/retry/failed'],
      ['PUT', '/admin/queues/api/queues/extraction/clean/completed'],
      ['POST', '/admin/queues/api/queues/extraction/add'],
    ] as const) {
      const res = await app.call(method, path, { token: admin, body: { name: 'x', data: {} }, skipOpenApiCheck: true });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.detail).toMatch(/read-only/);
    }
    expect(await app.runtime.queue.depth()).toBe(0);
    const bull = (app.runtime.queue as unknown as { queue: { isPaused(): Promise<boolean> } }).queue;
    expect(await bull.isPaused()).toBe(false);
  });
});

describe('without REDIS_URL', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
    apps.push(app);
  });

  it('answers 404 problem+json to an operator, and still 401/403 to others', async () => {
    const { admin, user, tenantAdmin } = await tokens();
    const missing = await app.call('GET', '/admin/queues', { token: admin });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect(missing.body.detail).toMatch(/REDIS_URL/);
    expect((await app.call('GET', '/admin/queues')).status).toBe(401);
    expect((await app.call('GET', '/admin/queues', { token: user })).status).toBe(403);
    expect((await app.call('GET', '/admin/queues', { token: tenantAdmin })).status).toBe(403);
  });
});

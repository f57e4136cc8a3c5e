import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { requestDeadline } from '../../src/http/middleware.js';
import { requestDeadlines, type RequestDeadline } from '../../src/shared/timeout.js';

/**
 * The request deadline's three ways (http/middleware.ts): nothing committed, 503 and the request's
 * transactions told to roll back; a COMMIT in flight or a write committed, the outcome answered.
 * The handler stands in for the transactions: it marks the request's deadline as they do.
 */
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function appWith(handler: (deadline: RequestDeadline) => Promise<void>) {
  const app = new Hono();
  app.use('*', requestDeadline(50));
  let seen: RequestDeadline | undefined;
  app.get('/', async (c) => {
    seen = requestDeadlines.getStore();
    await handler(seen!);
    return c.json({ done: true }, 200);
  });
  return { app, seen: () => seen };
}

describe('the request deadline', () => {
  it('answers 503 when nothing has committed, and marks the deadline expired for the transactions', async () => {
    const { app, seen } = appWith(() => sleep(250));
    const res = await app.request('/');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(seen()?.expired).toBe(true);
  });

  it('waits for a COMMIT in flight and answers its outcome', async () => {
    const { app, seen } = appWith(async (deadline) => {
      deadline.committing += 1;
      await sleep(250);
      deadline.committing -= 1;
    });
    const res = await app.request('/');
    expect(res.status).toBe(200);
    expect(seen()?.expired).toBe(false);
  });

  it('waits for a request that has committed a write and answers its outcome', async () => {
    const { app, seen } = appWith(async (deadline) => {
      deadline.committed = true;
      await sleep(250);
    });
    const res = await app.request('/');
    expect(res.status).toBe(200);
    expect(seen()?.expired).toBe(false);
  });

  it('leaves a request within its deadline alone', async () => {
    const { app, seen } = appWith(() => sleep(1));
    expect((await app.request('/')).status).toBe(200);
    expect(seen()?.expired).toBe(false);
  });
});

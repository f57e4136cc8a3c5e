import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { postExtract, said, sleep } from '../support/jobs.js';

/**
 * GET /jobs/{id}?wait=S: waiters sleep on the job's notification (LISTEN/NOTIFY on PostgreSQL,
 * PGlite's in-process notifications embedded) and hold no pooled connection meanwhile, so many
 * more waiters than connections all answer when the job ends.
 */

let app: TestApp;
const tenant = uniqueTenant('wait');

beforeAll(async () => {
  // The database queue: the worker is started by the test, once the waiters wait.
  app = await startTestApp({}, { isolated: true });
});
afterAll(() => app?.close());

describe('GET /jobs/{id}?wait=', () => {
  it('answers with the current state when the wait runs out', async () => {
    const token = await tokenFor({ tenant, user: 'bo' });
    // A job of a user whose jobs are never due: its row is queued far in the future.
    const jobId = await postExtract(app, token, { ...said('I play the oboe.'), infer: false });
    await app.owner`update extraction_jobs set run_after = now() + interval '1 hour' where id = ${jobId}`;
    const res = await app.call('GET', `/jobs/${jobId}?wait=0.3`, { token });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('queued');
  });

  it('answers 200 waiters on a pool of 10 as soon as the job finishes', async () => {
    const token = await tokenFor({ tenant, user: 'ana' });
    const jobId = await postExtract(app, token, { ...said('I grow tomatoes.'), infer: false });
    let answered = 0;
    const waiters = Array.from({ length: 200 }, () =>
      Promise.resolve(app.runtime.app.request(`/jobs/${jobId}?wait=25`, { headers: { authorization: `Bearer ${token}` } })).then(async (res: Response) => {
        answered += 1;
        return { status: res.status, body: (await res.json()) as { status: string } };
      }),
    );
    await sleep(500);
    // Nobody answered while the job was queued, and a plain request still gets a connection.
    expect(answered).toBe(0);
    const plain = await app.call('GET', `/jobs/${jobId}`, { token });
    expect(plain.body.status).toBe('queued');

    app.runtime.startWorker();
    const results = await Promise.all(waiters);
    expect(results).toHaveLength(200);
    expect(results.every((r) => r.status === 200 && r.body.status === 'succeeded')).toBe(true);
  });

  it('refuses a wait outside 0 to 30 seconds', async () => {
    const token = await tokenFor({ tenant, user: 'cy' });
    const jobId = await postExtract(app, token, { ...said('I sail.'), infer: false });
    for (const wait of ['31', '-1', 'soon']) {
      const res = await app.call('GET', `/jobs/${jobId}?wait=${wait}`, { token });
      expect(res.status, wait).toBe(400);
    }
  });
});

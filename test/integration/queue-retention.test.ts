import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, postExtract, said, uniqueQueuePrefix, waitForJob, waitUntil } from '../support/jobs.js';

/**
 * What extraction jobs keep, and for how long: transcripts past TRANSCRIPT_RETENTION_HOURS and
 * idempotency keys past IDEMPOTENCY_TTL_HOURS are swept by the worker; an Idempotency-Key belongs
 * to one user of the tenant. Offline providers, so no model is needed.
 */

const tenant = uniqueTenant('retention');
const prefix = uniqueQueuePrefix('retention');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp(
    { EMBEDDING_DIMENSIONS: '256', QUEUE_PREFIX: prefix, TRANSCRIPT_RETENTION_HOURS: '1', IDEMPOTENCY_TTL_HOURS: '24', RETENTION_SWEEP_INTERVAL_MS: '100' },
    { isolated: true },
  );
  app.runtime.startWorker();
});
afterAll(async () => {
  await app?.close();
  await deleteQueueKeys(prefix);
});

async function subject(label: string) {
  const user = `${label}-${randomUUID().slice(0, 8)}`;
  return { user, token: await tokenFor({ tenant, user }) };
}

async function jobRow(jobId: string) {
  const [row] = await app.owner`select payload, idempotency_key from extraction_jobs where tenant_id = ${tenant} and id = ${jobId}`;
  return row!;
}

describe('retention sweeps', () => {
  it('keeps a finished job’s transcript for TRANSCRIPT_RETENTION_HOURS, then drops it', async () => {
    const { token } = await subject('transcript');
    const recent = await waitForJob(app, token, await postExtract(app, token, said('I live in Lisbon.')), 'succeeded');
    const old = await waitForJob(app, token, await postExtract(app, token, said('I play the cello.')), 'succeeded');
    // Finished two hours ago, as far as the sweep can tell.
    await app.owner`update extraction_jobs set finished_at = now() - interval '2 hours' where tenant_id = ${tenant} and id = ${old.job_id}`;
    await waitUntil('the old transcript to be purged', async () => (await jobRow(old.job_id)).payload === null);
    expect((await jobRow(recent.job_id)).payload).not.toBeNull();
  });

  it('forgets an Idempotency-Key after IDEMPOTENCY_TTL_HOURS: the same key then starts a new job', async () => {
    const { token } = await subject('ttl');
    const headers = { 'idempotency-key': `ttl-${randomUUID()}` };
    const first = await postExtract(app, token, said('I grow tomatoes.'), headers);
    await waitForJob(app, token, first, 'succeeded');
    expect(await postExtract(app, token, said('I grow tomatoes.'), headers)).toBe(first);

    await app.owner`update extraction_jobs set created_at = now() - interval '25 hours' where tenant_id = ${tenant} and id = ${first}`;
    await waitUntil('the key to expire', async () => (await jobRow(first)).idempotency_key === null);
    const again = await postExtract(app, token, said('I grow tomatoes.'), headers);
    expect(again).not.toBe(first);
  });
});

describe('Idempotency-Key scope', () => {
  it("is the tenant and the user: another user's key of the same name is another job", async () => {
    const alice = await subject('alice');
    const bob = await subject('bob');
    const headers = { 'idempotency-key': `shared-${randomUUID()}` };
    const alicesJob = await postExtract(app, alice.token, said('I like jazz.'), headers);
    // Bob cannot squat Alice's key, nor be answered with her job: his request is his own job.
    const bobsJob = await postExtract(app, bob.token, said('I like jazz.'), headers);
    expect(bobsJob).not.toBe(alicesJob);
    const bobsOther = await app.call('POST', '/memories/extract', { token: bob.token, body: said('I like blues.'), headers });
    expect(bobsOther.status).toBe(409);
    expect(await postExtract(app, alice.token, said('I like jazz.'), headers)).toBe(alicesJob);
    expect((await app.call('GET', `/jobs/${bobsJob}`, { token: bob.token })).status).toBe(200);
  });
});

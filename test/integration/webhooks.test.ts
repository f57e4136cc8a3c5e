import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withTenant } from '../../src/db/tenant.js';
import * as memoryRepo from '../../src/memories/repository.js';
import { contentHash } from '../../src/extraction/normalise.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, postExtract, said, sleep, uniqueQueuePrefix, waitUntil } from '../support/jobs.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { TEST_REDIS_URL } from '../support/env.js';

/**
 * Webhooks end to end: the real app and its worker deliver the outbox to a real HTTP receiver on
 * loopback, which verifies every signature with the standardwebhooks package. Retry delays are
 * shortened by configuration (WEBHOOK_RETRY_SCHEDULE_MS), never waited out.
 */

const ALL_EVENTS = ['job.succeeded', 'job.failed', 'memory.created', 'memory.updated', 'memory.superseded', 'memory.deleted', 'user.erased'];
const prefix = uniqueQueuePrefix('webhooks');
let app: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  app = await startTestApp(
    {
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_SCHEDULE_MS: '20,20,20',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    },
    { isolated: true },
  );
  app.runtime.startWorker();
});

afterAll(async () => {
  await app?.close();
  await deleteQueueKeys(prefix);
});

beforeEach(async () => {
  await receiver?.close();
  receiver = await startReceiver();
});

const call = (method: string, path: string, token: string, body?: unknown) => app.call(method, path, { token, body });

async function tenantWithHook(events = ALL_EVENTS, user = 'alice') {
  const tenant = uniqueTenant('hook');
  const admin = await tokenFor({ tenant, scope: 'engram:admin' });
  const token = await tokenFor({ tenant, user });
  const created = await call('POST', '/webhooks', admin, { url: receiver.url, events });
  expect(created.status).toBe(201);
  expect(created.body.secret).toMatch(/^whsec_/);
  receiver.setSecret(created.body.secret);
  return { tenant, admin, token, webhookId: created.body.id as string };
}

describe('webhooks', () => {
  it('announces every kind of change once per commit, in commit order, signed', async () => {
    const { token, admin, webhookId } = await tenantWithHook();
    const added = await call('POST', '/memories', token, { memories: [{ content: 'Alice likes tea' }, { content: 'Alice owns a bike' }] });
    expect(added.status).toBe(201);
    const [tea, bike] = added.body.memories as Array<{ id: string }>;
    expect((await call('PATCH', `/memories/${tea!.id}`, token, { importance: 9 })).status).toBe(200);
    // The same fact again supersedes the current one.
    expect((await call('POST', '/memories', token, { memories: [{ content: 'Alice owns a bike', importance: 7 }] })).status).toBe(201);
    expect((await call('DELETE', `/memories/${tea!.id}`, token)).status).toBe(204);
    const jobId = await postExtract(app, token, { ...said('I live in Lisbon.'), infer: false });
    await waitUntil('job.succeeded', () => receiver.received.some((r) => r.type === 'job.succeeded'), 15_000);
    const erased = await call('POST', '/memories/delete', await tokenFor({ tenant: (await tenantOf(admin))!, user: 'alice', scope: 'memories:delete' }), {});
    expect(erased.status).toBe(200);
    await waitUntil('user.erased', () => receiver.received.some((r) => r.type === 'user.erased'), 15_000);

    const types = receiver.received.map((r) => r.type);
    expect(types).toEqual([
      'memory.created',
      'memory.created',
      'memory.updated',
      'memory.superseded',
      'memory.created',
      'memory.deleted',
      'memory.created',
      'job.succeeded',
      'user.erased',
    ]);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(receiver.received.length);
    expect(receiver.received[0]!.data.memory).toMatchObject({ id: tea!.id, content: 'Alice likes tea', user_id: 'alice', importance: 5 });
    expect(receiver.received[2]!.data.memory).toMatchObject({ id: tea!.id, importance: 9 });
    expect(receiver.received[3]!.data).toMatchObject({ memory_id: bike!.id });
    expect(receiver.received[7]!.data).toMatchObject({ job_id: jobId, status: 'succeeded', user_id: 'alice' });
    expect(receiver.received[8]!.data).toEqual({ erasure_id: erased.body.erasure_id, counts: expect.any(Object) });
    expect(JSON.stringify(receiver.received[8]!.data)).not.toContain('alice');

    // The receiver hears an event before the worker records its 2xx: wait for the record.
    const deliveries = await waitUntil('every delivery recorded', async () => {
      const page = await call('GET', `/webhooks/${webhookId}/deliveries?limit=100`, admin);
      expect(page.status).toBe(200);
      return page.body.deliveries.every((d: { status: string }) => d.status === 'succeeded') ? page : undefined;
    }, 15_000);
    expect(deliveries.body.deliveries).toHaveLength(9);
  });

  it('retries a receiver that answers 500 three times, and delivers on the fourth attempt', async () => {
    const { token, admin, webhookId } = await tenantWithHook(['memory.created']);
    receiver.answer = ({ attempt }) => (attempt <= 3 ? 500 : 204);
    await call('POST', '/memories', token, { memories: [{ content: 'Alice plays chess' }] });
    await waitUntil('the fourth attempt', () => receiver.received.length === 1, 15_000);
    expect(receiver.requests.map((r) => r.status)).toEqual([500, 500, 500, 204]);
    expect(new Set(receiver.requests.map((r) => r.id)).size).toBe(1);
    const delivery = await waitUntil('the success recorded', async () => {
      const [row] = (await call('GET', `/webhooks/${webhookId}/deliveries`, admin)).body.deliveries;
      return row?.status === 'pending' ? undefined : row;
    }, 15_000);
    expect(delivery).toMatchObject({ event: 'memory.created', status: 'succeeded', attempts: 4, last_status_code: 204 });
  });

  it('gives up after the schedule, and a 410 disables the endpoint', async () => {
    const { token, admin, webhookId } = await tenantWithHook(['memory.created']);
    receiver.answer = () => 503;
    await call('POST', '/memories', token, { memories: [{ content: 'Alice collects stamps' }] });
    await waitUntil('the delivery to fail for good', async () => (await call('GET', `/webhooks/${webhookId}/deliveries`, admin)).body.deliveries[0]?.status === 'failed', 15_000);
    expect(receiver.requests).toHaveLength(4);

    receiver.answer = () => 410;
    await call('POST', '/memories', token, { memories: [{ content: 'Alice collects coins' }, { content: 'Alice collects shells' }] });
    await waitUntil('the endpoint to be disabled', async () => (await call('GET', '/webhooks', admin)).body.webhooks[0]?.enabled === false, 15_000);
    await sleep(200);
    // One 410 and nothing after: the endpoint is off, its pending deliveries failed.
    expect(receiver.requests.filter((r) => r.status === 410)).toHaveLength(1);
  });

  it('sends nothing for a change that rolled back', async () => {
    const { tenant, token } = await tenantWithHook(['memory.created']);
    const row = (content: string): memoryRepo.NewMemoryRow => ({
      tenantId: tenant,
      userId: 'alice',
      agentId: null,
      runId: null,
      content,
      contentHash: contentHash(content),
      embedding: Array(1536).fill(0).map((_, i) => (i === 0 ? 1 : 0)),
      importance: 5,
      category: null,
      metadata: {},
      occurredAt: new Date(),
      expiresAt: null,
      createdAt: new Date(),
    });
    await expect(
      withTenant(app.runtime.services.database, tenant, async (tx) => {
        await memoryRepo.insertMemories(tx, [row('Alice was never here')]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await call('POST', '/memories', token, { memories: [{ content: 'Alice committed this' }] });
    await waitUntil('the committed change', () => receiver.received.length === 1, 15_000);
    await sleep(200);
    expect(receiver.received.map((r) => r.data.memory.content)).toEqual(['Alice committed this']);
    const [{ n }] = await app.owner`select count(*)::int as n from webhook_deliveries where tenant_id = ${tenant}`;
    expect(n).toBe(1);
  });

  it("carries no content in an erased user's events", async () => {
    const { tenant, token } = await tenantWithHook(['memory.created', 'memory.deleted', 'user.erased']);
    receiver.answer = () => 503;
    await call('POST', '/memories', token, { memories: [{ content: 'Alice has a secret diagnosis' }] });
    await waitUntil('a first attempt', () => receiver.requests.length >= 1, 15_000);
    // Park the event between two attempts (no lease held; retries the short test schedule may
    // have used up are given back), so the erasure finds it in the outbox.
    await waitUntil(
      'the event parked',
      async () =>
        (
          await app.owner`update webhook_deliveries set next_attempt_at = now() + interval '1 hour', status = 'pending', attempts = 0
            where tenant_id = ${tenant} and (locked_until is null or locked_until < now()) returning id`
        ).length === 1,
      15_000,
    );
    const eraser = await tokenFor({ tenant, user: 'alice', scope: 'memories:delete' });
    expect((await call('POST', '/memories/delete', eraser, {})).status).toBe(200);
    receiver.answer = () => 200;
    await app.owner`update webhook_deliveries set next_attempt_at = now() where tenant_id = ${tenant} and status = 'pending'`;
    await waitUntil('user.erased', () => receiver.received.some((r) => r.type === 'user.erased'), 15_000);
    expect(receiver.received.map((r) => r.type)).toEqual(['memory.created', 'user.erased']);
    for (const r of receiver.received) {
      expect(r.raw).not.toContain('diagnosis');
      expect(r.raw).not.toContain('alice');
    }
    expect(receiver.received[0]!.data).toMatchObject({ redacted: true });
    const stored = await app.owner`select payload::text as p from webhook_deliveries where tenant_id = ${tenant}`;
    expect(stored.map((s: { p: string }) => s.p).join()).not.toContain('diagnosis');
  });
});

describe('webhook administration', () => {
  it('refuses link-local targets always, and private ones without WEBHOOK_ALLOW_PRIVATE', async () => {
    const tenant = uniqueTenant('hookurl');
    const admin = await tokenFor({ tenant, scope: 'engram:admin' });
    for (const url of ['https://169.254.169.254/latest', 'http://[fe80::1]/x', 'https://[::ffff:169.254.169.254]/', 'ftp://example.com/']) {
      const res = await call('POST', '/webhooks', admin, { url, events: ['memory.created'] });
      expect(res.status, url).toBe(400);
    }
  });

  it('lists every delivery newest first, page by page, across a change in the number of digits of seq', async () => {
    const { token, admin, webhookId } = await tenantWithHook(['memory.created']);
    // Move the outbox sequence just short of a power of ten, so this endpoint's seq values go from n to n+1 digits.
    const [{ last }] = await app.owner`select last_value::text as last from webhook_delivery_seq`;
    let boundary = 10n ** BigInt(String(BigInt(last) + 1n).length);
    if (boundary - 6n <= BigInt(last)) boundary *= 10n;
    await app.owner`select setval('webhook_delivery_seq', ${String(boundary - 6n)}::bigint)`;
    const added = await call('POST', '/memories', token, { memories: Array.from({ length: 12 }, (_, i) => ({ content: `Alice fact number ${i}` })) });
    expect(added.status).toBe(201);
    const seen: Array<{ id: string; created_at: string }> = [];
    let cursor: string | null = null;
    do {
      const page = await call('GET', `/webhooks/${webhookId}/deliveries?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, admin);
      expect(page.status).toBe(200);
      seen.push(...page.body.deliveries);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(12);
    expect(new Set(seen.map((d) => d.id)).size).toBe(12);
    const times = seen.map((d) => Date.parse(d.created_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('needs engram:admin, hides secrets, and is per tenant', async () => {
    const { admin, token, webhookId } = await tenantWithHook(['memory.created']);
    expect((await call('GET', '/webhooks', token)).status).toBe(403);
    const listed = await call('GET', '/webhooks', admin);
    expect(listed.body.webhooks).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    const other = await tokenFor({ tenant: uniqueTenant('other'), scope: 'engram:admin' });
    expect((await call('DELETE', `/webhooks/${webhookId}`, other)).status).toBe(404);
    expect((await call('GET', `/webhooks/${webhookId}/deliveries`, other)).status).toBe(404);
    const [{ secret_ciphertext: stored }] = await app.owner`select secret_ciphertext from webhook_endpoints where id = ${webhookId}`;
    expect(stored).not.toContain('whsec_');
    expect((await call('DELETE', `/webhooks/${webhookId}`, admin)).status).toBe(204);
    expect((await call('GET', '/webhooks', admin)).body.webhooks).toHaveLength(0);
  });
});

async function tenantOf(token: string): Promise<string | undefined> {
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { tenant_id?: string };
  return payload.tenant_id;
}

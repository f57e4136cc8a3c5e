import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/db/paths.js';
import { TEST_JWT_SECRET, TEST_REDIS_URL } from '../support/env.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { deleteQueueKeys, uniqueQueuePrefix, waitUntil } from '../support/jobs.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';

/**
 * At least once: a worker process killed (SIGKILL) while its delivery is in flight leaves a lease
 * that lapses, and another worker delivers the same event again, with the same webhook-id.
 */

const prefix = uniqueQueuePrefix('hookkill');
const settings = {
  REDIS_URL: TEST_REDIS_URL,
  QUEUE_PREFIX: prefix,
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_TIMEOUT_MS: '1500',
  WEBHOOK_POLL_INTERVAL_MS: '100',
  WEBHOOK_RETRY_SCHEDULE_MS: '20',
};
let app: TestApp;
let receiver: Receiver;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  app = await startTestApp(settings, { isolated: true });
  receiver = await startReceiver();
});

afterAll(async () => {
  worker?.kill('SIGKILL');
  await receiver?.close();
  await app?.close();
  await deleteQueueKeys(prefix);
});

describe('a worker killed mid-delivery', () => {
  it('re-delivers the event with the same webhook-id', async () => {
    const tenant = uniqueTenant('hookkill');
    const admin = await tokenFor({ tenant, scope: 'engram:admin' });
    const created = await app.call('POST', '/webhooks', { token: admin, body: { url: receiver.url, events: ['memory.created'] } });
    receiver.setSecret(created.body.secret);
    receiver.answer = ({ attempt }) => (attempt === 1 ? 'hang' : 200);

    worker = spawn(process.execPath, ['--import', 'tsx', 'workers/extraction.ts'], {
      cwd: PACKAGE_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: app.databaseUrl, AUTH_JWT_SECRET: TEST_JWT_SECRET, MIGRATE_ON_START: 'false', EMBEDDINGS: 'lexical', LOG_LEVEL: 'silent', ...settings },
      stdio: 'ignore',
    });
    const token = await tokenFor({ tenant, user: 'dee' });
    await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Dee keeps bees' }] } });
    await waitUntil('the first delivery in flight', () => receiver.requests.length === 1, 30_000);
    worker.kill('SIGKILL');

    app.runtime.startWorker();
    await waitUntil('the re-delivery', () => receiver.received.length === 1, 30_000);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]!.id).toBe(receiver.requests[0]!.id);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.data.memory.content).toBe('Dee keeps bees');
    const [delivery] = await app.owner`select status, attempts from webhook_deliveries where tenant_id = ${tenant}`;
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 2 });
  });
});

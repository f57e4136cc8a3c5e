import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { query } from '../../src/db/client.js';
import { withTenant } from '../../src/db/tenant.js';
import { RequestExpiredError, detachedFromRequest, requestDeadlines } from '../../src/shared/timeout.js';
import { startTestApp, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * A request answered 503 for its deadline marks its deadline expired (http/middleware.ts): its
 * transactions then roll back where they would commit, on both backends, while work detached from
 * it (the job polls and webhook claims a request may start) commits as usual.
 */
describe('transactions of a request answered as timed out', () => {
  let app: TestApp;
  const tenant = uniqueTenant('deadline');
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app?.close());

  const write = (key: string) =>
    withTenant(app.runtime.services.database, tenant, (tx) =>
      query(tx, sql`insert into tenant_settings (tenant_id, settings) values (${tenant}, ${JSON.stringify({ key })}::jsonb) on conflict (tenant_id) do update set settings = excluded.settings`),
    );
  const stored = async () => (await app.ownerQuery<{ settings: { key: string } }>(`select settings from tenant_settings where tenant_id = $1`, [tenant]))[0]?.settings.key;

  it('roll back, while work detached from the request commits; a live request commits', async () => {
    const expired = { expired: true, committing: 0, committed: false, timeoutMs: 30_000 };
    await expect(requestDeadlines.run(expired, () => write('expired'))).rejects.toBeInstanceOf(RequestExpiredError);
    expect(await stored()).toBeUndefined();
    await requestDeadlines.run(expired, () => detachedFromRequest(() => write('detached')));
    expect(await stored()).toBe('detached');
    const live = { expired: false, committing: 0, committed: false, timeoutMs: 30_000 };
    await requestDeadlines.run(live, () => write('live'));
    expect(await stored()).toBe('live');
    expect(live.committing).toBe(0);
    expect(live.committed).toBe(true);
    // A read commits nothing: the request's outcome is still open to its deadline.
    const reading = { expired: false, committing: 0, committed: false, timeoutMs: 30_000 };
    await requestDeadlines.run(reading, () => withTenant(app.runtime.services.database, tenant, (tx) => query(tx, sql`select 1`), { readOnly: true }));
    expect(reading.committed).toBe(false);
  });
});

import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../support/env.js';
import { TEST_BACKEND, ownerSql, startTestApp } from '../support/harness.js';

/**
 * Defence in depth: with NODE_ENV=production, start-up warns when DATABASE_URL logs in as a
 * superuser (which could RESET ROLE out of engram_app if SQL injection were ever found), and only then.
 */

function capture() {
  const lines: Array<{ level: number; msg: string; role?: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const warnings = () => lines.filter((l) => l.level === 40 && /superuser/.test(l.msg));
  return { logger, warnings };
}

async function warningsAt(overrides: Record<string, string>) {
  const { logger, warnings } = capture();
  const app = await startTestApp(overrides, { logger });
  await app.close();
  return warnings();
}

// Each case starts an app of its own (an embedded one takes a while on a busy machine).
describe.skipIf(TEST_BACKEND !== 'postgres')('a superuser login role in production', { timeout: 120_000 }, () => {
  const owner = ownerSql();
  const loginRole = `engram_login_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  afterAll(async () => {
    await owner.unsafe(`drop role if exists ${loginRole}`);
    await owner.end();
  });

  it('is warned about at start-up, naming the role and what to do', async () => {
    const warnings = await warningsAt({ NODE_ENV: 'production' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.role).toBe(new URL(TEST_DATABASE_URL).username);
    expect(warnings[0]!.msg).toMatch(/engram_app/);
  });

  it('is not warned about outside production', async () => {
    expect(await warningsAt({})).toEqual([]);
    expect(await warningsAt({ NODE_ENV: 'development' })).toEqual([]);
  });

  it('a login role that is no superuser, only a member of engram_app, gets no warning in production', async () => {
    await owner.unsafe(`create role ${loginRole} login nosuperuser nobypassrls`);
    await owner.unsafe(`grant engram_app to ${loginRole}`);
    const url = new URL(TEST_DATABASE_URL);
    url.username = loginRole;
    const warnings = await warningsAt({ NODE_ENV: 'production', DATABASE_URL: url.toString() });
    await owner.unsafe(`revoke engram_app from ${loginRole}`);
    expect(warnings).toEqual([]);
  });
});

describe.skipIf(TEST_BACKEND !== 'pglite')('the embedded database', { timeout: 120_000 }, () => {
  it('gets no warning in production: its one user is a superuser nobody else can log in as', async () => {
    expect(await warningsAt({ NODE_ENV: 'production' })).toEqual([]);
  });
});

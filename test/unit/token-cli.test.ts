import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createTokenVerifier } from '../../src/auth/verifier.js';
import { TEST_JWT_SECRET } from '../support/env.js';
import { runEntry } from '../support/process.js';

/** `npm run token` as a user runs it: what it mints must pass the service's own verifier. */

async function mint(args: string[], env: Record<string, string> = {}) {
  const cli = runEntry('src/auth/token-cli.ts', { AUTH_JWT_SECRET: TEST_JWT_SECRET, ...env }, args);
  const code = await cli.exited;
  return { code, output: cli.output().trim() };
}

function verifierFor(env: Record<string, string> = {}) {
  const config = loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET, ...env });
  return createTokenVerifier(config.auth);
}

describe('npm run token', { timeout: 60_000 }, () => {
  it('mints an operator token the service accepts, with a lifetime under the cap', async () => {
    const { code, output } = await mint(['--tenant', 'ops', '--user', 'alice', '--scope', 'engram:operator']);
    expect(code).toBe(0);
    const principal = await verifierFor().verify(output);
    expect([...principal.scopes]).toEqual(['engram:operator']);
    expect(principal).toMatchObject({ tenantId: 'ops', subject: 'alice' });
    const claims = decodeJwt(output);
    expect(claims.exp! - claims.iat!).toBe(3600);
  });

  it('refuses a --ttl over AUTH_MAX_TOKEN_AGE_S, which the service would refuse, and follows the setting', async () => {
    const refused = await mint(['--tenant', 'acme', '--user', 'alice', '--ttl', '86401']);
    expect(refused.code).toBe(2);
    expect(refused.output).toMatch(/--ttl .*86400 \(AUTH_MAX_TOKEN_AGE_S\)/);

    const longer = { AUTH_MAX_TOKEN_AGE_S: '172800' };
    const allowed = await mint(['--tenant', 'acme', '--user', 'alice', '--ttl', '86401'], longer);
    expect(allowed.code).toBe(0);
    expect((await verifierFor(longer).verify(allowed.output)).tenantId).toBe('acme');
  });

  it('refuses a tenant or user with white space around it', async () => {
    for (const args of [['--tenant', 'acme', '--user', 'bob '], ['--tenant', ' acme', '--user', 'bob']]) {
      const { code, output } = await mint(args);
      expect(code, args.join(' ')).toBe(2);
      expect(output).toMatch(/white space/);
    }
  });
});

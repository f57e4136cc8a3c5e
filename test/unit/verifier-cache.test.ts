import { afterEach, describe, expect, it, vi } from 'vitest';
import { SignJWT } from 'jose';
import { loadConfig } from '../../src/config.js';
import { createTokenVerifier } from '../../src/auth/verifier.js';
import { TEST_JWT_SECRET } from '../support/env.js';

/** The verifier remembers HS256 tokens it accepted; remembering must never accept what jose would refuse. */

const config = loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET });
const tolerance = config.auth.clockToleranceSeconds;

async function token(secret: string, claims: { iat: number; exp: number }): Promise<string> {
  return new SignJWT({ tenant_id: 'acme', scope: 'memories:read' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(config.auth.issuer)
    .setAudience(config.auth.audience)
    .setSubject('alice')
    .setIssuedAt(claims.iat)
    .setExpirationTime(claims.exp)
    .sign(new TextEncoder().encode(secret));
}

describe('token verifier: remembered tokens', () => {
  afterEach(() => vi.useRealTimers());

  it('refuses a remembered token from the second jose would, and a fresh verifier agrees at both instants', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = 1_900_000_000;
    vi.setSystemTime(start * 1000);
    const jwt = await token(TEST_JWT_SECRET, { iat: start, exp: start + 120 });
    const remembering = createTokenVerifier(config.auth);
    expect((await remembering.verify(jwt)).subject).toBe('alice');

    // The last second jose accepts (exp > now - tolerance), then the first it refuses.
    vi.setSystemTime((start + 120 + tolerance - 1) * 1000 + 999);
    expect((await remembering.verify(jwt)).tenantId).toBe('acme');
    expect((await createTokenVerifier(config.auth).verify(jwt)).tenantId).toBe('acme');
    vi.setSystemTime((start + 120 + tolerance) * 1000);
    await expect(remembering.verify(jwt)).rejects.toThrow('the token has expired');
    await expect(createTokenVerifier(config.auth).verify(jwt)).rejects.toThrow('the token has expired');
  });

  it('never remembers a refusal as an acceptance: a badly signed token is refused every time', async () => {
    const now = Math.floor(Date.now() / 1000);
    const forged = await token('another-secret-of-at-least-thirty-two-bytes!', { iat: now, exp: now + 60 });
    const verifier = createTokenVerifier(config.auth);
    for (let i = 0; i < 3; i++) await expect(verifier.verify(forged)).rejects.toThrow('the token signature is not valid');
    // The genuine token with the same claims is still accepted, and the forgery after it still refused.
    const genuine = await token(TEST_JWT_SECRET, { iat: now, exp: now + 60 });
    expect((await verifier.verify(genuine)).subject).toBe('alice');
    await expect(verifier.verify(forged)).rejects.toThrow('the token signature is not valid');
  });

  it('a verifier with another secret does not accept a token another verifier remembered', async () => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = await token(TEST_JWT_SECRET, { iat: now, exp: now + 60 });
    expect((await createTokenVerifier(config.auth).verify(jwt)).subject).toBe('alice');
    const other = createTokenVerifier(loadConfig({ AUTH_JWT_SECRET: 'a-different-secret-of-at-least-32-bytes!!' }).auth);
    await expect(other.verify(jwt)).rejects.toThrow('the token signature is not valid');
  });
});

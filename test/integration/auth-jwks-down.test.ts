import { SignJWT, generateKeyPair } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../support/process.js';
import { startTestApp, type TestApp } from '../support/harness.js';

let app: TestApp;

beforeAll(async () => {
  // Nothing listens on this port: the identity provider is down.
  app = await startTestApp({ AUTH_JWKS_URL: `http://127.0.0.1:${await freePort()}/jwks.json` });
});
afterAll(() => app.close());

it('answers 503, not 401, when the key set cannot be fetched: the token may well be valid', async () => {
  const { privateKey } = await generateKeyPair('RS256');
  const token = await new SignJWT({ tenant_id: 'jwks-down', scope: 'memories:read' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer('memory-layer')
    .setAudience('memory-api')
    .setSubject('alice')
    .setExpirationTime('5m')
    .sign(privateKey);
  const res = await app.call('GET', '/memories', { token });
  expect(res.status).toBe(503);
  expect(res.body.code).toBe('unavailable');
  expect(res.headers.get('retry-after')).toBe('5');
});

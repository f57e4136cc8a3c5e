/**
 * Scopes where identity providers put them: `scope` (OAuth 2), `scp` (Entra ID delegated tokens)
 * always, and the claim AUTH_SCOPES_CLAIM names: an array such as Auth0's `permissions`, Entra
 * ID's app `roles`, or Keycloak's nested `realm_access.roles`. Tokens signed by a key from a JWKS
 * (as a provider issues them) and forged ones (another secret, scopes in an unconfigured claim).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET } from '../support/env.js';
import { startTestApp, uniqueTenant, type TestApp } from '../support/harness.js';

const KID = 'provider-key';
const tenant = uniqueTenant('claims');
let jwks: Server;
let jwksUrl: string;
let providerKey: CryptoKey;
const apps: TestApp[] = [];

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  providerKey = pair.privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  jwks = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await new Promise<void>((resolve) => jwks.close(() => resolve()));
});

async function appWith(env: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp({ AUTH_JWKS_URL: jwksUrl, ...env });
  apps.push(app);
  return app;
}

/** A token as a provider signs it (RS256 from the JWKS), or forged with `key`. */
function token(claims: JWTPayload, key: CryptoKey | Uint8Array = providerKey): Promise<string> {
  const alg = key instanceof Uint8Array ? 'HS256' : 'RS256';
  return new SignJWT({ tenant_id: tenant, ...claims })
    .setProtectedHeader({ alg, typ: 'JWT', ...(alg === 'RS256' ? { kid: KID } : {}) })
    .setSubject('alice')
    .setIssuer('memory-layer')
    .setAudience('memory-api')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(key);
}

const read = (app: TestApp, t: string) => app.call('GET', '/memories', { token: t }).then((r) => r.status);
const write = (app: TestApp, t: string) => app.call('POST', '/memories', { token: t, body: { memories: [{ content: 'Alice likes tea' }] } }).then((r) => r.status);

describe('scopes from scope and scp, whatever AUTH_SCOPES_CLAIM says', () => {
  it('a space-separated scope or scp string grants its scopes, and only those', async () => {
    const app = await appWith({});
    expect(await read(app, await token({ scope: 'openid memories:read' }))).toBe(200);
    expect(await read(app, await token({ scp: 'memories:read' }))).toBe(200);
    expect(await write(app, await token({ scp: 'memories:read' }))).toBe(403);
    // Not configured: an array claim is not read.
    expect(await read(app, await token({ permissions: ['memories:read'] }))).toBe(403);
  });
});

describe('AUTH_SCOPES_CLAIM=permissions (Auth0 RBAC)', () => {
  it('reads the array claim alongside scope', async () => {
    const app = await appWith({ AUTH_SCOPES_CLAIM: 'permissions' });
    const auth0 = await token({ scope: 'openid profile', permissions: ['memories:read', 'memories:write'] });
    expect(await read(app, auth0)).toBe(200);
    expect(await write(app, auth0)).toBe(201);
    expect(await app.call('POST', '/memories/delete', { token: auth0, body: {} }).then((r) => r.status)).toBe(403);
    expect(await read(app, await token({ permissions: 'memories:read' }))).toBe(200);
    // Non-string entries are no scopes; a token signed with another key is no token at all.
    expect(await read(app, await token({ permissions: [42, { scope: 'memories:read' }] }))).toBe(403);
    expect(await read(app, await token({ permissions: ['memories:read'] }, new TextEncoder().encode(`${TEST_JWT_SECRET}-forged`)))).toBe(401);
  });
});

describe('AUTH_SCOPES_CLAIM=roles with AUTH_TENANT_CLAIM=tid (Microsoft Entra ID app roles)', () => {
  it('grants the roles of an application token', async () => {
    const app = await appWith({ AUTH_SCOPES_CLAIM: 'roles', AUTH_TENANT_CLAIM: 'tid' });
    const entra = await token({ tid: tenant, roles: ['memories:read', 'memories:act_as'] });
    expect(await read(app, entra)).toBe(200);
    expect(await app.call('GET', '/memories?user_id=bob', { token: entra }).then((r) => r.status)).toBe(200);
    expect(await write(app, entra)).toBe(403);
  });
});

describe('AUTH_SCOPES_CLAIM=realm_access.roles (Keycloak realm roles, a nested claim)', () => {
  it('follows the dotted path into the token', async () => {
    const app = await appWith({ AUTH_SCOPES_CLAIM: 'realm_access.roles' });
    expect(await read(app, await token({ realm_access: { roles: ['memories:read'] } }))).toBe(200);
    expect(await read(app, await token({ realm_access: { roles: [] } }))).toBe(403);
    expect(await read(app, await token({ realm_access: 'memories:read' }))).toBe(403);
  });
});

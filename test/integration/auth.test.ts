import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_JWT_SECRET } from '../support/env.js';
import { startTestApp, tokenFor, uniqueTenant, type CallResult, type TestApp } from '../support/harness.js';

/**
 * Token verification and scopes, through the real app. One app trusts both the HS256 test secret
 * and a JWKS served by a tiny local HTTP server holding one RS256 public key.
 */

const ISSUER = 'memory-layer';
const AUDIENCE = 'memory-api';
const KID = 'test-key-1';

let app: TestApp;
let jwksServer: Server;
let jwksFetches = 0;
let rsaPrivate: CryptoKey;
let rsaPublicJwk: JWK;
let rsaPublicPem: string;
let strangerPrivate: CryptoKey;
const tenant = uniqueTenant('auth');
const encoder = new TextEncoder();
const nowSeconds = () => Math.floor(Date.now() / 1000);

interface Build {
  alg?: string;
  key?: CryptoKey | Uint8Array;
  kid?: string;
  claims?: JWTPayload;
  issuer?: string | null;
  audience?: string | null;
  tenantClaim?: string | null;
  exp?: number;
  nbf?: number;
  /** `null`: no iat claim. */
  iat?: number | null;
  sub?: string;
}

/** A token like the good one except for what `b` changes. */
function build(b: Build = {}): Promise<string> {
  const claims: JWTPayload = { scope: 'memories:read memories:write memories:delete', ...b.claims };
  if (b.tenantClaim !== null) claims.tenant_id = b.tenantClaim ?? tenant;
  const alg = b.alg ?? 'HS256';
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg, typ: 'JWT', ...(b.kid ? { kid: b.kid } : {}) })
    .setSubject(b.sub ?? 'alice')
    .setExpirationTime(b.exp ?? nowSeconds() + 600);
  if (b.iat !== null) jwt.setIssuedAt(b.iat);
  if (b.issuer !== null) jwt.setIssuer(b.issuer ?? ISSUER);
  if (b.audience !== null) jwt.setAudience(b.audience ?? AUDIENCE);
  if (b.nbf !== undefined) jwt.setNotBefore(b.nbf);
  return jwt.sign(b.key ?? encoder.encode(TEST_JWT_SECRET));
}

const b64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** An HS256 token over a payload given as raw JSON text, for numbers JSON.stringify cannot write (1e400). */
function signRawPayload(payloadJson: string): string {
  const signingInput = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(payloadJson)}`;
  return `${signingInput}.${createHmac('sha256', TEST_JWT_SECRET).update(signingInput).digest('base64url')}`;
}

function expectUnauthorized(res: CallResult, requestId?: string): void {
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate') ?? '').toMatch(/^Bearer\b/);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.body).toMatchObject({ status: 401, code: 'unauthorized', title: expect.any(String), type: expect.any(String), detail: expect.any(String) });
  expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  expect(res.body.request_id.length).toBeGreaterThan(0);
  if (requestId) expect(res.body.request_id).toBe(requestId);
}

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  rsaPrivate = pair.privateKey;
  rsaPublicJwk = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  rsaPublicPem = await exportSPKI(pair.publicKey);
  strangerPrivate = (await generateKeyPair('RS256')).privateKey;

  jwksServer = createServer((req, res) => {
    jwksFetches++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [rsaPublicJwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const { port } = jwksServer.address() as AddressInfo;
  app = await startTestApp({ AUTH_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json` });
});

afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => jwksServer.close(() => resolve()));
});

/** GET /memories with a given Authorization header value (or none). */
function list(authorization?: string, requestId?: string) {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  if (requestId) headers['x-request-id'] = requestId;
  return app.call('GET', '/memories', { headers });
}

describe('a valid token', () => {
  it('HS256 with the configured secret is accepted', async () => {
    const res = await list(`Bearer ${await build()}`);
    expect(res.status).toBe(200);
    expect(res.body.memories).toEqual([]);
  });

  it('RS256 signed by the JWKS key is accepted (the key set was fetched)', async () => {
    const res = await list(`Bearer ${await build({ alg: 'RS256', key: rsaPrivate, kid: KID })}`);
    expect(res.status).toBe(200);
    expect(jwksFetches).toBeGreaterThan(0);
  });

  it('expired or not yet valid only within the clock tolerance is accepted', async () => {
    expect((await list(`Bearer ${await build({ exp: nowSeconds() - 10 })}`)).status).toBe(200);
    expect((await list(`Bearer ${await build({ nbf: nowSeconds() + 10 })}`)).status).toBe(200);
  });
});

describe('401 with WWW-Authenticate: Bearer and a problem body', () => {
  it('no Authorization header', async () => {
    expectUnauthorized(await list(undefined, 'req-no-header'), 'req-no-header');
  });

  it.each([['Bearer abc'], ['Bearer '], ['Bearer a.b.c'], ['Basic YWxpY2U6c2VjcmV0'], ['Token x.y.z'], ['bearer'], ['Bearer a b']])(
    'malformed header %j',
    async (header) => {
      expectUnauthorized(await list(header));
    },
  );

  it('HS256 signed with another secret', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ key: encoder.encode('another-secret-another-secret-another-secret') })}`));
  });

  it('a tampered payload under a valid signature', async () => {
    const [header, , signature] = (await build()).split('.');
    const forged = b64url({ tenant_id: uniqueTenant('other'), sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp: nowSeconds() + 600, scope: 'memories:read' });
    expectUnauthorized(await list(`Bearer ${header}.${forged}.${signature}`));
  });

  it('alg none (unsecured, empty signature)', async () => {
    const payload = { tenant_id: tenant, sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp: nowSeconds() + 600, scope: 'memories:read' };
    for (const alg of ['none', 'None', 'NONE']) {
      expectUnauthorized(await list(`Bearer ${b64url({ alg, typ: 'JWT' })}.${b64url(payload)}.`));
    }
  });

  it('HS256 whose HMAC key is the JWKS public key (PEM text or JWK JSON): no algorithm confusion', async () => {
    for (const keyText of [rsaPublicPem, JSON.stringify(rsaPublicJwk), `${rsaPublicPem.trim()}`]) {
      expectUnauthorized(await list(`Bearer ${await build({ alg: 'HS256', key: encoder.encode(keyText), kid: KID })}`));
    }
  });

  it('RS256 signed by a key that is not in the JWKS (same kid, and an unknown kid)', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ alg: 'RS256', key: strangerPrivate, kid: KID })}`));
    expectUnauthorized(await list(`Bearer ${await build({ alg: 'RS256', key: strangerPrivate, kid: 'unknown-kid' })}`));
  });

  it('an RS256 token is never checked against the HS256 secret: an app without a JWKS refuses it', async () => {
    const hsOnly = await startTestApp();
    try {
      const token = await build({ alg: 'RS256', key: rsaPrivate, kid: KID });
      expectUnauthorized(await hsOnly.call('GET', '/memories', { token }));
      // The same app accepts the HS256 token, so the refusal is about the algorithm.
      expect((await hsOnly.call('GET', '/memories', { token: await build() })).status).toBe(200);
    } finally {
      await hsOnly.close();
    }
  });

  it('an algorithm outside the allow-list (HS512 with the right secret)', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ alg: 'HS512', key: encoder.encode(TEST_JWT_SECRET) })}`));
  });

  it('expired beyond the 30 s tolerance', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ exp: nowSeconds() - 45 })}`));
    expectUnauthorized(await list(`Bearer ${await build({ exp: nowSeconds() - 3600 })}`));
  });

  it('nbf in the future beyond the tolerance', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ nbf: nowSeconds() + 45 })}`));
  });

  it('wrong or missing iss', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ issuer: 'someone-else' })}`));
    expectUnauthorized(await list(`Bearer ${await build({ issuer: null })}`));
  });

  it('wrong or missing aud', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ audience: 'another-api' })}`));
    expectUnauthorized(await list(`Bearer ${await build({ audience: null })}`));
  });

  it('wrong iss on an RS256 token from the JWKS', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ alg: 'RS256', key: rsaPrivate, kid: KID, issuer: 'someone-else' })}`));
  });

  it('no tenant claim, or one that is not a usable tenant id', async () => {
    expectUnauthorized(await list(`Bearer ${await build({ tenantClaim: null })}`));
    expectUnauthorized(await list(`Bearer ${await build({ tenantClaim: null, claims: { tenant_id: 42 } })}`));
    expectUnauthorized(await list(`Bearer ${await build({ tenantClaim: '' })}`));
    expectUnauthorized(await list(`Bearer ${await build({ tenantClaim: null, claims: { tenant: tenant } })}`));
  });
});

describe('401 for what the contract adds: non-finite exp, too long a lifetime, padded identities', () => {
  const claimsJson = (exp: string, extra = '') =>
    `{"tenant_id":"${tenant}","sub":"alice","iss":"${ISSUER}","aud":"${AUDIENCE}","scope":"memories:read","exp":${exp}${extra}}`;

  it('an exp of 1e400 (Infinity once parsed) never expires, so it is refused', async () => {
    // The same token with an ordinary exp is accepted: the refusal is about the number.
    expect((await list(`Bearer ${signRawPayload(claimsJson(String(nowSeconds() + 600)))}`)).status).toBe(200);
    expectUnauthorized(await list(`Bearer ${signRawPayload(claimsJson('1e400'))}`));
    expectUnauthorized(await list(`Bearer ${signRawPayload(claimsJson('1e400', `,"iat":${nowSeconds()}`))}`));
  });

  it('a lifetime over AUTH_MAX_TOKEN_AGE_S (default 86400): exp − iat, or exp − now without iat', async () => {
    const now = nowSeconds();
    expect((await list(`Bearer ${await build({ iat: now, exp: now + 86_400 })}`)).status).toBe(200);
    expectUnauthorized(await list(`Bearer ${await build({ iat: now, exp: now + 86_401 })}`));
    // Issued a while ago with a long life, still inside exp: the lifetime counts, not what is left.
    expectUnauthorized(await list(`Bearer ${await build({ iat: now - 3600, exp: now + 86_000 })}`));
    expect((await list(`Bearer ${await build({ iat: null, exp: now + 3600 })}`)).status).toBe(200);
    expectUnauthorized(await list(`Bearer ${await build({ iat: null, exp: now + 10 * 365 * 86_400 })}`));
    expectUnauthorized(await list(`Bearer ${await build({ alg: 'RS256', key: rsaPrivate, kid: KID, iat: null, exp: now + 2 * 86_400 })}`));
  });

  it('an iat in the future (it would move the start of the lifetime) is refused', async () => {
    const now = nowSeconds();
    expectUnauthorized(await list(`Bearer ${await build({ iat: now + 365 * 86_400, exp: now + 365 * 86_400 + 600 })}`));
  });

  it('the cap follows AUTH_MAX_TOKEN_AGE_S', async () => {
    const strict = await startTestApp({ AUTH_MAX_TOKEN_AGE_S: '600' });
    try {
      const now = nowSeconds();
      expect((await strict.call('GET', '/memories', { token: await build({ iat: now, exp: now + 600 }) })).status).toBe(200);
      expectUnauthorized(await strict.call('GET', '/memories', { token: await build({ iat: now, exp: now + 3600 }) }));
    } finally {
      await strict.close();
    }
  });

  it.each([[' alice'], ['alice '], ['alice\t'], ['\u00a0alice'], ['alice\n'], ['\ufeffalice']])('a sub with white space around it (%j)', async (sub) => {
    expectUnauthorized(await list(`Bearer ${await build({ sub })}`));
  });

  it.each([[' acme'], ['acme '], ['acme\n'], ['\u3000acme']])('a tenant with white space around it (%j)', async (padded) => {
    expectUnauthorized(await list(`Bearer ${await build({ tenantClaim: padded })}`));
  });
});

describe('routes that need no token', () => {
  it.each([['/healthz'], ['/readyz'], ['/openapi.json']])('%s answers 200 without a token, and ignores a bad one', async (path) => {
    const bare = await app.call('GET', path);
    expect(bare.status).toBe(200);
    expect(bare.headers.get('www-authenticate')).toBeNull();
    const withGarbage = await app.call('GET', path, { headers: { authorization: 'Bearer garbage' } });
    expect(withGarbage.status).toBe(200);
  });

  it('/openapi.json is the OpenAPI document', async () => {
    const res = await app.call('GET', '/openapi.json');
    expect(res.body.openapi).toMatch(/^3\.1/);
  });
});

describe('scopes, per route as the contract table says', () => {
  const ALL = ['memories:read', 'memories:write', 'memories:delete', 'memories:act_as'];
  type Route = { method: string; path: string; scope: string; body?: unknown; ok: number };
  let routes: Route[];
  let idFor: () => Promise<string>;

  beforeAll(async () => {
    const writer = await tokenFor({ tenant, user: 'alice', scope: 'memories:write' });
    let n = 0;
    idFor = async () => {
      const res = await app.call('POST', '/memories', { token: writer, body: { memories: [{ content: `scope probe ${n++}` }] } });
      expect(res.status).toBe(201);
      return res.body.memories[0].id as string;
    };
  });

  /** The routes, each with a fresh memory to address, so a wrongly allowed call has something to change. */
  async function makeRoutes(): Promise<Route[]> {
    return [
      { method: 'POST', path: '/memories', scope: 'memories:write', body: { memories: [{ content: `added by scope test ${Math.random()}` }] }, ok: 201 },
      { method: 'GET', path: '/memories', scope: 'memories:read', ok: 200 },
      { method: 'POST', path: '/memories/recall', scope: 'memories:read', body: { query: 'scope probe' }, ok: 200 },
      { method: 'POST', path: '/memories/delete', scope: 'memories:delete', body: { memory_ids: [await idFor()] }, ok: 200 },
      { method: 'GET', path: `/memories/${await idFor()}`, scope: 'memories:read', ok: 200 },
      { method: 'PATCH', path: `/memories/${await idFor()}`, scope: 'memories:write', body: { importance: 9 }, ok: 200 },
      { method: 'DELETE', path: `/memories/${await idFor()}`, scope: 'memories:delete', ok: 204 },
      { method: 'GET', path: `/memories/${await idFor()}/history`, scope: 'memories:read', ok: 200 },
      { method: 'POST', path: '/memories/delete', scope: 'memories:delete', body: { user_id: 'alice' }, ok: 200 },
    ];
  }

  async function snapshot(): Promise<string> {
    const reader = await tokenFor({ tenant, user: 'alice', scope: 'memories:read' });
    const res = await app.call('GET', '/memories?limit=100', { token: reader });
    return JSON.stringify(res.body.memories.map((m: { id: string; importance: number; content: string }) => [m.id, m.importance, m.content]).sort());
  }

  it('every route refuses a token with every scope but its own (403) and changes nothing', async () => {
    routes = await makeRoutes();
    for (const route of routes) {
      const before = await snapshot();
      const token = await tokenFor({ tenant, user: 'alice', scope: ALL.filter((s) => s !== route.scope).join(' ') });
      const res = await app.call(route.method, route.path, { token, body: route.body });
      expect({ route: `${route.method} ${route.path}`, status: res.status, code: res.body?.code }).toEqual({
        route: `${route.method} ${route.path}`,
        status: 403,
        code: 'forbidden',
      });
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await snapshot()).toBe(before);
    }
  });

  it('every route accepts a token holding only its own scope', async () => {
    for (const route of await makeRoutes()) {
      const token = await tokenFor({ tenant, user: 'alice', scope: route.scope });
      const res = await app.call(route.method, route.path, { token, body: route.body });
      expect({ route: `${route.method} ${route.path}`, status: res.status }).toEqual({ route: `${route.method} ${route.path}`, status: route.ok });
    }
  });

  it('every route refuses a request without a token (401)', async () => {
    for (const route of await makeRoutes()) {
      const res = await app.call(route.method, route.path, { body: route.body });
      expect({ route: `${route.method} ${route.path}`, status: res.status }).toEqual({ route: `${route.method} ${route.path}`, status: 401 });
      expectUnauthorized(res);
    }
  });

  it('a token with no scope claim at all is 403 on a read', async () => {
    const res = await list(`Bearer ${await build({ claims: { scope: undefined } })}`);
    expect(res.status).toBe(403);
  });

  it('a read-only token calling POST /memories is 403 and stores nothing', async () => {
    const before = await snapshot();
    const token = await tokenFor({ tenant, user: 'alice', scope: 'memories:read' });
    const res = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'should not be stored' }] } });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('memories:write');
    expect(await snapshot()).toBe(before);
  });

  it('a JWKS token is subject to the same scope rules', async () => {
    const token = await build({ alg: 'RS256', key: rsaPrivate, kid: KID, claims: { scope: 'memories:read' } });
    expect((await app.call('GET', '/memories', { token })).status).toBe(200);
    expect((await app.call('POST', '/memories', { token, body: { memories: [{ content: 'jwks write' }] } })).status).toBe(403);
  });
});

/**
 * openapi.yaml is generated from the routes' declarations (src/http/openapi.ts): these tests keep
 * the committed file equal to what the code generates, the document sound and complete (scopes,
 * errors, examples on every operation), the served routes equal to the declared ones, and every
 * answer equal to its declaration (the harness checks each JSON answer: test/support/openapi-check.ts).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { z } from 'zod';
import { ROUTES, openApiDocument, openApiYaml } from '../../src/http/openapi.js';
import { ALL_SCOPES, startTestApp, tokenFor, uniqueTenant, type CallOptions, type CallResult, type TestApp } from '../support/harness.js';
import { matchRoute, responseProblems } from '../support/openapi-check.js';

const OPENAPI_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../openapi.yaml');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The routes that need no token; every other operation must declare its security. */
const PUBLIC_ROUTES = new Set(['GET /healthz', 'GET /readyz', 'GET /openapi.json', 'GET /docs', 'GET /docs/assets/{file}', 'GET /metrics']);

const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

let app: TestApp;
let tenant: string;

beforeAll(async () => {
  app = await startTestApp();
  tenant = uniqueTenant('oas');
});
afterAll(() => app.close());

/** The routes the Hono app registers, as `METHOD /openapi/{template}` (middleware left out). */
function servedRoutes(): Set<string> {
  const served = new Set<string>();
  for (const route of app.runtime.app.routes) {
    if (route.method === 'ALL') continue; // app.use() middleware
    const template = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)(\{[^}]*\})?\??/g, '{$1}');
    served.add(key(route.method, template));
  }
  return served;
}

const doc = openApiDocument() as Record<string, any>;
const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => HTTP_METHODS.includes(method))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Record<string, any> })),
);
const resolve = (pointer: string): any => pointer.slice(2).split('/').reduce((node: any, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
const deref = (value: any): any => (value && typeof value === 'object' && '$ref' in value ? deref(resolve(value.$ref)) : value);

describe('openapi.yaml is what the code generates', () => {
  it('the committed file is the generated document (run `npm run openapi` after changing a route)', () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(openApiYaml());
  });

  it('serves the same document at /openapi.json', async () => {
    const res = await app.call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual(parse(readFileSync(OPENAPI_FILE, 'utf8')));
    // A YAML 1.1 reader (PyYAML and kin) sees the same: no date-like string read as a timestamp.
    expect(res.body).toEqual(parse(readFileSync(OPENAPI_FILE, 'utf8'), { version: '1.1' }));
  });

  it('documents exactly the routes the app serves', () => {
    const documented = new Set(operations.map((o) => key(o.method, o.path)));
    expect([...servedRoutes()].filter((r) => !documented.has(r)), 'served but not declared in src/http/openapi.ts ROUTES').toEqual([]);
    expect([...documented].filter((r) => !servedRoutes().has(r)), 'declared but not served').toEqual([]);
  });
});

describe('openapi.yaml is a sound OpenAPI 3.1 document', () => {
  it('has the required top-level fields, a relative server and both security schemes', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.jsonSchemaDialect).toBeUndefined();
    expect(doc.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(Object.keys(doc.components.securitySchemes.oauth2.flows.clientCredentials.scopes).sort()).toEqual(
      ['engram:admin', 'engram:operator', 'memories:act_as', 'memories:delete', 'memories:read', 'memories:write'],
    );
  });

  it('resolves every $ref', () => {
    const broken: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${at}/${i}`));
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref') {
            if (resolve(String(v)) === undefined) broken.push(`${at}: ${String(v)}`);
          } else walk(v, `${at}/${k}`);
        }
      }
    };
    walk(doc, '#');
    expect(broken).toEqual([]);
  });

  it('gives every operation a unique operationId, a summary, and required path parameters', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, path, op } of operations) {
      const where = key(method, path);
      expect(op.summary, `${where} summary`).toEqual(expect.any(String));
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).map(deref).filter((p: any) => p.in === 'path');
      expect(declared.map((p: any) => p.name).sort(), `${where} path parameters`).toEqual(templated);
      for (const p of declared) expect(p.required, `${where} path parameter ${p.name} must be required`).toBe(true);
    }
  });

  it('states the auth and errors of every operation', () => {
    for (const { method, path, op } of operations) {
      const where = key(method, path);
      const responses = Object.fromEntries(Object.entries(op.responses).map(([s, r]) => [s, deref(r)])) as Record<string, any>;
      for (const [status, response] of Object.entries(responses)) {
        expect(deref(response.headers?.['X-Request-Id'])?.required, `${where} ${status} must declare X-Request-Id`).toBe(true);
        if (Number(status) >= 400 && !(path === '/readyz' && status === '503')) {
          expect(Object.keys(response.content ?? {}), `${where} ${status} must be problem+json`).toEqual(['application/problem+json']);
        }
      }
      if (PUBLIC_ROUTES.has(where)) {
        expect(op.security, `${where} is public`).toEqual([]);
        expect(op['x-required-scope'], `${where} is public`).toBeUndefined();
        continue;
      }
      const scope = op['x-required-scope'];
      expect(scope, `${where} x-required-scope`).toMatch(/^(memories:(read|write|delete)|engram:(admin|operator))$/);
      expect(op.security, `${where} security`).toEqual([{ oauth2: [scope] }, { bearerAuth: [] }]);
      expect(op.description, `${where} description names its scope`).toContain(`**Required scope:** \`${scope}\``);
      for (const status of ['401', '403', '429', '503']) expect(responses[status], `${where} documents ${status}`).toBeDefined();
      expect(deref(responses['401'].headers['WWW-Authenticate']).required).toBe(true);
      expect(deref(responses['429'].headers['Retry-After']).required).toBe(true);
      if (op.requestBody) for (const status of ['400', '413', '415']) expect(responses[status], `${where} documents ${status}`).toBeDefined();
      if (path.includes('{')) expect(responses['404'], `${where} documents 404`).toBeDefined();
    }
  });

  it('shows a request and a response example on every operation, each valid for its schema', () => {
    for (const route of ROUTES) {
      const where = key(route.method, route.path);
      const request = ('request' in route ? route.request : undefined) as { body?: { content: Record<string, { schema: z.ZodType; example?: unknown }> }; params?: unknown; query?: unknown } | undefined;
      const body = request?.body?.content['application/json'];
      if (body) {
        expect(body.example, `${where} request example`).toBeDefined();
        const parsed = body.schema.safeParse(body.example);
        expect(parsed.success ? [] : parsed.error.issues, `${where} request example is valid`).toEqual([]);
      } else if (request?.params || request?.query) {
        const op = doc.paths[route.path][route.method];
        for (const p of (op.parameters ?? []).map(deref)) if (p.required) expect(p.schema.example ?? p.example, `${where} parameter ${p.name} example`).toBeDefined();
      }
      const answers = Object.entries(route.responses as Record<string, { content?: Record<string, { schema: z.ZodType; example?: unknown }> }>).filter(([s]) => Number(s) < 400);
      for (const [status, response] of answers) {
        for (const [mediaType, media] of Object.entries(response.content ?? {})) {
          expect(media.example, `${where} ${status} ${mediaType} example`).toBeDefined();
          if (!/json/.test(mediaType)) continue;
          const parsed = media.schema.safeParse(media.example);
          expect(parsed.success ? [] : parsed.error.issues, `${where} ${status} example is valid`).toEqual([]);
        }
      }
    }
  });
});

describe('each served route answers what openapi.yaml documents', () => {
  /** Calls through the harness (which checks every JSON answer) and checks non-JSON answers too. */
  const exercised = new Set<string>();
  async function call(method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
    const route = matchRoute(method, path);
    if (route) exercised.add(key(method, route.template));
    const res = await app.call(method, path, options);
    if (!/json/.test(res.headers.get('content-type') ?? '') && res.status !== 204) {
      expect(responseProblems(method, path, res.status, res.body, res.headers)).toEqual([]);
    }
    return res;
  }

  it('happy path through every served route', async () => {
    const user = 'happy';
    const token = await tokenFor({ tenant, user });

    expect((await call('GET', '/healthz')).status).toBe(200);
    expect((await call('GET', '/readyz')).status).toBe(200);
    expect((await call('GET', '/openapi.json')).status).toBe(200);
    expect((await call('GET', '/docs')).status).toBe(200);
    expect((await call('GET', '/docs/assets/init.js')).status).toBe(200);
    expect((await call('GET', '/metrics')).status).toBe(200);
    // This app has no REDIS_URL, so no BullMQ queue to show: a documented 404 for an operator.
    const operator = await tokenFor({ tenant, user: 'operator', scope: 'engram:operator' });
    expect((await call('GET', '/admin/queues', { token: operator })).status).toBe(404);

    const added = await call('POST', '/memories', {
      token,
      headers: { 'x-request-id': 'happy-path-1' },
      body: {
        user_id: user,
        agent_id: 'agent-1',
        run_id: 'run-1',
        memories: [
          {
            content: 'Happy prefers green tea over coffee',
            importance: 7,
            category: 'preferences',
            metadata: { source: 'chat', tags: ['drinks'], confidence: 0.9, nested: { ok: true, none: null } },
            occurred_at: '2026-01-02T03:04:05Z',
            expires_at: '2099-01-01T00:00:00+01:00',
          },
          { content: 'Happy lives in Lisbon', category: null, expires_at: null },
          { content: 'Happy plays the cello' },
        ],
      },
    });
    expect(added.status).toBe(201);
    expect(added.headers.get('x-request-id')).toBe('happy-path-1');
    const [tea, lisbon, cello] = added.body.memories as Array<{ id: string }>;

    const page = await call('GET', '/memories?limit=1', { token });
    expect(page.status).toBe(200);
    expect(page.body.next_cursor).toEqual(expect.any(String));
    const rest = await call('GET', `/memories?user_id=${user}&limit=100&include_superseded=true&cursor=${encodeURIComponent(page.body.next_cursor)}`, { token });
    expect(rest.status).toBe(200);
    expect(rest.body.next_cursor).toBeNull();

    expect((await call('GET', `/memories/${tea!.id}`, { token })).status).toBe(200);
    const patched = await call('PATCH', `/memories/${tea!.id}`, {
      token,
      body: { content: 'Happy prefers jasmine tea', importance: 8, category: 'drinks', metadata: { source: 'edit' } },
    });
    expect(patched.status).toBe(200);
    const history = await call('GET', `/memories/${tea!.id}/history`, { token });
    expect(history.status).toBe(200);
    expect(history.body.events.map((e: { event: string }) => e.event)).toEqual(['ADD', 'UPDATE']);

    const recalled = await call('POST', '/memories/recall', { token, body: { query: 'which tea does Happy prefer?' } });
    expect(recalled.status).toBe(200);
    expect(recalled.body.memories.length).toBeGreaterThan(0);
    const tuned = await call('POST', '/memories/recall', {
      token,
      body: {
        user_id: user,
        query: 'tea',
        limit: 5,
        weights: { relevance: 1, recency: 0.5 },
        recency_half_life_hours: 24,
        filters: { agent_id: 'agent-1', run_id: 'run-1', categories: ['drinks', 'music'], metadata: { source: 'edit' } },
        as_of: '2098-12-31T00:00:00.000Z',
        min_score: 0,
        min_relevance: 0.1,
      },
    });
    expect(tuned.status).toBe(200);
    expect(tuned.body.memories.map((m: { id: string }) => m.id)).toEqual([tea!.id]);

    const accepted = await call('POST', '/memories/extract', {
      token,
      headers: { 'idempotency-key': `happy-${randomUUID()}` },
      body: {
        user_id: user,
        agent_id: 'agent-1',
        run_id: 'run-2',
        messages: [
          { role: 'user', content: 'I just adopted a cat called Miso.', name: 'Happy', created_at: '2026-02-01T10:00:00Z' },
          { role: 'assistant', content: 'Congratulations on Miso!' },
        ],
        metadata: { channel: 'test' },
        infer: false,
      },
    });
    expect(accepted.status).toBe(202);
    const job = await call('GET', `/jobs/${accepted.body.job_id}`, { token });
    expect(job.status).toBe(200);
    expect((await call('GET', `/jobs/${accepted.body.job_id}?wait=0.1`, { token })).status).toBe(200);

    const exported = await call('GET', `/memories/export?user_id=${user}&include_superseded=true&include_history=true`, { token });
    expect(exported.status).toBe(200);
    const imported = await call('POST', `/memories/import?user_id=${user}`, { token, rawBody: String(exported.body), headers: { 'content-type': 'application/x-ndjson' } });
    expect(imported.status).toBe(200);
    const admin = await tokenFor({ tenant, user: 'admin', scope: 'engram:admin' });
    // A public address literal: no lookup, and no worker runs here to deliver to it.
    const hook = await call('POST', '/webhooks', { token: admin, body: { url: 'https://93.184.215.14/hook', events: ['memory.created'], description: 'happy' } });
    expect(hook.status).toBe(201);
    expect((await call('GET', '/webhooks', { token: admin })).status).toBe(200);
    expect((await call('GET', `/webhooks/${hook.body.id}/deliveries?limit=10`, { token: admin })).status).toBe(200);
    expect((await call('DELETE', `/webhooks/${hook.body.id}`, { token: admin })).status).toBe(204);

    expect((await call('DELETE', `/memories/${cello!.id}`, { token })).status).toBe(204);
    const forgot = await call('POST', '/memories/delete', { token, body: { user_id: user, memory_ids: [lisbon!.id, randomUUID()] } });
    expect(forgot.status).toBe(200);
    expect(forgot.body.deleted).toBe(1);
    const erased = await call('POST', '/memories/delete', { token, body: {} });
    expect(erased.status).toBe(200);

    const settingsAdmin = await tokenFor({ tenant, user, scope: `${ALL_SCOPES} engram:admin` });
    expect((await call('GET', '/settings', { token })).status).toBe(200);
    const put = await call('PUT', '/settings', {
      token: settingsAdmin,
      body: {
        extraction: { instructions: 'Keep dietary facts.', categories: [{ name: 'food', description: 'what the user eats' }], exclude_categories: ['gossip'] },
        pii: { mode: 'reject' },
        retention: { default_ttl_days: null, by_category: { food: 30 } },
      },
    });
    expect(put.status).toBe(200);
    const refused = await call('POST', '/memories', { token, body: { memories: [{ content: 'Mail happy@example.com' }] } });
    expect(refused.status).toBe(422);

    const notExercised = [...servedRoutes()].filter((r) => !exercised.has(r));
    expect(notExercised, 'served routes this test does not call yet').toEqual([]);
  });

  it('answers documented problems', async () => {
    const token = await tokenFor({ tenant, user: 'troubled' });
    const readOnly = await tokenFor({ tenant, user: 'troubled', scope: 'memories:read' });

    const unauthenticated = await call('GET', '/memories', { headers: { 'x-request-id': 'no-token-1' } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(unauthenticated.body.request_id).toBe('no-token-1');

    expect((await call('POST', '/memories', { token: readOnly, body: { memories: [{ content: 'x' }] } })).status).toBe(403);
    expect((await call('GET', '/memories?user_id=someone-else', { token })).status).toBe(403);

    const invalid = await call('POST', '/memories', { token, body: { memories: [], tenant_id: 'other' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors.length).toBeGreaterThan(0);
    expect((await call('POST', '/memories/recall', { token, rawBody: '{"query":', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await call('POST', '/memories/recall', { token, body: { query: 'x', weights: { recency: 0 } } })).status).toBe(400);
    expect((await call('GET', '/memories?limit=0', { token })).status).toBe(400);
    expect((await call('POST', '/memories/recall', { token, rawBody: 'query', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await call('POST', '/memories/delete', { token, rawBody: 'x'.repeat(1_100_000), headers: { 'content-type': 'application/json' } })).status).toBe(413);

    expect((await call('GET', `/memories/${randomUUID()}`, { token })).status).toBe(404);
    expect((await call('GET', '/memories/not-a-uuid/history', { token })).status).toBe(404);
    expect((await call('DELETE', `/memories/${randomUUID()}`, { token })).status).toBe(404);
    expect((await call('GET', `/jobs/${randomUUID()}`, { token })).status).toBe(404);

    const two = await call('POST', '/memories', { token, body: { memories: [{ content: 'Troubled likes rain' }, { content: 'Troubled likes snow' }] } });
    const conflict = await call('PATCH', `/memories/${two.body.memories[1].id}`, { token, body: { content: 'Troubled likes rain' } });
    expect(conflict.status).toBe(409);

    const extract = { messages: [{ role: 'user', content: 'I like tea' }] };
    const idem = `trouble-${randomUUID()}`;
    expect((await call('POST', '/memories/extract', { token, headers: { 'idempotency-key': idem }, body: extract })).status).toBe(202);
    const reused = await call('POST', '/memories/extract', { token, headers: { 'idempotency-key': idem }, body: { ...extract, infer: false } });
    expect(reused.status).toBe(409);
    expect(reused.body.code).toBe('idempotency_conflict');
  });

  it('answers 429 with Retry-After when the tenant is over its rate', async () => {
    const limited = await startTestApp({ RATE_LIMIT_PER_MINUTE: '1' });
    try {
      const token = await tokenFor({ tenant: uniqueTenant('oas-rate'), user: 'u', scope: ALL_SCOPES });
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await limited.call('GET', '/memories', { token });
        statuses.push(res.status);
        if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      expect(statuses).toContain(429);
    } finally {
      await limited.close();
    }
  });
});

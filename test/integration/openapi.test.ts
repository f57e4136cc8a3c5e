/**
 * openapi.yaml is the published contract: these tests keep it and the app from drifting apart.
 * Every response any test receives through the harness is also checked against it (see
 * test/support/openapi-validator.ts); here we check the document itself, that it covers exactly the
 * routes the app serves, and that each served route answers what it documents.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { extractBody } from '../../src/extraction/schemas.js';
import { addMemoriesBody, deleteMemoriesBody, listMemoriesQuery, patchMemoryBody } from '../../src/memories/schemas.js';
import { recallBody } from '../../src/recall/schemas.js';
import { settingsSchema } from '../../src/settings/schemas.js';
import { ALL_SCOPES, startTestApp, tokenFor, uniqueTenant, type CallOptions, type CallResult, type TestApp } from '../support/harness.js';
import {
  HTTP_METHODS,
  OPENAPI_FILE,
  compileAllSchemas,
  matchRoute,
  openApiDoc,
  resolvePointer,
  routeTemplates,
  validateRequestBody,
  validateResponse,
} from '../support/openapi-validator.js';

/**
 * Documented routes the app does not serve yet, with the issue that builds each. When a route
 * lands, the test below fails until its entry is removed here: this set only ever shrinks.
 */
const NOT_YET_SERVED = new Map<string, string>([]);

/** The routes that need no token; every other operation must declare its bearer security. */
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

/** Documented `{param}` names must match the app's `:param` names only by position, not by spelling. */
function shapeOf(route: string): string {
  return route.replace(/\{[^}]+\}/g, '{}');
}

describe('openapi.yaml and the routes the app serves', () => {
  it('documents every route the app serves', () => {
    const documented = new Set(routeTemplates().map((r) => shapeOf(key(r.method, r.path))));
    const undocumented = [...servedRoutes()].filter((r) => !documented.has(shapeOf(r)));
    expect(undocumented, 'served but missing from openapi.yaml').toEqual([]);
  });

  it('serves every documented route, except those still to be built', () => {
    const served = new Set([...servedRoutes()].map(shapeOf));
    const missing = routeTemplates()
      .map((r) => key(r.method, r.path))
      .filter((r) => !served.has(shapeOf(r)) && !NOT_YET_SERVED.has(r));
    expect(missing, 'documented but neither served nor listed in NOT_YET_SERVED').toEqual([]);
    const landed = [...NOT_YET_SERVED.keys()].filter((r) => served.has(shapeOf(r)));
    expect(landed, 'served now: remove from NOT_YET_SERVED').toEqual([]);
    const unknown = [...NOT_YET_SERVED.keys()].filter((r) => !routeTemplates().some((t) => key(t.method, t.path) === r));
    expect(unknown, 'NOT_YET_SERVED names a route openapi.yaml does not document').toEqual([]);
  });

  it('serves the same document at /openapi.json', async () => {
    const res = await app.call('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual(parse(readFileSync(OPENAPI_FILE, 'utf8')));
  });
});

describe('openapi.yaml is a sound OpenAPI 3.1 document', () => {
  const doc = openApiDoc();
  const operations = routeTemplates().map(({ method, path }) => ({
    method,
    path,
    item: doc.paths[path] as Record<string, any>,
    op: doc.paths[path][method.toLowerCase()] as Record<string, any>,
  }));
  const deref = (value: any): any => (value && typeof value === 'object' && '$ref' in value ? deref(resolvePointer(value.$ref)) : value);

  it('has the required top-level fields', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
    expect(doc.servers).toContainEqual(expect.objectContaining({ url: 'http://127.0.0.1:8080' }));
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    const unknownKeys = Object.keys(doc.paths).flatMap((p) =>
      Object.keys(doc.paths[p]).filter((k) => !(HTTP_METHODS as readonly string[]).includes(k) && !['parameters', 'summary', 'description', 'servers'].includes(k)),
    );
    expect(unknownKeys).toEqual([]);
  });

  it('resolves every $ref', () => {
    const broken: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${at}/${i}`));
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref') {
            try {
              resolvePointer(String(v));
            } catch {
              broken.push(`${at}: ${String(v)}`);
            }
          } else walk(v, `${at}/${k}`);
        }
      }
    };
    walk(doc, '#');
    expect(broken).toEqual([]);
  });

  it('compiles every request and response schema', () => {
    expect(compileAllSchemas().length).toBeGreaterThan(operations.length);
  });

  it('gives every operation a unique operationId, responses, and declared path parameters', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, path, item, op } of operations) {
      const where = key(method, path);
      expect(Object.keys(op.responses ?? {}).length, `${where} has no responses`).toBeGreaterThan(0);
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), `${where} path parameters`).toEqual(templated);
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
      expect(op.security, `${where} security`).toEqual([{ bearerAuth: [scope] }]);
      expect(op.description, `${where} description names its scope`).toContain(`**Required scope:** \`${scope}\``);
      for (const status of ['401', '403', '429', '503']) expect(responses[status], `${where} documents ${status}`).toBeDefined();
      expect(deref(responses['401'].headers['WWW-Authenticate']).required).toBe(true);
      expect(deref(responses['429'].headers['Retry-After']).required).toBe(true);
      if (op.requestBody) for (const status of ['400', '413', '415']) expect(responses[status], `${where} documents ${status}`).toBeDefined();
      if (path.includes('{')) expect(responses['404'], `${where} documents 404`).toBeDefined();
    }
  });
});

/**
 * The documented request bodies must say what the zod schemas accept: the same fields, the same
 * required ones, the same limits, the same strictness. Compared on a normalised shape.
 */
describe('openapi.yaml request bodies match the zod schemas', () => {
  type Shape = { [k: string]: unknown };
  const COMPARED = ['type', 'nullable', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'minItems', 'maxItems', 'enum', 'format', 'closed'];

  /** Flattens $ref (with siblings), `anyOf: [X, null]` and `type: [X, 'null']` into one shape. */
  function normalise(schema: any, root: any): Shape {
    let s = schema ?? {};
    while (s.$ref) {
      const { $ref, ...rest } = s;
      const target = String($ref).startsWith('#/$defs/') ? root.$defs[String($ref).slice('#/$defs/'.length)] : resolvePointer($ref);
      s = { ...(target as object), ...rest };
    }
    let nullable = false;
    if (Array.isArray(s.anyOf) && s.anyOf.some((b: any) => b.type === 'null') && s.anyOf.length === 2) {
      const other = s.anyOf.find((b: any) => b.type !== 'null');
      const { anyOf: _anyOf, ...rest } = s;
      s = { ...normalise(other, root), ...rest };
      nullable = true;
    }
    if (Array.isArray(s.type) && s.type.includes('null')) {
      nullable = true;
      s = { ...s, type: s.type.filter((t: string) => t !== 'null')[0] };
    }
    const shape: Shape = {};
    for (const k of COMPARED) if (s[k] !== undefined) shape[k] = s[k];
    if (nullable || s.nullable) shape.nullable = true;
    if (s.additionalProperties === false) shape.closed = true;
    if (s.format !== undefined && !['date-time', 'uuid'].includes(s.format)) delete shape.format;
    if (s.default !== undefined) shape.default = s.default;
    if (s.properties) {
      shape.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, normalise(v, root)]));
      shape.required = [...(s.required ?? [])].sort();
    }
    if (s.items) shape.items = normalise(s.items, root);
    return shape;
  }

  /** Differences as `path keyword: doc X, code Y`; `default` only where the code has one. */
  function differences(doc: Shape, code: Shape, at = ''): string[] {
    const out: string[] = [];
    for (const k of [...COMPARED, 'required']) {
      if (JSON.stringify(doc[k]) !== JSON.stringify(code[k])) out.push(`${at || '/'} ${k}: doc ${JSON.stringify(doc[k])}, code ${JSON.stringify(code[k])}`);
    }
    if (code.default !== undefined && JSON.stringify(doc.default) !== JSON.stringify(code.default)) out.push(`${at || '/'} default: doc ${JSON.stringify(doc.default)}, code ${JSON.stringify(code.default)}`);
    const docProps = (doc.properties ?? {}) as Record<string, Shape>;
    const codeProps = (code.properties ?? {}) as Record<string, Shape>;
    for (const name of new Set([...Object.keys(docProps), ...Object.keys(codeProps)])) {
      if (!docProps[name]) out.push(`${at}/${name}: only in the code`);
      else if (!codeProps[name]) out.push(`${at}/${name}: only in the doc`);
      else out.push(...differences(docProps[name], codeProps[name], `${at}/${name}`));
    }
    if (doc.items || code.items) out.push(...differences((doc.items ?? {}) as Shape, (code.items ?? {}) as Shape, `${at}/*`));
    return out;
  }

  /** What the document states beyond the zod shape because the service enforces it in code. */
  const ENFORCED_BEYOND_ZOD = new Set([
    '/weights/recency minimum: doc 0, code undefined',
    '/weights/importance minimum: doc 0, code undefined',
    '/weights/relevance minimum: doc 0, code undefined',
  ]);

  const cases: Array<[string, string, z.ZodType]> = [
    ['POST', '/memories', addMemoriesBody],
    ['PATCH', '/memories/{id}', patchMemoryBody],
    ['POST', '/memories/recall', recallBody],
    ['POST', '/memories/delete', deleteMemoriesBody],
    ['POST', '/memories/extract', extractBody],
    ['PUT', '/settings', settingsSchema],
  ];
  for (const [method, path, schema] of cases) {
    it(`${method} ${path}`, () => {
      const op = openApiDoc().paths[path][method.toLowerCase()];
      const documented = normalise(op.requestBody.content['application/json'].schema, {});
      const generated = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as any;
      const diffs = differences(documented, normalise(generated, generated)).filter((d) => !ENFORCED_BEYOND_ZOD.has(d));
      expect(diffs).toEqual([]);
    });
  }

  it('GET /memories query parameters', () => {
    const params = (openApiDoc().paths['/memories'].get.parameters as any[]).filter((p) => p.in === 'query').map((p) => p.name).sort();
    expect(params).toEqual(Object.keys(listMemoriesQuery.shape).sort());
  });
});

describe('each served route answers what openapi.yaml documents', () => {
  /**
   * Calls through the harness (which checks every JSON answer), checks non-JSON answers too, and
   * checks that openapi.yaml accepts every body the app accepted.
   */
  const exercised = new Set<string>();
  async function call(method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
    const route = matchRoute(method, path);
    if (route) exercised.add(key(method, route.template));
    const res = await app.call(method, path, options);
    if (options.body !== undefined && res.status < 300) {
      expect(validateRequestBody(method, path, options.body), `openapi.yaml refuses a ${method} ${path} body the app accepted`).toEqual([]);
    }
    if (!/json/.test(res.headers.get('content-type') ?? '')) {
      expect(validateResponse(method, path, res.status, res.body === '' ? undefined : res.body, { contentType: res.headers.get('content-type'), headers: res.headers })).toEqual([]);
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

    expect((await call('DELETE', `/memories/${cello!.id}`, { token })).status).toBe(204);
    const forgot = await call('POST', '/memories/delete', { token, body: { user_id: user, memory_ids: [lisbon!.id, randomUUID()] } });
    expect(forgot.status).toBe(200);
    expect(forgot.body.deleted).toBe(1);
    const erased = await call('POST', '/memories/delete', { token, body: {} });
    expect(erased.status).toBe(200);

    const admin = await tokenFor({ tenant, user, scope: `${ALL_SCOPES} engram:admin` });
    const settings = await call('GET', '/settings', { token });
    expect(settings.status).toBe(200);
    const put = await call('PUT', '/settings', {
      token: admin,
      body: {
        extraction: { instructions: 'Keep dietary facts.', categories: [{ name: 'food', description: 'what the user eats' }], exclude_categories: ['gossip'] },
        pii: { mode: 'redact' },
        retention: { default_ttl_days: null, by_category: { food: 30 } },
      },
    });
    expect(put.status).toBe(200);

    const exercisedShapes = new Set([...exercised].map(shapeOf));
    const notExercised = [...servedRoutes()].filter((r) => !exercisedShapes.has(shapeOf(r)));
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

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Property-based fuzz of every route: whatever a client sends, the answer is never a 5xx, and an
 * error is always problem+json. Inputs mix near-valid bodies (the shapes the routes take, with
 * values at and past every bound: dates past 9999 after their offset, year 0, odd offsets, huge
 * numbers, NUL, lone surrogates, forged cursors and ids) with arbitrary JSON and broken bodies.
 *
 * A fixed seed keeps `npm test` deterministic; `npm run fuzz` runs many more cases (FUZZ_RUNS),
 * and FUZZ_SEED picks another seed. A failure prints the seed and the shrunk request.
 */

// Test-only knobs (src/config.ts reads the service's environment, not the suite's).
const RUNS = Number(process.env.FUZZ_RUNS ?? (TEST_BACKEND === 'pglite' ? 100 : 200));
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);

let app: TestApp;
const tenant = uniqueTenant('fuzz');
let token: string;
let adminToken: string;
let memoryIds: string[] = [];
let jobId: string;
let cursor: string;

beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant, user: 'fuzzer', scope: `${ALL_SCOPES} memories:act_as` });
  adminToken = await tokenFor({ tenant, user: 'fuzzer', scope: `${ALL_SCOPES} engram:admin` });
  const seeded = await app.call('POST', '/memories', {
    token,
    body: { user_id: 'seed', memories: ['Seed likes tea', 'Seed lives in Oslo', 'Seed plays chess'].map((content) => ({ content })) },
  });
  memoryIds = seeded.body.memories.map((m: { id: string }) => m.id);
  const job = await app.call('POST', '/memories/extract', { token, body: { user_id: 'seed', messages: [{ role: 'user', content: 'I like tea' }] } });
  jobId = job.body.job_id;
  cursor = (await app.call('GET', '/memories?user_id=seed&limit=1', { token })).body.next_cursor;
}, 120_000);
afterAll(() => app?.close());

// ---- values -------------------------------------------------------------------------------------

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Date-time strings around every bound: years 0..10000 (and extended), odd fields, offsets to ±24:60. */
const offset = (edges: boolean) =>
  fc.oneof(
    fc.constant('Z'),
    fc
      .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: edges ? 14 : 24 }), edges ? fc.constantFrom(0, 30, 59) : fc.integer({ min: 0, max: 60 }))
      .map(([sign, h, m]) => `${sign}${pad(h, 2)}:${pad(m, 2)}`),
  );
const dateFields = (edges: boolean) =>
  fc.record({
    year: edges ? fc.constantFrom(0, 1, 9999) : fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.constantFrom(10_000, 99_999, 275_760)),
    extended: edges ? fc.constant(false) : fc.boolean(),
    month: edges ? fc.constantFrom(1, 12) : fc.integer({ min: 0, max: 13 }),
    day: edges ? fc.constantFrom(1, 31) : fc.integer({ min: 0, max: 32 }),
    hour: edges ? fc.constantFrom(0, 23) : fc.integer({ min: 0, max: 25 }),
    minute: edges ? fc.constantFrom(0, 59) : fc.integer({ min: 0, max: 60 }),
    second: edges ? fc.constantFrom(0, 59) : fc.integer({ min: 0, max: 61 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,12}$/)),
    offset: offset(edges),
  });
const formatDate = (d: { year: number; extended: boolean; month: number; day: number; hour: number; minute: number; second: number; fraction: string | null; offset: string }) =>
  `${d.extended ? `+${pad(d.year, 6)}` : pad(d.year, 4)}-${pad(d.month, 2)}-${pad(d.day, 2)}T${pad(d.hour, 2)}:${pad(d.minute, 2)}:${pad(d.second, 2)}${d.fraction ? `.${d.fraction}` : ''}${d.offset}`;
/** Valid instants of years 0001-9999 written with an offset of up to ±14:00. */
const inRange = fc
  .tuple(fc.date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }), fc.integer({ min: -14, max: 14 }))
  .map(([date, hours]) => date.toISOString().replace('Z', hours === 0 ? 'Z' : `${hours < 0 ? '-' : '+'}${pad(Math.abs(hours), 2)}:00`));
const dateTime = fc.oneof(
  { weight: 3, arbitrary: inRange },
  { weight: 3, arbitrary: dateFields(true).map(formatDate) },
  { weight: 1, arbitrary: dateFields(false).map(formatDate) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '9999-12-31T23:59:59-14:00',
      '9999-12-31T23:59:59.999Z',
      '9999-12-31T23:59:59.9999999Z',
      '0001-01-01T00:00:00Z',
      '0001-01-01T00:00:00+14:00',
      '0000-01-01T00:00:00Z',
      '+010000-01-01T00:00:00Z',
      '2024-02-30T00:00:00Z',
      '2024-01-01',
      'now',
    ),
  },
);

const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', '\udc00x', "'; drop table memories; --", '%00', '../../etc/passwd', '\u202e', 'ǅ'.repeat(300), 'x'.repeat(10_001)),
);

const nastyNumber = fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constantFrom(0, -0, 1, 5, 10, 11, 100, 101, 1e308, -1e308, 2 ** 53, 0.5));

const anyValue: fc.Arbitrary<unknown> = fc.oneof(nastyString, nastyNumber, fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 3 }), dateTime);

const uuidLike = fc.oneof(fc.uuid(), fc.constantFrom('00000000-0000-0000-0000-000000000000', '-'.repeat(36), 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'), nastyString);

/** A body: the route's own shape, sometimes any JSON, sometimes not JSON at all. */
function body(arbitrary: fc.Arbitrary<unknown>): fc.Arbitrary<{ json?: unknown; raw?: string }> {
  return fc.oneof(
    { weight: 8, arbitrary: arbitrary.map((json) => ({ json })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((json) => ({ json })) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }).map((raw) => ({ raw })) },
  );
}

/**
 * The routes' bodies in two regimes. `valid`: every field within its schema except the dates,
 * which stay at the bounds, so requests reach the database with values at its edges. `loose`: any
 * field may be anything, so validation itself is fuzzed.
 */
function bodiesOf(regime: 'valid' | 'loose') {
  const loose = regime === 'loose';
  const field = <T>(valid: fc.Arbitrary<T>, nasty: fc.Arbitrary<unknown>) => (loose ? fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: nasty }) : valid);
  const shape = (fields: Record<string, fc.Arbitrary<unknown>>) =>
    fc.record(loose ? Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, fc.oneof({ weight: 8, arbitrary: value }, { weight: 1, arbitrary: anyValue })])) : fields, { requiredKeys: [] });
  const date = loose ? dateTime : fc.oneof(inRange, dateFields(true).map(formatDate));
  const userId = field(fc.constantFrom('fuzzer', 'seed', 'other'), nastyString);
  const text = field(fc.oneof(fc.constantFrom('Alice likes tea', 'Bob rows', 'where does seed live'), fc.string({ minLength: 1, maxLength: 60 }).filter((t) => t.trim().length > 0 && !t.includes('\u0000'))), nastyString);
  const optionalId = field(fc.constantFrom('agent-1', 'run-1', null), nastyString);
  const metadata = field(fc.dictionary(fc.constantFrom('a', 'b', 'lang', 'x y'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), anyValue);
  const importance = field(fc.integer({ min: 1, max: 10 }), nastyNumber);
  const category = field(fc.constantFrom('food', 'travel', null), nastyString);
  const unitInterval = field(fc.double({ min: 0, max: 1, noNaN: true }), nastyNumber);
  const ttlDays = field(fc.integer({ min: 1, max: 36_500 }), nastyNumber);
  const memory = shape({ content: text, importance, category, metadata, occurred_at: date, expires_at: fc.oneof(date, fc.constant(null)), ttl_days: ttlDays });
  const categoryName = field(fc.constantFrom('food', 'travel', 'home', 'work'), nastyString);
  const categories = fc.array(shape({ name: categoryName, description: text }), { minLength: 1, maxLength: 4 });
  return {
    addMemories: shape({ user_id: userId, agent_id: optionalId, run_id: optionalId, memories: fc.array(memory, { minLength: 1, maxLength: 4 }) }),
    recall: shape({
      user_id: userId,
      query: text,
      limit: field(fc.integer({ min: 1, max: 100 }), nastyNumber),
      weights: shape({ recency: unitInterval, importance: unitInterval, relevance: unitInterval }),
      recency_half_life_hours: field(fc.double({ min: 0.001, max: 1e6, noNaN: true }), nastyNumber),
      filters: shape({ agent_id: text, run_id: text, categories: fc.array(category, { minLength: 1, maxLength: 3 }), metadata }),
      as_of: date,
      min_score: unitInterval,
      min_relevance: unitInterval,
    }),
    delete: shape({ user_id: field(fc.constantFrom('other', 'nobody'), nastyString), memory_ids: fc.array(field(fc.uuid(), uuidLike), { minLength: 1, maxLength: 3 }) }),
    patch: shape({ content: text, importance, category, metadata, expires_at: fc.oneof(date, fc.constant(null)), ttl_days: ttlDays }),
    settings: shape({
      extraction: shape({ instructions: text, categories, exclude_categories: fc.array(categoryName, { maxLength: 3 }) }),
      pii: shape({ mode: field(fc.constantFrom('off', 'redact', 'reject'), nastyString) }),
      retention: shape({ default_ttl_days: fc.oneof(ttlDays, fc.constant(null)), by_category: fc.dictionary(categoryName.map(String), ttlDays, { maxKeys: 3 }) }),
    }),
    extract: shape({
      user_id: userId,
      agent_id: optionalId,
      run_id: optionalId,
      messages: fc.array(shape({ role: field(fc.constantFrom('user', 'assistant', 'system', 'tool'), nastyString), content: text, name: text, created_at: date }), { minLength: 1, maxLength: 3 }),
      metadata,
      infer: field(fc.boolean(), anyValue),
      instructions: text,
      categories,
    }),
  };
}
const valid = bodiesOf('valid');
const loose = bodiesOf('loose');
const bodies = Object.fromEntries(Object.keys(valid).map((name) => [name, body(fc.oneof(valid[name as keyof typeof valid], loose[name as keyof typeof loose]))])) as Record<keyof typeof valid, ReturnType<typeof body>>;
const userId = fc.oneof(fc.constantFrom('fuzzer', 'seed', 'other'), nastyString);

/** Percent-encoding of any string; a lone surrogate (which encodeURIComponent refuses) as U+FFFD. */
const percentEncode = (value: string) => encodeURIComponent(value.toWellFormed());
/** Escapes a URL decoder may choke on: incomplete, not hex, invalid UTF-8, NUL. */
const brokenEscape = fc.constantFrom('%', '%zz', '%C3%28', '%E0%A4%A', '%ED%A0%80', '%00', '%2F..%2F', '%25');

/** A query string: the route's parameters with fuzzed values, or raw bytes (broken escapes included). */
function queryString(fields: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const structured = fc.record(fields, { requiredKeys: [] }).map((params) => {
    const search = new URLSearchParams(params as Record<string, string>).toString();
    return search ? `?${search}` : '';
  });
  const raw = fc.string({ maxLength: 40 }).map((s) => `?${s.toWellFormed().replace(/[#\s]/g, '')}`);
  const broken = fc.tuple(fc.constantFrom(...Object.keys(fields), 'x'), brokenEscape).map(([key, escape]) => `?${key}=${escape}`);
  return fc.oneof({ weight: 4, arbitrary: structured }, { weight: 1, arbitrary: raw }, { weight: 1, arbitrary: broken });
}

const stringOf = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((value) => String(value));
const cursorLike = fc.oneof(
  fc.constant('issued'),
  fc.base64String({ maxLength: 80 }),
  fc.tuple(fc.constant('issued'), fc.nat(), fc.constantFrom('A', '_', '.', '')).map(([marker, at, c]) => `${marker}:${at}:${c}`),
  fc.tuple(dateTime, uuidLike).map(([d, id]) => Buffer.from(JSON.stringify([d, id])).toString('base64url')),
  nastyString,
);

/** An id for a path: a known memory or job (a marker resolved at send time), a UUID, or anything. */
const pathId = fc.oneof(fc.constantFrom('memory0', 'memory1', 'job'), uuidLike.map(percentEncode), brokenEscape);

function resolveIds(path: string): string {
  const ids: Record<string, string> = { memory0: memoryIds[0]!, memory1: memoryIds[1]!, job: jobId };
  return path.replace(/(?<=^\/(?:memories|jobs)\/)(memory0|memory1|job)(?=$|\/)/, (marker) => ids[marker]!);
}

function resolveQuery(query: string): string {
  // An issued cursor, or one with a character altered, stands in for the marker.
  return query.replace(/issued(?::(\d+):([A-Za-z_.]?))?/g, (_m, at: string | undefined, c: string | undefined) => {
    if (at === undefined) return percentEncode(cursor);
    const index = Number(at) % cursor.length;
    return percentEncode(`${cursor.slice(0, index)}${c ?? ''}${cursor.slice(index + 1)}`);
  });
}

// ---- the property ---------------------------------------------------------------------------------

interface Sent {
  method: string;
  path: string;
  json?: unknown;
  raw?: string;
  token?: string;
  headers?: Record<string, string>;
}

/** Sends one request; throws (failing the property) on a 5xx or an error that is not problem+json. */
async function send(request: Sent): Promise<number> {
  const headers: Record<string, string> = { ...request.headers };
  let rawBody: string | undefined;
  if (request.json !== undefined) rawBody = JSON.stringify(request.json);
  else if (request.raw !== undefined) rawBody = request.raw;
  if (rawBody !== undefined) headers['content-type'] ??= 'application/json';
  const res = await app.call(request.method, request.path, { token: request.token ?? token, headers, skipOpenApiCheck: true, ...(rawBody !== undefined ? { rawBody } : {}) });
  const what = `${request.method} ${request.path} ${rawBody === undefined ? '' : rawBody.slice(0, 300)}`;
  if (res.status >= 500) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  if (res.status >= 400) {
    const type = res.headers.get('content-type') ?? '';
    if (!/^application\/problem\+json/.test(type)) throw new Error(`${what} answered ${res.status} as ${type || 'no content type'}`);
    const problem = res.body as { status?: unknown; code?: unknown; detail?: unknown };
    if (problem.status !== res.status || typeof problem.code !== 'string' || typeof problem.detail !== 'string') {
      throw new Error(`${what} answered ${res.status} with a body that is not a problem: ${JSON.stringify(res.body).slice(0, 300)}`);
    }
  }
  return res.status;
}

const routes: Record<string, fc.Arbitrary<Sent>> = {
  'POST /memories': bodies.addMemories.map((b) => ({ method: 'POST', path: '/memories', ...b })),
  'GET /memories': queryString({ user_id: stringOf(userId), limit: stringOf(nastyNumber), cursor: stringOf(cursorLike), include_superseded: stringOf(anyValue) }).map((q) => ({
    method: 'GET',
    path: `/memories${q}`,
  })),
  'POST /memories/recall': bodies.recall.map((b) => ({ method: 'POST', path: '/memories/recall', ...b })),
  'POST /memories/delete': bodies.delete.map((b) => ({ method: 'POST', path: '/memories/delete', ...b })),
  'GET /memories/{id}': pathId.map((id) => ({ method: 'GET', path: `/memories/${id}` })),
  'PATCH /memories/{id}': fc.tuple(pathId, bodies.patch).map(([id, b]) => ({ method: 'PATCH', path: `/memories/${id}`, ...b })),
  'DELETE /memories/{id}': pathId.filter((id) => id !== 'memory0').map((id) => ({ method: 'DELETE', path: `/memories/${id}` })),
  'GET /memories/{id}/history': pathId.map((id) => ({ method: 'GET', path: `/memories/${id}/history` })),
  'POST /memories/extract': fc
    .tuple(bodies.extract, fc.option(fc.oneof(nastyString, fc.uuid())))
    .map(([b, key]) => ({ method: 'POST', path: '/memories/extract', ...b, ...(key !== null ? { headers: { 'idempotency-key': percentEncode(key) } } : {}) })),
  'GET /jobs/{id}': pathId.map((id) => ({ method: 'GET', path: `/jobs/${id}` })),
  'GET /settings': fc.constant({ method: 'GET', path: '/settings' }),
  'PUT /settings': bodies.settings.map((b) => ({ method: 'PUT', path: '/settings', token: 'admin', ...b })),
  // No token, a broken one, or a read-only token on a write: 401 and 403 are problems too.
  'any route, any token': fc
    .tuple(
      fc.constantFrom('GET /memories', 'POST /memories', 'POST /memories/recall', 'POST /memories/delete', 'GET /jobs/job', 'GET /admin/queues', 'PATCH /memories/memory0'),
      fc.oneof(fc.constant(''), nastyString.map((s) => s.replace(/[^\x21-\x7e]/g, '')), fc.constant('read-only'), fc.constant('admin')),
    )
    .map(([route, t]) => {
      const [method, path] = route.split(' ') as [string, string];
      return { method, path, ...(method === 'GET' ? {} : { json: { query: 'tea', memories: [{ content: 'x' }] } }), token: t };
    }),
  'unknown routes and methods': fc
    .tuple(fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'), fc.oneof(fc.webPath(), nastyString.map((s) => `/${percentEncode(s)}`), brokenEscape.map((e) => `/memories/${e}/x`)))
    .map(([method, path]) => ({ method, path })),
};

const NO_SUCCESS_EXPECTED = new Set(['unknown routes and methods']);

let readOnlyToken: string;
beforeAll(async () => {
  readOnlyToken = await tokenFor({ tenant, user: 'fuzzer', scope: 'memories:read' });
});

describe(`fuzz (seed ${SEED}, ${RUNS} runs per route): never a 5xx, every error problem+json`, () => {
  for (const [name, arbitrary] of Object.entries(routes)) {
    it(name, { timeout: 600_000 }, async () => {
      let succeeded = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary, async (request) => {
          const sent = { ...request, path: resolveQuery(resolveIds(request.path)) };
          // An empty token sends no Authorization header at all; a garbage one is sent as it is.
          if (request.token === 'read-only') sent.token = readOnlyToken;
          else if (request.token === 'admin') sent.token = adminToken;
          if ((await send(sent)) < 300) succeeded++;
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
      // Not only validation was fuzzed: some requests of each real route got through to the work.
      if (!NO_SUCCESS_EXPECTED.has(name)) expect(succeeded).toBeGreaterThan(0);
    });
  }
});

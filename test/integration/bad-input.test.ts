import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type CallResult, type TestApp } from '../support/harness.js';

/**
 * What a client can send wrong, and what it gets back: the right 4xx as problem+json, its request
 * id echoed, never a 500 and never a trace, and nothing written.
 */

let app: TestApp;
const tenant = uniqueTenant('bad');
let token: string;
let memoryId: string;
const REQUEST_ID = 'req-123';

interface Case {
  name: string;
  method: string;
  path: string | (() => string);
  /** Sent as is: a string or raw bytes. */
  raw?: string | Uint8Array;
  /** Sent as JSON text. */
  json?: unknown;
  /** Content-Type to send; default application/json for bodies, none when null. */
  contentType?: string | null;
  status: number;
  code: string;
  /** For validation failures: a path that must appear among `errors`. */
  errorPath?: string;
  /** And a word the message for it must contain. */
  errorMessage?: RegExp;
  /** A request to a route openapi.yaml does not document at all. */
  undocumentedRoute?: boolean;
}

async function send(c: Case, requestId = REQUEST_ID): Promise<CallResult> {
  const headers: Record<string, string> = { 'x-request-id': requestId };
  const body = c.raw ?? (c.json !== undefined ? JSON.stringify(c.json) : undefined);
  if (body !== undefined && c.contentType !== null) headers['content-type'] = c.contentType ?? 'application/json';
  const path = typeof c.path === 'function' ? c.path() : c.path;
  return app.call(c.method, path, { token, headers, skipOpenApiCheck: c.undocumentedRoute === true, ...(body !== undefined ? { rawBody: body } : {}) });
}

/** Everything the user holds, superseded included: a rejected write must leave it as it was. */
async function snapshot(): Promise<string> {
  const res = await app.call('GET', '/memories?limit=100&include_superseded=true', { token });
  expect(res.status).toBe(200);
  return JSON.stringify(res.body.memories);
}

function expectProblem(res: CallResult, c: Pick<Case, 'status' | 'code' | 'errorPath' | 'errorMessage'>, requestId = REQUEST_ID): void {
  expect(res.status).not.toBe(500);
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: c.status, code: c.code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.headers.get('x-request-id')).toBe(requestId);
  expect(res.body).toMatchObject({
    type: expect.any(String),
    title: expect.any(String),
    status: c.status,
    detail: expect.any(String),
    code: c.code,
    request_id: requestId,
  });
  const text = JSON.stringify(res.body);
  expect(text).not.toMatch(/\bat .+:\d+:\d+|node_modules|\.ts:\d+/);
  if (c.errorPath !== undefined) {
    expect(Array.isArray(res.body.errors)).toBe(true);
    const entry = (res.body.errors as Array<{ path: string; message: string }>).find((e) => e.path === c.errorPath);
    expect(entry, `an error at ${c.errorPath} in ${JSON.stringify(res.body.errors)}`).toBeDefined();
    if (c.errorMessage) expect(entry!.message).toMatch(c.errorMessage);
  }
}

beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant, user: 'alice' });
  const res = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice keeps a diary' }, { content: 'Alice rides a tandem' }] } });
  expect(res.status).toBe(201);
  memoryId = res.body.memories[0].id;
});
afterAll(() => app.close());

const one = (content: unknown, extra: Record<string, unknown> = {}) => ({ memories: [{ content, ...extra }] });
const utf8 = (parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));
const patchPath = () => `/memories/${memoryId}`;

const writes: Case[] = [
  // Syntax and encoding
  { name: 'malformed JSON', method: 'POST', path: '/memories', raw: '{"memories": [', status: 400, code: 'malformed_json' },
  { name: 'trailing garbage after JSON', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"x"}]} trailing', status: 400, code: 'malformed_json' },
  { name: 'an empty body', method: 'POST', path: '/memories', raw: '', status: 400, code: 'malformed_json' },
  { name: 'a raw control character inside a string', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"a\u0001b"}]}', status: 400, code: 'malformed_json' },
  { name: 'malformed JSON on PATCH', method: 'PATCH', path: patchPath, raw: '{content: "x"}', status: 400, code: 'malformed_json' },
  { name: 'malformed JSON on delete', method: 'POST', path: '/memories/delete', raw: '{"memory_ids": [}', status: 400, code: 'malformed_json' },
  { name: 'invalid UTF-8 bytes', method: 'POST', path: '/memories', raw: utf8(['{"memories":[{"content":"caf', [0xc3, 0x28], '"}]}']), status: 400, code: 'malformed_json' },
  { name: 'an overlong UTF-8 encoding', method: 'POST', path: '/memories', raw: utf8(['{"memories":[{"content":"', [0xc0, 0xaf], '"}]}']), status: 400, code: 'malformed_json' },
  { name: 'a raw surrogate encoded as UTF-8 (CESU)', method: 'POST', path: '/memories', raw: utf8(['{"memories":[{"content":"', [0xed, 0xa0, 0x80], '"}]}']), status: 400, code: 'malformed_json' },
  // Content type
  { name: 'text/plain', method: 'POST', path: '/memories', json: one('x'), contentType: 'text/plain', status: 415, code: 'unsupported_media_type' },
  { name: 'no content type', method: 'POST', path: '/memories', json: one('x'), contentType: null, status: 415, code: 'unsupported_media_type' },
  { name: 'a form body', method: 'POST', path: '/memories', raw: 'content=x', contentType: 'application/x-www-form-urlencoded', status: 415, code: 'unsupported_media_type' },
  { name: 'a media type parameter with no value', method: 'POST', path: '/memories', json: one('x'), contentType: 'application/json;charset', status: 415, code: 'unsupported_media_type' },
  { name: 'an empty media type parameter', method: 'POST', path: '/memories/recall', json: { query: 'diary' }, contentType: 'application/json; ;;;=', status: 415, code: 'unsupported_media_type' },
  { name: 'a +json type the route validator does not read', method: 'POST', path: '/memories', json: one('x'), contentType: 'application/vnd.v2+json', status: 415, code: 'unsupported_media_type' },
  { name: 'a charset other than UTF-8', method: 'POST', path: '/memories', json: one('x'), contentType: 'application/json; charset=utf-16', status: 415, code: 'unsupported_media_type' },
  { name: 'text/plain on PATCH', method: 'PATCH', path: patchPath, json: { content: 'x' }, contentType: 'text/plain', status: 415, code: 'unsupported_media_type' },
  // Characters that cannot be stored
  { name: 'a NUL in content', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"a\\u0000b"}]}', status: 400, code: 'validation_failed', errorPath: '/memories/0/content', errorMessage: /NUL/ },
  { name: 'a NUL in a metadata key', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"ok","metadata":{"k\\u0000":1}}]}', status: 400, code: 'validation_failed' },
  { name: 'a NUL in a nested metadata value', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"ok","metadata":{"a":[{"b":"\\u0000"}]}}]}', status: 400, code: 'validation_failed', errorPath: '/memories/0/metadata/a/0/b' },
  { name: 'a NUL in user_id', method: 'POST', path: '/memories', raw: '{"user_id":"alice\\u0000","memories":[{"content":"ok"}]}', status: 400, code: 'validation_failed', errorPath: '/user_id' },
  { name: 'a lone high surrogate', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"a\\ud800b"}]}', status: 400, code: 'validation_failed', errorPath: '/memories/0/content', errorMessage: /surrogate/ },
  { name: 'a lone low surrogate', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"\\udc00"}]}', status: 400, code: 'validation_failed', errorPath: '/memories/0/content' },
  { name: 'a lone surrogate in metadata', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"ok","metadata":{"k":"\\ud83d"}}]}', status: 400, code: 'validation_failed' },
  { name: 'a NUL in PATCH content', method: 'PATCH', path: patchPath, raw: '{"content":"x\\u0000"}', status: 400, code: 'validation_failed', errorPath: '/content' },
  // Size
  { name: 'a 2 MiB body', method: 'POST', path: '/memories', json: one('x'.repeat(2 * 1024 * 1024)), status: 413, code: 'payload_too_large' },
  { name: 'a 2 MiB body of text/plain', method: 'POST', path: '/memories', json: one('x'.repeat(2 * 1024 * 1024)), contentType: 'text/plain', status: 413, code: 'payload_too_large' },
  // Shape
  { name: 'a JSON array body', method: 'POST', path: '/memories', json: [{ content: 'x' }], status: 400, code: 'validation_failed' },
  { name: 'a JSON null body', method: 'POST', path: '/memories', raw: 'null', status: 400, code: 'validation_failed' },
  { name: 'a JSON string body', method: 'POST', path: '/memories', raw: '"x"', status: 400, code: 'validation_failed' },
  { name: 'an unknown top-level field', method: 'POST', path: '/memories', json: { ...one('x'), colour: 'red' }, status: 400, code: 'validation_failed', errorPath: '/colour', errorMessage: /unknown/ },
  { name: 'an unknown field in a memory', method: 'POST', path: '/memories', json: one('x', { pinned: true }), status: 400, code: 'validation_failed', errorPath: '/memories/0/pinned', errorMessage: /unknown/ },
  { name: 'an unknown field on PATCH', method: 'PATCH', path: patchPath, json: { content: 'x', pinned: true }, status: 400, code: 'validation_failed', errorPath: '/pinned' },
  { name: 'an unknown field on delete', method: 'POST', path: '/memories/delete', json: { everything: true }, status: 400, code: 'validation_failed', errorPath: '/everything' },
  { name: 'importance 0', method: 'POST', path: '/memories', json: one('x', { importance: 0 }), status: 400, code: 'validation_failed', errorPath: '/memories/0/importance' },
  { name: 'importance 11', method: 'POST', path: '/memories', json: one('x', { importance: 11 }), status: 400, code: 'validation_failed', errorPath: '/memories/0/importance' },
  { name: 'importance 5.5', method: 'POST', path: '/memories', json: one('x', { importance: 5.5 }), status: 400, code: 'validation_failed', errorPath: '/memories/0/importance' },
  { name: 'importance "5"', method: 'POST', path: '/memories', json: one('x', { importance: '5' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/importance' },
  { name: 'importance 1e400 (Infinity)', method: 'POST', path: '/memories', raw: '{"memories":[{"content":"x","importance":1e400}]}', status: 400, code: 'validation_failed' },
  { name: 'importance 11 on PATCH', method: 'PATCH', path: patchPath, json: { importance: 11 }, status: 400, code: 'validation_failed', errorPath: '/importance' },
  { name: 'an empty PATCH', method: 'PATCH', path: patchPath, json: {}, status: 400, code: 'validation_failed' },
  { name: 'an empty memories array', method: 'POST', path: '/memories', json: { memories: [] }, status: 400, code: 'validation_failed', errorPath: '/memories' },
  { name: '1001 memories', method: 'POST', path: '/memories', json: { memories: Array.from({ length: 1001 }, (_, i) => ({ content: `m${i}` })) }, status: 400, code: 'validation_failed', errorPath: '/memories' },
  { name: 'no memories field', method: 'POST', path: '/memories', json: {}, status: 400, code: 'validation_failed', errorPath: '/memories' },
  { name: 'empty content', method: 'POST', path: '/memories', json: one('   '), status: 400, code: 'validation_failed', errorPath: '/memories/0/content' },
  { name: 'content over 10,000 characters', method: 'POST', path: '/memories', json: one('x'.repeat(10_001)), status: 400, code: 'validation_failed', errorPath: '/memories/0/content' },
  { name: 'content that is not a string', method: 'POST', path: '/memories', json: one({ text: 'x' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/content' },
  { name: 'occurred_at that is not a date', method: 'POST', path: '/memories', json: one('x', { occurred_at: 'yesterday' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/occurred_at' },
  { name: 'occurred_at on a day that does not exist', method: 'POST', path: '/memories', json: one('x', { occurred_at: '2024-02-30T10:00:00Z' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/occurred_at' },
  { name: 'occurred_at in year 0', method: 'POST', path: '/memories', json: one('x', { occurred_at: '0000-01-01T00:00:00Z' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/occurred_at' },
  { name: 'occurred_at in year 1 that is year 0 in UTC', method: 'POST', path: '/memories', json: one('x', { occurred_at: '0001-01-01T00:00:00+01:00' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/occurred_at' },
  { name: 'expires_at in year 0', method: 'POST', path: '/memories', json: one('x', { expires_at: '0000-12-31T23:59:59Z' }), status: 400, code: 'validation_failed', errorPath: '/memories/0/expires_at' },
  {
    name: 'a metadata key named __proto__ (refused, not silently dropped)',
    method: 'POST',
    path: '/memories',
    raw: '{"memories":[{"content":"Alice proto probe","metadata":{"__proto__":{"polluted":true}}}]}',
    status: 400,
    code: 'validation_failed',
    errorPath: '/memories/0/metadata/__proto__',
  },
  { name: 'memory_ids with a non-UUID', method: 'POST', path: '/memories/delete', json: { memory_ids: ['not-a-uuid'] }, status: 400, code: 'validation_failed', errorPath: '/memory_ids/0' },
  { name: 'an empty memory_ids', method: 'POST', path: '/memories/delete', json: { memory_ids: [] }, status: 400, code: 'validation_failed', errorPath: '/memory_ids' },
  {
    name: 'deeply nested metadata',
    method: 'POST',
    path: '/memories',
    raw: `{"memories":[{"content":"deep","metadata":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}]}`,
    status: 400,
    code: 'validation_failed',
    errorMessage: /nested/,
  },
  {
    name: 'deeply nested arrays at the top level',
    method: 'POST',
    path: '/memories/recall',
    raw: `{"query":"x","filters":{"metadata":{"k":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`,
    status: 400,
    code: 'validation_failed',
  },
];

describe('rejected writes: the right problem, and nothing written', () => {
  it.each(writes.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = await snapshot();
    const res = await send(c);
    expectProblem(res, c);
    expect(await snapshot()).toBe(before);
  });
});

const reads: Case[] = [
  { name: 'recall limit 0', method: 'POST', path: '/memories/recall', json: { query: 'diary', limit: 0 }, status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'recall limit 101', method: 'POST', path: '/memories/recall', json: { query: 'diary', limit: 101 }, status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'list limit 0', method: 'GET', path: '/memories?limit=0', status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'list limit 101', method: 'GET', path: '/memories?limit=101', status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'list limit abc', method: 'GET', path: '/memories?limit=abc', status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'list limit 1.5', method: 'GET', path: '/memories?limit=1.5', status: 400, code: 'validation_failed', errorPath: '/limit' },
  { name: 'an unknown query parameter', method: 'GET', path: '/memories?sort=asc', status: 400, code: 'validation_failed', errorPath: '/sort' },
  { name: 'include_superseded=maybe', method: 'GET', path: '/memories?include_superseded=maybe', status: 400, code: 'validation_failed', errorPath: '/include_superseded' },
  { name: 'a NUL in a query parameter', method: 'GET', path: '/memories?user_id=al%00ice', status: 400, code: 'validation_failed', errorPath: '/user_id' },
  { name: 'an invalid cursor', method: 'GET', path: '/memories?cursor=abc', status: 400, code: 'validation_failed', errorPath: '/cursor' },
  { name: 'a cursor of valid base64 and JSON but not ours', method: 'GET', path: `/memories?cursor=${Buffer.from('{"a":1}').toString('base64url')}`, status: 400, code: 'validation_failed', errorPath: '/cursor' },
  { name: 'a cursor with a bad date', method: 'GET', path: `/memories?cursor=${Buffer.from(JSON.stringify(['not a date', '00000000-0000-4000-8000-000000000000'])).toString('base64url')}`, status: 400, code: 'validation_failed', errorPath: '/cursor' },
  { name: 'a very long cursor', method: 'GET', path: `/memories?cursor=${'A'.repeat(5000)}`, status: 400, code: 'validation_failed', errorPath: '/cursor' },
  { name: 'recall without a query', method: 'POST', path: '/memories/recall', json: {}, status: 400, code: 'validation_failed', errorPath: '/query' },
  { name: 'recall with a blank query', method: 'POST', path: '/memories/recall', json: { query: '   ' }, status: 400, code: 'validation_failed', errorPath: '/query' },
  { name: 'recall with a query over 8000 characters', method: 'POST', path: '/memories/recall', json: { query: 'x'.repeat(8001) }, status: 400, code: 'validation_failed', errorPath: '/query' },
  { name: 'recall with a NUL in the query', method: 'POST', path: '/memories/recall', raw: '{"query":"dia\\u0000ry"}', status: 400, code: 'validation_failed', errorPath: '/query' },
  { name: 'recall with a lone surrogate in the query', method: 'POST', path: '/memories/recall', raw: '{"query":"\\ud800"}', status: 400, code: 'validation_failed', errorPath: '/query' },
  { name: 'recall with an unknown field', method: 'POST', path: '/memories/recall', json: { query: 'diary', top_k: 3 }, status: 400, code: 'validation_failed', errorPath: '/top_k' },
  { name: 'recall with an unknown filter', method: 'POST', path: '/memories/recall', json: { query: 'diary', filters: { mood: 'happy' } }, status: 400, code: 'validation_failed', errorPath: '/filters/mood' },
  { name: 'recall with an invalid as_of', method: 'POST', path: '/memories/recall', json: { query: 'diary', as_of: 'last week' }, status: 400, code: 'validation_failed', errorPath: '/as_of' },
  { name: 'recall with as_of in year 0', method: 'POST', path: '/memories/recall', json: { query: 'diary', as_of: '0000-06-01T00:00:00Z' }, status: 400, code: 'validation_failed', errorPath: '/as_of' },
  { name: 'recall with a zero half-life', method: 'POST', path: '/memories/recall', json: { query: 'diary', recency_half_life_hours: 0 }, status: 400, code: 'validation_failed', errorPath: '/recency_half_life_hours' },
  { name: 'recall as text/plain', method: 'POST', path: '/memories/recall', json: { query: 'diary' }, contentType: 'text/plain', status: 415, code: 'unsupported_media_type' },
  { name: 'malformed JSON on recall', method: 'POST', path: '/memories/recall', raw: '{"query": "diary",}', status: 400, code: 'malformed_json' },
  { name: 'a non-UUID id on GET', method: 'GET', path: '/memories/not-a-uuid', status: 404, code: 'not_found' },
  { name: 'a non-UUID id on history', method: 'GET', path: '/memories/12345/history', status: 404, code: 'not_found' },
  { name: 'a non-UUID id on DELETE', method: 'DELETE', path: '/memories/%00', status: 404, code: 'not_found' },
  { name: 'a non-UUID id on PATCH', method: 'PATCH', path: "/memories/1'%20or%20'1'='1", json: { importance: 3 }, status: 404, code: 'not_found' },
  { name: 'a UUID that does not exist', method: 'GET', path: '/memories/00000000-0000-4000-8000-000000000000', status: 404, code: 'not_found' },
  { name: 'an unknown route', method: 'GET', path: '/memories/a/b/c', status: 404, code: 'not_found', undocumentedRoute: true },
];

describe('rejected reads', () => {
  it.each(reads.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = await snapshot();
    expectProblem(await send(c), c);
    expect(await snapshot()).toBe(before);
  });
});

describe('validation messages', () => {
  it('an unparsable date-time gets the format error alone, not also the earliest-date one', async () => {
    const res = await send({ name: '', method: 'POST', path: '/memories/recall', json: { query: 'diary', as_of: 'yesterday' }, status: 400, code: 'validation_failed' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: '/as_of', message: expect.stringMatching(/ISO 8601/) }]);
    const year0 = await send({ name: '', method: 'POST', path: '/memories/recall', json: { query: 'diary', as_of: '0000-06-01T00:00:00Z' }, status: 400, code: 'validation_failed' });
    expect(year0.body.errors).toEqual([{ path: '/as_of', message: expect.stringMatching(/0001-01-01/) }]);
  });

  it('a recall with several faults hears of all of them at once, the weights included', async () => {
    const res = await send({ name: '', method: 'POST', path: '/memories/recall', json: { query: '', limit: 0, weights: { recency: -1 }, as_of: 'yesterday' }, status: 400, code: 'validation_failed' });
    expect(res.status).toBe(400);
    const paths = new Set((res.body.errors as Array<{ path: string }>).map((e) => e.path));
    expect([...paths].sort()).toEqual(['/as_of', '/limit', '/query', '/weights/recency']);
    const zero = await send({ name: '', method: 'POST', path: '/memories/recall', json: { query: 'diary', limit: 0, weights: { recency: 0 } }, status: 400, code: 'validation_failed' });
    expect((zero.body.errors as Array<{ path: string }>).map((e) => e.path).sort()).toEqual(['/limit', '/weights']);
  });

  it('a body of the wrong type names no path in the detail, as its error has the path ""', async () => {
    const res = await send({ name: '', method: 'POST', path: '/memories/recall', json: [], status: 400, code: 'validation_failed' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('');
    expect(res.body.detail).toMatch(/is not valid: [^/]/);
    const field = await send({ name: '', method: 'POST', path: '/memories/recall', json: { query: 'diary', limit: 0 }, status: 400, code: 'validation_failed' });
    expect(field.body.detail).toMatch(/is not valid: \/limit /);
  });
});

describe('request ids', () => {
  it('a sane X-Request-Id is echoed in the header and the problem body', async () => {
    const res = await send({ name: '', method: 'POST', path: '/memories', raw: '{', status: 400, code: 'malformed_json' }, 'trace-abc.42');
    expectProblem(res, { status: 400, code: 'malformed_json' }, 'trace-abc.42');
  });

  it('an insane X-Request-Id is replaced by a generated one, the same in header and body', async () => {
    const res = await app.call('POST', '/memories', { token, rawBody: '{', headers: { 'content-type': 'application/json', 'x-request-id': 'bad id with spaces <script>' } });
    expect(res.status).toBe(400);
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.request_id).toBe(id);
  });

  it('a successful answer carries an X-Request-Id too', async () => {
    const res = await app.call('GET', '/memories', { token, headers: { 'x-request-id': REQUEST_ID } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(REQUEST_ID);
    const generated = await app.call('GET', '/memories', { token });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('odd but valid input is not an error', () => {
  it('a recall query of punctuation only answers 200', async () => {
    for (const query of ['???', '!!! &&& |||', '"', "'", ':*', '\\']) {
      const res = await app.call('POST', '/memories/recall', { token, body: { query } });
      expect({ query, status: res.status }).toEqual({ query, status: 200 });
    }
  });

  it('metadata keys named constructor and prototype are stored as given, and nothing is polluted', async () => {
    const res = await app.call('POST', '/memories', {
      token,
      rawBody: '{"memories":[{"content":"Alice constructor probe","metadata":{"constructor":{"prototype":{"polluted":true}},"toString":"x"}}]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect(res.body.memories[0].metadata).toEqual({ constructor: { prototype: { polluted: true } }, toString: 'x' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await app.call('DELETE', `/memories/${res.body.memories[0].id}`, { token });
  });

  it('nesting up to the limit is accepted', async () => {
    const depth = 50; // plus the four levels of the body around the metadata
    const res = await app.call('POST', '/memories', {
      token,
      rawBody: `{"memories":[{"content":"Alice nested probe","metadata":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}]}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(201);
    await app.call('DELETE', `/memories/${res.body.memories[0].id}`, { token });
  });

  it('a body exactly at the default limit is not refused for its size', async () => {
    const limit = 1_048_576;
    const frame = JSON.stringify(one(''));
    // Pad with memories of the same content so it stays under 10,000 characters each.
    const padding = 'y'.repeat(9_000);
    const count = Math.floor((limit - frame.length) / (padding.length + 20));
    const memories = Array.from({ length: count }, (_, i) => ({ content: `${i} ${padding}` }));
    const text = JSON.stringify({ memories });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limit);
    const res = await app.call('POST', '/memories', { token, rawBody: text, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
    // Clean up so the snapshots of other tests stay small.
    const ids = res.body.memories.map((m: { id: string }) => m.id);
    expect((await app.call('POST', '/memories/delete', { token, body: { memory_ids: ids } })).body.deleted).toBe(ids.length);
  });
});

/**
 * HTTP as clients expect it: a known path asked with a method it does not have is a 405 naming
 * the methods it has (never a 404, never read as an id), and HEAD is answered wherever GET is.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

let app: TestApp;
let token: string;
beforeAll(async () => {
  app = await startTestApp();
  token = await tokenFor({ tenant: uniqueTenant('methods'), user: 'alice' });
});
afterAll(() => app?.close());

describe('405 Method Not Allowed', () => {
  it.each([
    ['GET', '/memories/recall', 'POST'],
    ['GET', '/memories/extract', 'POST'],
    ['PUT', '/memories/delete', 'POST'],
    ['DELETE', '/memories', 'GET, HEAD, POST'],
    ['POST', `/memories/${randomUUID()}`, 'DELETE, GET, HEAD, PATCH'],
    ['PUT', `/memories/${randomUUID()}/history`, 'GET, HEAD'],
    ['DELETE', `/jobs/${randomUUID()}`, 'GET, HEAD'],
    ['POST', '/healthz', 'GET, HEAD'],
  ])('%s %s answers 405 with Allow: %s', async (method, path, allow) => {
    const res = await app.call(method, path, { token });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 405, code: 'method_not_allowed', request_id: res.headers.get('x-request-id') });
  });

  it('still answers 404 for a path nothing declares, and for an unknown id with the right method', async () => {
    expect((await app.call('GET', '/no/such/path', { token, skipOpenApiCheck: true })).status).toBe(404);
    expect((await app.call('GET', `/memories/${randomUUID()}`, { token })).status).toBe(404);
  });

  it('does not need a token to say which methods a path has', async () => {
    const res = await app.call('GET', '/memories/recall');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe('HEAD', () => {
  it('answers HEAD wherever GET is, with the GET status and headers and no body', async () => {
    const added = await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice keeps bees' }] } });
    const id = added.body.memories[0].id as string;
    for (const path of ['/healthz', '/openapi.json', '/docs', '/memories', `/memories/${id}`, `/memories/${id}/history`]) {
      const get = await app.call('GET', path, { token });
      const head = await app.call('HEAD', path, { token });
      expect(head.status, path).toBe(get.status);
      expect(head.headers.get('content-type'), path).toBe(get.headers.get('content-type'));
      expect(head.body, path).toBe('');
    }
    const missing = await app.call('HEAD', `/memories/${randomUUID()}`, { token });
    expect(missing.status).toBe(404);
    expect((await app.call('HEAD', '/memories')).status).toBe(401);
  });
});

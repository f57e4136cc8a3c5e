import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHttp } from '../../src/http/serve.js';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';
import { rawHttp as rawHttpTo } from '../support/process.js';

/**
 * The app as main.ts serves it over node:http: requests that never reach Hono (refused by Node's
 * HTTP parser or by the adapter) still get problem+json with a request id, not an empty 400.
 */

let app: TestApp;
let server: Server;
let port: number;
const rawHttp = (request: string) => rawHttpTo(port, request);

beforeAll(async () => {
  app = await startTestApp();
  await new Promise<void>((resolve) => {
    server = serveHttp({ fetch: app.runtime.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      port = info.port;
      resolve();
    });
  });
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await app.close();
});

describe('answers the HTTP layer gives before the app', () => {
  it.each([
    ['a line that is not a header', 'GET /memories HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n'],
    ['a request line that is not HTTP', 'NONSENSE\r\n\r\n'],
    ['an HTTP/1.1 request without Host', 'GET /memories HTTP/1.1\r\n\r\n'],
    ['a backslash in the path', 'GET /a\\b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    ['a Host that is no host name', 'GET /memories HTTP/1.1\r\nHost: not a host\r\n\r\n'],
  ])('%s: problem+json 400, and the connection closes', async (_name, request) => {
    const answer = await rawHttp(request);
    expect(answer.status).toBe(400);
    expect(answer.headers).toContain('content-type: application/problem+json');
    expect(answer.headers).toContain('connection: close');
    const body = JSON.parse(answer.body);
    expect(body).toMatchObject({ status: 400, code: 'validation_failed', title: expect.any(String), detail: expect.any(String) });
    expect(answer.headers).toContain(`x-request-id: ${body.request_id}`);
  });

  it('over-long headers: problem+json 431', async () => {
    const answer = await rawHttp(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.headers).toContain('content-type: application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 431 });
  });

  it('still serves well-formed requests, HTTP/1.0 without Host included (load balancers\' health checks)', async () => {
    expect((await rawHttp('GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
    const token = await tokenFor({ tenant: uniqueTenant('http'), user: 'alice' });
    const res = await fetch(`http://127.0.0.1:${port}/memories`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ memories: [], next_cursor: null });
  });
});

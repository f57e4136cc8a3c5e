import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * Over a real listening server and Node's fetch, whose default dispatcher is undici's keep-alive
 * Agent: an answer given before the request's body was read must not cost the client its next
 * requests on the same connection pool (issue 11, defect 7).
 */
let app: TestApp;
let server: ServerType;
let base: string;
let token: string;

beforeAll(async () => {
  app = await startTestApp();
  server = serve({ fetch: app.runtime.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  token = await tokenFor({ tenant: uniqueTenant('keepalive'), user: 'alice' });
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await app.close();
});

const json = { 'content-type': 'application/json' };

/** A small request and a normal one after the refused one: both must arrive and succeed. */
async function nextRequestsSucceed(): Promise<void> {
  const small = await fetch(`${base}/healthz`);
  expect(small.status).toBe(200);
  await small.text();
  const normal = await fetch(`${base}/memories`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${token}` },
    body: JSON.stringify({ memories: [{ content: `Alice keeps connection ${Math.random()}` }] }),
  });
  expect(normal.status).toBe(201);
  await normal.text();
}

describe('answers given before the body was read', () => {
  it('a 413 for a 2 MiB body closes the connection, and the next two requests succeed', async () => {
    const res = await fetch(`${base}/memories`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ memories: [{ content: 'x'.repeat(2 * 1024 * 1024) }] }),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    await res.text();
    await nextRequestsSucceed();
    expect(res.headers.get('connection')).toBe('close');
  });

  it('a 401 before a large body is read closes the connection, and the next two requests succeed', async () => {
    const res = await fetch(`${base}/memories`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ memories: [{ content: 'y'.repeat(900 * 1024) }] }),
    });
    expect(res.status).toBe(401);
    await res.text();
    await nextRequestsSucceed();
    expect(res.headers.get('connection')).toBe('close');
  });

  it('a 415 before a large body is read closes the connection, and the next two requests succeed', async () => {
    const res = await fetch(`${base}/memories`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${token}` },
      body: 'z'.repeat(900 * 1024),
    });
    expect(res.status).toBe(415);
    await res.text();
    await nextRequestsSucceed();
    expect(res.headers.get('connection')).toBe('close');
  });

  it('keeps the connection open when the body was read', async () => {
    const res = await fetch(`${base}/memories`, {
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${token}` },
      body: JSON.stringify({ memories: [{ content: 'Alice reads every body' }] }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('connection')).not.toBe('close');
    await res.text();
  });
});

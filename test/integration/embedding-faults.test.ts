import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

/**
 * An OpenAI-compatible embedding endpoint that fails in the ways a real one does, behind the API:
 * each failure is answered as the provider's (503 problem+json, never 500 and never "the
 * database"), nothing is stored, and the next request after it recovers succeeds.
 */
type Mode = 'ok' | 'unauthorized' | 'garbage' | 'reset' | 'too-long' | 'null' | 'null-item';
let mode: Mode = 'ok';
let server: Server;
let port = 0;
let app: TestApp;
let token: string;

function listen(): Promise<void> {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (mode === 'reset') return req.socket.destroy();
      if (mode === 'unauthorized') {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}');
      }
      if (mode === 'too-long') {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(`{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens","type":"invalid_request_error"}}`);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      if (mode === 'garbage') return res.end('{"object":"list","data":[');
      if (mode === 'null') return res.end('null');
      if (mode === 'null-item') return res.end('{"object":"list","data":[null],"usage":{"prompt_tokens":1,"total_tokens":1}}');
      const inputs = (JSON.parse(body) as { input: string[] }).input;
      const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: Array.from({ length: 8 }, (_, i) => (i === text.length % 8 ? 1 : 0.1)) }));
      res.end(JSON.stringify({ object: 'list', data, usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
}

function stop(): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

beforeAll(async () => {
  await listen();
  port = (server.address() as AddressInfo).port;
  app = await startTestApp(
    { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: 'k', EMBEDDINGS: 'openai', EMBEDDING_DIMENSIONS: '8', LLM_TIMEOUT_MS: '3000' },
    { isolated: true },
  );
  token = await tokenFor({ tenant: uniqueTenant('embfault'), user: 'u' });
});

afterAll(async () => {
  await app?.close();
  if (server.listening) await stop();
});

const add = (content: string) => app.call('POST', '/memories', { token, body: { memories: [{ content }] } });
const stored = async () => ((await app.call('GET', '/memories', { token })).body as { memories: Array<{ content: string }> }).memories.map((m) => m.content);

function expectProviderProblem(res: { status: number; headers: Headers; body: { detail?: string } }, detail: RegExp): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.detail).toMatch(detail);
  expect(res.body.detail).not.toMatch(/database/);
}

describe('an embedding endpoint that fails', () => {
  it('is answered as the provider, not the database, when it refuses connections', async () => {
    expect((await add('first, while it works')).status).toBe(201);
    await stop();
    expectProviderProblem(await add('while it is down'), /embedding provider is unavailable/);
    await listen();
    expect((await add('once it is back')).status).toBe(201);
    expect(await stored()).not.toContain('while it is down');
  });

  it('is answered as the provider when it drops the connection without an answer', async () => {
    mode = 'reset';
    expectProviderProblem(await add('while it resets'), /embedding provider is unavailable/);
    const recall = await app.call('POST', '/memories/recall', { token, body: { query: 'a query not asked before' } });
    expectProviderProblem(recall, /embedding provider is unavailable/);
    mode = 'ok';
  });

  it('says the provider refused the request when it rejects the key', async () => {
    mode = 'unauthorized';
    expectProviderProblem(await add('with a rejected key'), /embedding provider refused the request/);
    mode = 'ok';
  });

  it('is answered as the provider when the answer is not JSON', async () => {
    mode = 'garbage';
    expectProviderProblem(await add('with a broken answer'), /embedding provider is unavailable/);
    mode = 'ok';
    expect((await add('after the broken answer')).status).toBe(201);
  });

  it('is answered as the provider when the answer is JSON of another shape', async () => {
    mode = 'null';
    expectProviderProblem(await add('answered with null'), /embedding provider is unavailable/);
    mode = 'null-item';
    expectProviderProblem(await add('answered with a null item'), /embedding provider is unavailable/);
    mode = 'ok';
  });

  it("is the client's mistake when a text is longer than the model takes", async () => {
    mode = 'too-long';
    const res = await add('a text the model finds too long');
    mode = 'ok';
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.detail).toMatch(/longer than the embedding model accepts/);
    const contents = await stored();
    for (const failed of ['while it resets', 'with a rejected key', 'with a broken answer', 'answered with null', 'answered with a null item', 'a text the model finds too long']) {
      expect(contents).not.toContain(failed);
    }
  });
});

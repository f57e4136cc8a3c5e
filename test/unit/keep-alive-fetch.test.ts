import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKeepAliveFetch } from '../../src/llm/keep-alive-fetch.js';

/** The OpenAI client's fetch (src/llm/keep-alive-fetch.ts) against a real local HTTP server. */
type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
let connections: Socket[] = [];
let received: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string; socket: Socket }> = [];

const echo: Handler = (req, body, res) => {
  res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req-1' });
  res.end(JSON.stringify({ method: req.method, body }));
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, socket: req.socket });
      handler(req, body, res);
    });
  });
  server.on('connection', (socket: Socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

afterEach(() => {
  handler = echo;
  received = [];
  connections = [];
  server.closeAllConnections();
});

describe('keep-alive fetch', () => {
  it('sends the method, headers and body, answers a Response, and keeps one connection', async () => {
    handler = echo;
    const keepAliveFetch = createKeepAliveFetch();
    const body = JSON.stringify({ input: ['é ünïcode'] });
    for (let i = 0; i < 3; i++) {
      const response = await keepAliveFetch(`${base}/v1/embeddings?x=1`, {
        method: 'post',
        headers: new Headers({ authorization: 'Bearer k', 'content-type': 'application/json' }),
        body,
      });
      expect(response.status).toBe(201);
      expect(response.ok).toBe(true);
      expect(response.headers.get('x-request-id')).toBe('req-1');
      expect(await response.json()).toEqual({ method: 'POST', body });
    }
    expect(received.map((r) => r.url)).toEqual(['/v1/embeddings?x=1', '/v1/embeddings?x=1', '/v1/embeddings?x=1']);
    expect(received[0]!.headers.authorization).toBe('Bearer k');
    expect(received[0]!.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(connections).toHaveLength(1);
  });

  it('answers an error status as a Response, not a rejection', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end('{"error":{"message":"slow down"}}');
    };
    const response = await createKeepAliveFetch()(`${base}/v1/embeddings`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(429);
    expect(response.ok).toBe(false);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.text()).toBe('{"error":{"message":"slow down"}}');
  });

  it('rejects with an AbortError when the signal aborts, and closes the connection', async () => {
    handler = () => undefined; // never answers
    const controller = new AbortController();
    const pending = createKeepAliveFetch()(`${base}/v1/embeddings`, { method: 'POST', body: '{}', signal: controller.signal });
    await waitFor(() => received.length === 1);
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect((error as Error).name).toBe('AbortError');
    await waitFor(() => received[0]!.socket.destroyed);
  });

  it('rejects at once when the signal has already aborted', async () => {
    const error = await createKeepAliveFetch()(`${base}/x`, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect((error as Error).name).toBe('AbortError');
    expect(received).toHaveLength(0);
  });

  it('sends again, once, on a fresh connection when a kept-alive one turns out closed', async () => {
    const keepAliveFetch = createKeepAliveFetch();
    expect((await keepAliveFetch(`${base}/a`, { method: 'POST', body: '1' })).status).toBe(201);
    // The server drops the idle connection the moment the next request arrives on it, unanswered.
    handler = (req, body, res) => (req.socket === connections[0] ? req.socket.destroy() : echo(req, body, res));
    const response = await keepAliveFetch(`${base}/b`, { method: 'POST', body: '2' });
    expect(await response.json()).toEqual({ method: 'POST', body: '2' });
    expect(connections).toHaveLength(2);
    expect(received.map((r) => r.body)).toEqual(['1', '2', '2']);
  });

  it('does not send again when a fresh connection fails', async () => {
    handler = (req) => req.socket.destroy();
    const error = await createKeepAliveFetch()(`${base}/a`, { method: 'POST', body: '1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(received).toHaveLength(1);
  });

  it('rejects when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await createKeepAliveFetch()(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });

  it('decodes a gzip answer and drops the encoding headers', async () => {
    const payload = JSON.stringify({ data: Array.from({ length: 50 }, (_, i) => i) });
    handler = (_req, _body, res) => {
      const zipped = gzipSync(payload);
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': zipped.length });
      res.end(zipped);
    };
    const response = await createKeepAliveFetch()(`${base}/v1/embeddings`, { method: 'POST', body: '{}' });
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(await response.text()).toBe(payload);
  });

  it('hands a streamed body to the global fetch', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('streamed'));
        controller.close();
      },
    });
    const init = { method: 'POST', body: stream, duplex: 'half' } as RequestInit;
    const response = await createKeepAliveFetch()(`${base}/s`, init);
    expect(await response.json()).toEqual({ method: 'POST', body: 'streamed' });
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

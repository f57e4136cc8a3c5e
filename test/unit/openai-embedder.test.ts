import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { createEmbedder } from '../../src/llm/embedders.js';
import { LexicalEmbedder } from '../../src/llm/lexical-embedder.js';
import { OpenAIEmbedder, createOpenAIClient } from '../../src/llm/openai-embedder.js';
import { ProviderOutputError, ProviderRejectedError, ProviderUnavailableError, emptyUsage } from '../../src/llm/types.js';

interface EmbeddingRequest {
  model: string;
  input: string[];
  dimensions?: number;
  encoding_format?: string;
}

type Handler = (body: EmbeddingRequest, res: ServerResponse) => void;

/** A deterministic, deliberately unnormalised vector that encodes the text's length and position. */
function fakeVector(text: string, dims: number): number[] {
  return Array.from({ length: dims }, (_, i) => (i === 0 ? 3 * (text.length + 1) : i === 1 ? 4 : 0));
}

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

const workingHandler: Handler = (body, res) => {
  const dims = body.dimensions ?? 4;
  const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: fakeVector(text, dims) }));
  // Reversed on purpose: clients must place vectors by `index`, not by array position.
  data.reverse();
  const tokens = body.input.reduce((sum, text) => sum + text.split(' ').length, 0);
  sendJson(res, 200, { object: 'list', model: body.model, data, usage: { prompt_tokens: tokens, total_tokens: tokens } });
};

/** A scripted OpenAI-compatible `/v1/embeddings` endpoint on a random local port. */
let server: Server;
let baseURL: string;
let requests: Array<{ path: string; authorization: string | undefined; body: EmbeddingRequest }> = [];
let handler: Handler = workingHandler;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as EmbeddingRequest;
      requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        sendJson(res, 404, { error: { message: 'not found' } });
        return;
      }
      handler(body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

afterEach(() => {
  requests = [];
  handler = workingHandler;
});

/** The client the service builds, so these tests go through its fetch too. */
function client(timeout = 5_000): OpenAI {
  return createOpenAIClient(llmConfig({ apiKey: 'test-key', baseUrl: baseURL, remote: true, timeoutMs: timeout }));
}

describe('OpenAIEmbedder', () => {
  it('batches inputs, keeps their order and sends model and dimensions', async () => {
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4, batchSize: 2 });
    const texts = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
    const vectors = await embedder.embed(texts);

    expect(requests).toHaveLength(3);
    expect(requests.map((r) => r.body.input)).toEqual([['a', 'bb'], ['ccc', 'dddd'], ['eeeee']]);
    for (const { path, body } of requests) {
      expect(path).toBe('/v1/embeddings');
      expect(body.model).toBe('embed-test');
      expect(body.dimensions).toBe(4);
      expect(body.encoding_format).toBe('float');
    }
    expect(vectors).toHaveLength(5);
    // fakeVector(t) normalised is [3(n+1), 4, 0, 0] / sqrt(9(n+1)^2 + 16): distinct per input.
    vectors.forEach((vector, i) => {
      const n = texts[i]!.length + 1;
      const length = Math.sqrt(9 * n * n + 16);
      expect(vector[0]).toBeCloseTo((3 * n) / length, 12);
      expect(vector[1]).toBeCloseTo(4 / length, 12);
    });
  });

  it('returns unit vectors even when the server does not normalise', async () => {
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    const [vector] = await embedder.embed(['hello world']);
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 12);
  });

  it('sends one request when the input fits one batch, none for no input', async () => {
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    await embedder.embed(Array.from({ length: 256 }, (_, i) => `text ${i}`));
    expect(requests).toHaveLength(1);
    expect(await embedder.embed([])).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it('adds HTTP calls and prompt tokens to usage', async () => {
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4, batchSize: 2 });
    const usage = emptyUsage();
    usage.promptTokens = 10;
    await embedder.embed(['one two', 'three', 'four five six'], usage);
    expect(usage).toEqual({ llmCalls: 0, embeddingCalls: 2, promptTokens: 10 + 6, completionTokens: 0 });
  });

  it('names itself after the model', () => {
    expect(new OpenAIEmbedder({ client: client(), model: 'm1', dimensions: 8 }).name).toBe('openai:m1');
  });

  it('rejects vectors of the wrong length as a provider output error', async () => {
    handler = (body, res) =>
      sendJson(res, 200, {
        data: body.input.map((_, index) => ({ object: 'embedding', index, embedding: [1, 2, 3] })),
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(ProviderOutputError);
    await expect(embedder.embed(['x'])).rejects.toThrow(/3 dimensions.*expected 4/);
  });

  it('rejects a response with fewer vectors than inputs', async () => {
    handler = (body, res) =>
      sendJson(res, 200, {
        data: [{ object: 'embedding', index: 0, embedding: [1, 0, 0, 0] }],
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    await expect(embedder.embed(['x', 'y'])).rejects.toBeInstanceOf(ProviderOutputError);
  });

  it('maps a 500 to a retryable ProviderUnavailableError', async () => {
    handler = (_body, res) => sendJson(res, 500, { error: { message: 'upstream exploded', type: 'server_error' } });
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    const error = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).code).toBe('embedding_unavailable');
    expect((error as ProviderUnavailableError).retryable).toBe(true);
    expect(requests).toHaveLength(1); // no retries inside the client
  });

  it('maps a 429 to a retryable ProviderUnavailableError', async () => {
    handler = (_body, res) => sendJson(res, 429, { error: { message: 'slow down', type: 'rate_limit' } });
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    const error = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as Error).message).toMatch(/rate limited/);
  });

  it('rethrows a 400 as a non-retryable error that names the status', async () => {
    handler = (_body, res) => sendJson(res, 400, { error: { message: 'dimensions not supported', type: 'invalid_request_error' } });
    const embedder = new OpenAIEmbedder({ client: client(), model: 'embed-test', dimensions: 4 });
    const error = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRejectedError);
    expect((error as ProviderRejectedError).status).toBe(400);
    expect(error).not.toBeInstanceOf(ProviderUnavailableError);
    expect(error).not.toHaveProperty('retryable', true);
    expect((error as Error).message).toMatch(/HTTP 400/);
    expect((error as Error).message).toMatch(/dimensions not supported/);
  });

  it('maps a timeout to ProviderUnavailableError and says it timed out', async () => {
    handler = (body, res) => setTimeout(() => workingHandler(body, res), 1_000);
    const embedder = new OpenAIEmbedder({ client: client(150), model: 'embed-test', dimensions: 4 });
    const error = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as Error).message).toMatch(/timed out/);
  });

  it('maps an unreachable endpoint to ProviderUnavailableError', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = createOpenAIClient(llmConfig({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}/v1`, remote: true, timeoutMs: 2_000 }));
    const embedder = new OpenAIEmbedder({ client: unreachable, model: 'embed-test', dimensions: 4 });
    const error = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).code).toBe('embedding_unavailable');
  });
});

function llmConfig(overrides: Partial<Config['llm']>): Config['llm'] {
  return {
    apiKey: undefined,
    baseUrl: undefined,
    model: 'chat-test',
    embeddingModel: 'embed-test',
    embeddingDimensions: 4,
    timeoutMs: 5_000,
    remote: false,
    ...overrides,
  };
}

describe('createOpenAIClient', () => {
  it('sends a placeholder key when only a base URL is configured and does not retry', async () => {
    handler = (_body, res) => sendJson(res, 503, { error: { message: 'warming up' } });
    const configured = createOpenAIClient(llmConfig({ baseUrl: baseURL, remote: true }));
    expect(configured.maxRetries).toBe(0);
    expect(configured.timeout).toBe(5_000);
    const embedder = new OpenAIEmbedder({ client: configured, model: 'embed-test', dimensions: 4 });
    await expect(embedder.embed(['x'])).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.authorization).toBe('Bearer not-needed');
  });

  it('sends the configured key', async () => {
    const configured = createOpenAIClient(llmConfig({ apiKey: 'sk-configured', baseUrl: baseURL, remote: true }));
    await new OpenAIEmbedder({ client: configured, model: 'embed-test', dimensions: 4 }).embed(['x']);
    expect(requests[0]!.authorization).toBe('Bearer sk-configured');
  });
});

describe('createEmbedder', () => {
  it('chooses the lexical embedder when no endpoint is configured', async () => {
    const embedder = await createEmbedder(llmConfig({ embeddingDimensions: 32 }));
    expect(embedder).toBeInstanceOf(LexicalEmbedder);
    expect(embedder.dimensions).toBe(32);
  });

  it('chooses the OpenAI embedder over the given client when remote', async () => {
    const embedder = await createEmbedder(llmConfig({ baseUrl: baseURL, remote: true }), client());
    expect(embedder).toBeInstanceOf(OpenAIEmbedder);
    expect(embedder.name).toBe('openai:embed-test');
    await embedder.embed(['x']);
    expect(requests[0]!.authorization).toBe('Bearer test-key');
    expect(requests[0]!.body.dimensions).toBe(4);
  });
});

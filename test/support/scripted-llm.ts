import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EXTRACTION_SCHEMA_NAME } from '../../src/extraction/llm-extractor.js';
import { RESOLUTION_SCHEMA_NAME } from '../../src/extraction/llm-resolver.js';
import { normaliseFactText } from '../../src/extraction/normalise.js';
import { extractHeuristicFacts } from '../../src/extraction/offline-extractor.js';
import type { TranscriptMessage } from '../../src/extraction/types.js';
import { LexicalEmbedder } from '../../src/llm/lexical-embedder.js';

/**
 * A scripted OpenAI-compatible server for tests and benchmarks: real HTTP on 127.0.0.1, so the
 * real `openai` client, its timeouts and error mapping are exercised. Chat answers come from
 * per-kind queues, then a general queue, then a handler (by default a plausible answer built
 * from the request); embeddings from a queue, then a handler (by default the lexical embedder).
 */

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export type ScriptedReply =
  /** A completion whose message content is `JSON.stringify(json)`. */
  | { json: unknown; usage?: Partial<TokenUsage> }
  /** A completion with this raw content (malformed JSON, fenced JSON, …). */
  | { content: string; usage?: Partial<TokenUsage>; finishReason?: 'stop' | 'length' }
  /** An HTTP error; `body` defaults to an OpenAI-style error object. */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** A 200 whose whole HTTP body is this text (not JSON, or JSON that is no completion). */
  | { rawBody: string }
  /** Waits first, e.g. past the client's timeout. */
  | { delayMs: number; then: ScriptedReply };

/** Which pipeline call a chat request is, by its `response_format.json_schema.name`. */
export type ChatKind = 'extraction' | 'resolution' | 'other';

export interface ChatRequestBody {
  model?: string;
  messages: Array<{ role: string; content: unknown }>;
  temperature?: number;
  response_format?: { type?: string; json_schema?: { name?: string; strict?: boolean; schema?: unknown } };
  [key: string]: unknown;
}

export interface EmbeddingsRequestBody {
  model?: string;
  input: string | string[];
  dimensions?: number;
  encoding_format?: 'float' | 'base64';
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  body: unknown;
}

export type ChatHandler = (body: ChatRequestBody) => ScriptedReply | Promise<ScriptedReply>;
/** Returns one vector per input, or a reply (an error, a delay) to send instead. */
export type EmbeddingsHandler = (
  inputs: string[],
  body: EmbeddingsRequestBody,
) => number[][] | ScriptedReply | Promise<number[][] | ScriptedReply>;

export interface ScriptedLlm {
  /** Base URL for the OpenAI client, ending in `/v1`. */
  readonly url: string;
  /** Every request received, in order, whatever the path. */
  readonly requests: RecordedRequest[];
  /** The bodies of the chat requests received, optionally only those of one kind. */
  chatRequests(kind?: ChatKind): ChatRequestBody[];
  /** Queues a reply for the next chat request of `kind` (or of any kind when omitted). */
  enqueueChat(reply: ScriptedReply, kind?: ChatKind): void;
  /** Answers chat requests when no queued reply applies; null restores `defaultChatHandler`. */
  onChat(handler: ChatHandler | null): void;
  enqueueEmbeddings(reply: ScriptedReply): void;
  /** Answers embedding requests when the queue is empty; null restores the lexical default. */
  onEmbeddings(handler: EmbeddingsHandler | null): void;
  /** Queued replies not consumed yet (a test that scripted more calls than happened can say so). */
  pendingReplies(): number;
  /** Clears requests, queues and handlers, for reuse across tests. */
  reset(): void;
  close(): Promise<void>;
}

export function chatKind(body: unknown): ChatKind {
  const name = (body as ChatRequestBody | undefined)?.response_format?.json_schema?.name;
  if (name === EXTRACTION_SCHEMA_NAME) return 'extraction';
  if (name === RESOLUTION_SCHEMA_NAME) return 'resolution';
  return 'other';
}

/** The JSON data the pipeline puts in a chat request's first user message. */
export function chatUserData(body: ChatRequestBody): unknown {
  const message = body.messages.find((m) => m.role === 'user');
  return typeof message?.content === 'string' ? JSON.parse(message.content) : undefined;
}

interface ExtractionData {
  now: string;
  messages: Array<TranscriptMessage & { index: number }>;
}
interface ResolutionData {
  facts: Array<{ fact_index: number; fact: string; existing_memories: Array<{ id: string; content: string }> }>;
}

/**
 * Plausible answers without a model: extraction gives the offline extractor's facts of the
 * transcript, resolution NOOPs a fact whose text an existing memory already has and ADDs the rest.
 */
export const defaultChatHandler: ChatHandler = (body) => {
  switch (chatKind(body)) {
    case 'extraction': {
      const data = chatUserData(body) as ExtractionData;
      const facts = extractHeuristicFacts({ messages: data.messages, now: new Date(data.now) });
      return { json: { facts } };
    }
    case 'resolution': {
      const data = chatUserData(body) as ResolutionData;
      const decisions = data.facts.map((f) => {
        const same = f.existing_memories.find((m) => normaliseFactText(m.content) === normaliseFactText(f.fact));
        return same
          ? { fact_index: f.fact_index, operation: 'NOOP', target: same.id, content: null }
          : { fact_index: f.fact_index, operation: 'ADD', target: null, content: null };
      });
      return { json: { decisions } };
    }
    case 'other':
      return { status: 400, body: { error: { message: 'scripted LLM: no reply for this request', type: 'invalid_request_error' } } };
  }
};

const lexicalByDimensions = new Map<number, LexicalEmbedder>();
const defaultEmbeddingsHandler: EmbeddingsHandler = (inputs, body) => {
  const dimensions = body.dimensions ?? 1536;
  let embedder = lexicalByDimensions.get(dimensions);
  if (!embedder) {
    embedder = new LexicalEmbedder(dimensions);
    lexicalByDimensions.set(dimensions, embedder);
  }
  return inputs.map((text) => embedder.embedOne(text));
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Rough but deterministic token counts, so usage accounting has something to add up. */
function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

export async function startScriptedLlm(): Promise<ScriptedLlm> {
  const requests: RecordedRequest[] = [];
  const chatQueues: Record<ChatKind | 'any', ScriptedReply[]> = { extraction: [], resolution: [], other: [], any: [] };
  const embeddingsQueue: ScriptedReply[] = [];
  let chatHandler: ChatHandler = defaultChatHandler;
  let embeddingsHandler: EmbeddingsHandler = defaultEmbeddingsHandler;
  const timers = new Set<NodeJS.Timeout>();
  let completionCounter = 0;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    // The client may have given up (a timeout test); writing to it would only raise errors here.
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const sendReply = (
    res: ServerResponse,
    reply: ScriptedReply,
    success: (reply: Exclude<ScriptedReply, { status: number } | { delayMs: number } | { rawBody: string }>) => unknown,
  ) => {
    if ('delayMs' in reply) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        sendReply(res, reply.then, success);
      }, reply.delayMs);
      timers.add(timer);
      return;
    }
    if ('rawBody' in reply) {
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(reply.rawBody);
      return;
    }
    if ('status' in reply) {
      const body = reply.body ?? { error: { message: `scripted HTTP ${reply.status}`, type: 'scripted_error', code: null } };
      send(res, reply.status, body, reply.headers);
      return;
    }
    send(res, 200, success(reply));
  };

  const chatCompletion = (body: ChatRequestBody) => (reply: Exclude<ScriptedReply, { status: number } | { delayMs: number } | { rawBody: string }>) => {
    const content = 'json' in reply ? JSON.stringify(reply.json) : reply.content;
    const promptTokens = reply.usage?.prompt_tokens ?? tokens(JSON.stringify(body.messages));
    const completionTokens = reply.usage?.completion_tokens ?? tokens(content);
    completionCounter += 1;
    return {
      id: `chatcmpl-scripted-${completionCounter}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'scripted',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null },
          finish_reason: 'finishReason' in reply && reply.finishReason ? reply.finishReason : 'stop',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
  };

  const handleChat = async (body: ChatRequestBody, res: ServerResponse) => {
    const kind = chatKind(body);
    const reply = chatQueues[kind].shift() ?? chatQueues.any.shift() ?? (await chatHandler(body));
    sendReply(res, reply, chatCompletion(body));
  };

  const handleEmbeddings = async (body: EmbeddingsRequestBody, res: ServerResponse) => {
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const answer = embeddingsQueue.shift() ?? (await embeddingsHandler(inputs, body));
    const reply: ScriptedReply = Array.isArray(answer) ? { json: answer } : answer;
    sendReply(res, reply, (ok) => {
      const vectors = ('json' in ok ? ok.json : JSON.parse(ok.content)) as number[][];
      return {
        object: 'list',
        model: body.model ?? 'scripted',
        data: vectors.map((vector, index) => ({
          object: 'embedding',
          index,
          embedding:
            body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
        })),
        usage: {
          prompt_tokens: ok.usage?.prompt_tokens ?? inputs.reduce((n, text) => n + tokens(text), 0),
          total_tokens: ok.usage?.prompt_tokens ?? inputs.reduce((n, text) => n + tokens(text), 0),
        },
      };
    });
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });

      const fail = (error: unknown) =>
        send(res, 500, { error: { message: `scripted LLM handler failed: ${String(error)}`, type: 'scripted_error' } });
      if (req.method === 'POST' && path === '/v1/chat/completions' && isObject(body)) {
        handleChat(body as ChatRequestBody, res).catch(fail);
      } else if (req.method === 'POST' && path === '/v1/embeddings' && isObject(body)) {
        handleEmbeddings(body as EmbeddingsRequestBody, res).catch(fail);
      } else {
        send(res, 404, { error: { message: `scripted LLM: no route ${req.method} ${path}`, type: 'not_found' } });
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    chatRequests(kind) {
      return requests
        .filter((r) => r.path === '/v1/chat/completions' && isObject(r.body))
        .map((r) => r.body as ChatRequestBody)
        .filter((body) => kind === undefined || chatKind(body) === kind);
    },
    enqueueChat(reply, kind) {
      chatQueues[kind ?? 'any'].push(reply);
    },
    onChat(handler) {
      chatHandler = handler ?? defaultChatHandler;
    },
    enqueueEmbeddings(reply) {
      embeddingsQueue.push(reply);
    },
    onEmbeddings(handler) {
      embeddingsHandler = handler ?? defaultEmbeddingsHandler;
    },
    pendingReplies() {
      return Object.values(chatQueues).reduce((n, queue) => n + queue.length, 0) + embeddingsQueue.length;
    },
    reset() {
      requests.length = 0;
      for (const queue of Object.values(chatQueues)) queue.length = 0;
      embeddingsQueue.length = 0;
      chatHandler = defaultChatHandler;
      embeddingsHandler = defaultEmbeddingsHandler;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

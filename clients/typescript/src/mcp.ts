#!/usr/bin/env node
/**
 * Engram as an MCP server: tools `remember`, `recall`, `forget` and `list_memories` over an
 * `Engram` client. Run as `engram-mcp` (stdio) or `engram-mcp --http PORT` (Streamable HTTP),
 * configured by ENGRAM_URL, ENGRAM_TOKEN and, for a service token with `memories:act_as`,
 * ENGRAM_USER_ID. Needs the optional peers `@modelcontextprotocol/sdk` and `zod`.
 */
import { realpathSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { Engram, EngramError, type Job, type Memory, type RecalledMemory } from './index.js';

export interface EngramMcpOptions {
  client: Engram;
  /** The user every call is about; needed with a service token (`memories:act_as`), else the token's `sub` is used. */
  userId?: string | undefined;
  /** How long `remember` with `messages` waits for extraction (default 20 000 ms). */
  extractionWaitMs?: number | undefined;
}

const memoryOut = {
  id: z.string(),
  content: z.string(),
  importance: z.number(),
  category: z.string().nullable(),
  occurred_at: z.string(),
};

/** One line a model reads well: the fact, then what identifies and qualifies it. */
function memoryLine(memory: Memory | RecalledMemory, index: number): string {
  const score = 'score' in memory ? ` [score ${memory.score.toFixed(2)}]` : '';
  const category = memory.category ? `, ${memory.category}` : '';
  return `${index + 1}. ${memory.content}${score} (id ${memory.id}${category}, importance ${memory.importance}, since ${memory.occurred_at.slice(0, 10)})`;
}

const brief = (m: Memory) => ({ id: m.id, content: m.content, importance: m.importance, category: m.category, occurred_at: m.occurred_at });
const text = (value: string): CallToolResult['content'] => [{ type: 'text', text: value }];

/** A failed call as a tool error the model can read, with the service's own detail; never a crash. */
function toolError(error: unknown): CallToolResult {
  if (error instanceof EngramError) {
    const where = error.status === undefined ? error.code : `${error.status} ${error.code}`;
    // The detail usually names the invalid fields already; add only those it does not.
    const unnamed = (error.errors ?? []).filter((e) => !error.detail.includes(`${e.path} ${e.message}`));
    const fields = unnamed.length > 0 ? ` (${unnamed.map((e) => `${e.path || '/'}: ${e.message}`).join('; ')})` : '';
    // No status: the service never answered, so it refused nothing.
    const lead = error.status === undefined ? 'Engram could not be reached' : 'Engram refused the call';
    return { isError: true, content: text(`${lead} (${where}): ${error.detail}${fields}`) };
  }
  return { isError: true, content: text(`Engram call failed: ${error instanceof Error ? error.message : String(error)}`) };
}

/**
 * What an extraction job did, in words a model reads well: counts, then the memories it added or
 * changed (at most `limit` looked up), or why it is not done.
 */
async function describeJob(client: Engram, job: Job, limit = 20): Promise<string> {
  if (job.status === 'failed') return `Extraction failed: ${job.error?.message ?? 'unknown error'} (job ${job.job_id}).`;
  if (job.status !== 'succeeded' || !job.result) {
    return `Extraction is still ${job.status} (job ${job.job_id}); the memories will be there shortly.`;
  }
  const { added, updated, deleted, unchanged, memory_ids } = job.result;
  const lines = [`Extraction done: ${added} added, ${updated} updated, ${deleted} deleted, ${unchanged} already known (left alone).`];
  for (const id of memory_ids.slice(0, limit)) {
    const memory = await client.memories.get(id).catch(() => undefined);
    if (memory) lines.push(`- ${memory.content} (id ${memory.id})`);
  }
  return lines.join('\n');
}

async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (error) {
    return toolError(error);
  }
}

export function createEngramMcpServer(options: EngramMcpOptions): McpServer {
  const { client, userId } = options;
  const waitMs = options.extractionWaitMs ?? 20_000;
  const user = userId === undefined ? {} : { user_id: userId };
  const server = new McpServer({ name: 'engram', version: '0.1.0' });

  server.registerTool(
    'remember',
    {
      title: 'Remember',
      description:
        'Store long-term memories about the user. Pass `content` to store one fact exactly as given ' +
        '(write it about the user, e.g. "User is allergic to peanuts"), or pass `messages` (the recent ' +
        'conversation) to let Engram extract the durable facts itself, merging them with what it already ' +
        'knows. Give one of the two, not both.',
      inputSchema: {
        content: z.string().min(1).max(10_000).optional().describe('One fact to store as given.'),
        importance: z.number().int().min(1).max(10).optional().describe('With `content`: 1 (trivia) to 10 (critical, e.g. an allergy); default 5.'),
        category: z.string().min(1).max(64).optional().describe('With `content`: a category such as "health" or "preference".'),
        messages: z
          .array(z.object({ role: z.enum(['user', 'assistant', 'system', 'tool']), content: z.string() }))
          .min(1)
          .max(500)
          .optional()
          .describe('A conversation to extract facts from, oldest first.'),
      },
    },
    ({ content, importance, category, messages }) =>
      guarded(async () => {
        if ((content === undefined) === (messages === undefined)) {
          return { isError: true, content: text('Give exactly one of `content` (one fact) or `messages` (a conversation).') };
        }
        if (content !== undefined) {
          const memory = { content, ...(importance === undefined ? {} : { importance }), ...(category === undefined ? {} : { category }) };
          const { memories } = await client.memories.add({ ...user, memories: [memory] });
          const stored = memories[0]!;
          return { content: text(`Remembered: ${stored.content} (id ${stored.id})`) };
        }
        const accepted = await client.memories.extract({ ...user, messages: messages! });
        const job = await client.jobs.wait(accepted.job_id, { timeoutMs: waitMs });
        const report = await describeJob(client, job);
        return job.status === 'failed' ? { isError: true, content: text(report) } : { content: text(report) };
      }),
  );

  server.registerTool(
    'recall',
    {
      title: 'Recall',
      description:
        'Look up what is known about the user that matters for a question or task, best match first, ' +
        'each with a score from 0 to 1. Call it before answering anything personal (preferences, ' +
        'plans, health, people, places).',
      inputSchema: {
        query: z.string().min(1).max(8000).describe('What you need to know, in plain words.'),
        limit: z.number().int().min(1).max(100).optional().describe('At most this many memories (default 10).'),
      },
      outputSchema: { memories: z.array(z.object({ ...memoryOut, score: z.number() })) },
    },
    ({ query, limit }) =>
      guarded(async () => {
        const { memories } = await client.memories.recall({ ...user, query, ...(limit === undefined ? {} : { limit }) });
        const lines = memories.length === 0 ? 'No memories match.' : memories.map(memoryLine).join('\n');
        return {
          content: text(lines),
          structuredContent: { memories: memories.map((m) => ({ ...brief(m), score: m.score })) },
        };
      }),
  );

  server.registerTool(
    'forget',
    {
      title: 'Forget',
      description: 'Delete one memory for good, by its id (as `recall` or `list_memories` show it). Use it when the user asks to forget something or a memory is wrong.',
      inputSchema: { memory_id: z.string().describe('The id of the memory to delete.') },
    },
    ({ memory_id }) =>
      guarded(async () => {
        await client.memories.delete(memory_id);
        return { content: text(`Forgot memory ${memory_id}.`) };
      }),
  );

  server.registerTool(
    'list_memories',
    {
      title: 'List memories',
      description: 'List the memories held about the user, newest first, one page at a time. Pass the `next_cursor` of a page as `cursor` to get the next.',
      inputSchema: {
        limit: z.number().int().min(1).max(100).optional().describe('Page size (default 20).'),
        cursor: z.string().optional().describe('The `next_cursor` of the previous page.'),
      },
      outputSchema: { memories: z.array(z.object(memoryOut)), next_cursor: z.string().nullable() },
    },
    ({ limit, cursor }) =>
      guarded(async () => {
        const page = await client.memories.list({ ...user, ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) });
        const lines = page.memories.length === 0 ? 'No memories.' : page.memories.map(memoryLine).join('\n');
        const more = page.next_cursor ? `\nMore: call again with cursor "${page.next_cursor}".` : '';
        return { content: text(lines + more), structuredContent: { memories: page.memories.map(brief), next_cursor: page.next_cursor } };
      }),
  );

  return server;
}

export interface HttpOptions extends EngramMcpOptions {
  port: number;
  /** Default 127.0.0.1. */
  host?: string | undefined;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * Streamable HTTP at `/mcp`, stateless: each POST gets a fresh server and transport, so nothing is
 * kept between requests. On a loopback address, a request naming another Host is refused, so a web
 * page cannot reach it by DNS rebinding.
 */
export function serveEngramMcpHttp(options: HttpOptions): Promise<Server> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    const port = (server.address() as AddressInfo).port;
    const hostHeader = (req.headers.host ?? '').toLowerCase();
    if (LOOPBACK.has(host) && ![`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(hostHeader)) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('Host not allowed\n');
      return;
    }
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('MCP is served at /mcp\n');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('This stateless server takes POST only\n');
      return;
    }
    const mcp = createEngramMcpServer(options);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`MCP request failed: ${error instanceof Error ? error.message : String(error)}\n`);
      });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve(server));
  });
}

/** The `engram-mcp` command. */
export async function main(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i === -1 ? undefined : argv[i + 1];
  };
  if (argv.includes('--help')) {
    process.stdout.write('engram-mcp [--http PORT [--host HOST]]\n  env: ENGRAM_URL, ENGRAM_TOKEN, ENGRAM_USER_ID (with a memories:act_as token)\n');
    return;
  }
  const client = new Engram({ baseURL: env.ENGRAM_URL, token: env.ENGRAM_TOKEN });
  const options = { client, userId: env.ENGRAM_USER_ID || undefined };
  const httpPort = flag('--http');
  if (httpPort === undefined) {
    await createEngramMcpServer(options).connect(new StdioServerTransport());
    return;
  }
  const port = Number(httpPort);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--http needs a port number, got "${httpPort}"`);
  const server = await serveEngramMcpHttp({ ...options, port, host: flag('--host') });
  const address = server.address() as AddressInfo;
  // stdout stays free for the protocol in stdio mode; here it is only a log line.
  process.stderr.write(`engram-mcp: Streamable HTTP on http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/mcp\n`);
}

const invoked = process.argv[1] ? pathToFileURL(realpathSync(process.argv[1])).href : undefined;
if (invoked === import.meta.url) {
  main().catch((error: unknown) => {
    process.stderr.write(`engram-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

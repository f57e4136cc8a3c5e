import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { rawHttp } from '../../../test/support/process.js';
import { startService, type Service } from './service.js';

/**
 * The `engram-mcp` bin (dist/mcp.js, found through the package's bin entry) driven by the MCP SDK's
 * own Client, over stdio and over Streamable HTTP, against the real service.
 */

const require = createRequire(import.meta.url);
const packageDir = require.resolve('@engram/client/package.json').replace(/package\.json$/, '');
const BIN = `${packageDir}${(require('@engram/client/package.json') as { bin: Record<string, string> }).bin['engram-mcp']}`;

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

interface Session {
  client: Client;
  close(): Promise<void>;
}

async function stdioSession(env: Record<string, string>): Promise<Session> {
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN], env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'pipe' }));
  return { client, close: () => client.close() };
}

/** Starts `engram-mcp --http 0` and reads the address it printed. */
async function startHttp(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [BIN, '--http', '0'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stderr!.on('data', (d: Buffer) => {
      output += d.toString();
      const match = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`engram-mcp exited (${code}): ${output}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    child,
    url,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function httpSession(env: Record<string, string>): Promise<Session> {
  const server = await startHttp(env);
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return {
    client,
    async close() {
      await client.close();
      await server.stop();
    },
  };
}

const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

describe.each([
  ['stdio', stdioSession],
  ['Streamable HTTP', httpSession],
] as const)('engram-mcp over %s', (_name, open) => {
  let session: Session;
  let user: string;

  beforeAll(async () => {
    user = `mcp-${Math.random().toString(36).slice(2, 8)}`;
    session = await open({ ENGRAM_URL: service.url, ENGRAM_TOKEN: await service.token(user) });
  });
  afterAll(async () => {
    await session?.close();
  });

  it('lists the four tools, each with a description and a JSON schema', async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['forget', 'list_memories', 'recall', 'remember']);
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
    }
    const recall = tools.find((t) => t.name === 'recall')!;
    expect(recall.inputSchema.required).toEqual(['query']);
    expect(Object.keys(recall.inputSchema.properties ?? {}).sort()).toEqual(['limit', 'query']);
    expect(tools.find((t) => t.name === 'forget')!.inputSchema.required).toEqual(['memory_id']);
  });

  it('remember stores a fact as given; recall finds it with its score; forget deletes it', async () => {
    const stored = await session.client.callTool({ name: 'remember', arguments: { content: 'User is allergic to peanuts', importance: 9, category: 'health' } });
    expect(stored.isError).toBeFalsy();
    const id = /id ([0-9a-f-]{36})/.exec(textOf(stored))![1]!;

    const recalled = await session.client.callTool({ name: 'recall', arguments: { query: 'Is the user allergic to anything?', limit: 3 } });
    expect(recalled.isError).toBeFalsy();
    const memories = (recalled.structuredContent as { memories: Array<{ id: string; content: string; score: number }> }).memories;
    expect(memories[0]).toMatchObject({ id, content: 'User is allergic to peanuts', score: expect.any(Number) });
    expect(textOf(recalled)).toMatch(/^1\. User is allergic to peanuts \[score 0\.\d\d\] \(id [0-9a-f-]{36}, health, importance 9/);

    const forgot = await session.client.callTool({ name: 'forget', arguments: { memory_id: id } });
    expect(textOf(forgot)).toBe(`Forgot memory ${id}.`);
    const again = await session.client.callTool({ name: 'forget', arguments: { memory_id: id } });
    expect(again.isError).toBe(true);
    expect(textOf(again)).toMatch(/^Engram refused the call \(404 not_found\): /);
  });

  it('remember with messages runs extraction and says what it added and left alone', async () => {
    const messages = [
      { role: 'user', content: 'I moved to Porto last year. I have a dog named Rex.' },
      { role: 'assistant', content: 'Porto is lovely!' },
    ];
    const first = await session.client.callTool({ name: 'remember', arguments: { messages } });
    expect(first.isError).toBeFalsy();
    expect(textOf(first)).toMatch(/^Extraction done: 2 added, 0 updated, 0 deleted, 0 already known/);
    expect(textOf(first)).toContain('- User has a dog named Rex.');
    const second = await session.client.callTool({ name: 'remember', arguments: { messages } });
    expect(textOf(second)).toMatch(/^Extraction done: 0 added, 0 updated, 0 deleted, 2 already known/);
  });

  it('list_memories pages with a cursor', async () => {
    const first = await session.client.callTool({ name: 'list_memories', arguments: { limit: 1 } });
    const page = first.structuredContent as { memories: Array<{ id: string }>; next_cursor: string | null };
    expect(page.memories).toHaveLength(1);
    expect(page.next_cursor).toEqual(expect.any(String));
    const second = await session.client.callTool({ name: 'list_memories', arguments: { limit: 1, cursor: page.next_cursor } });
    const next = second.structuredContent as typeof page;
    expect(next.memories[0]!.id).not.toBe(page.memories[0]!.id);
  });

  it('refusals come back as tool errors with the service\'s detail, and the server keeps serving', async () => {
    const blank = await session.client.callTool({ name: 'recall', arguments: { query: '   ' } });
    expect(blank.isError).toBe(true);
    expect(textOf(blank)).toMatch(/^Engram refused the call \(400 validation_failed\): .*\/query must not be blank$/);
    const both = await session.client.callTool({ name: 'remember', arguments: { content: 'x', messages: [{ role: 'user', content: 'y' }] } });
    expect(both).toMatchObject({ isError: true });
    expect(textOf(both)).toContain('exactly one');
    const list = await session.client.callTool({ name: 'list_memories', arguments: {} });
    expect(list.isError).toBeFalsy();
  });
});

describe('engram-mcp --http', () => {
  it('refuses a Host other than its loopback address (DNS rebinding), other paths, and methods other than POST', async () => {
    const server = await startHttp({ ENGRAM_URL: service.url, ENGRAM_TOKEN: 'unused' });
    try {
      const port = Number(new URL(server.url).port);
      const body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
      const post = (host: string, path = '/mcp') =>
        rawHttp(port, `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      expect((await post(`attacker.example:${port}`)).status).toBe(403);
      expect((await post(`127.0.0.1:${port}`, '/other')).status).toBe(404);
      const get = await rawHttp(port, `GET /mcp HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`);
      expect(get.status).toBe(405);
      expect(get.headers).toContain('allow: post');
    } finally {
      await server.stop();
    }
  });
});

describe('engram-mcp with a service token', () => {
  it('ENGRAM_USER_ID names the user every call is about', async () => {
    const session = await stdioSession({
      ENGRAM_URL: service.url,
      ENGRAM_TOKEN: await service.token('support-agent', 'memories:read memories:write memories:delete memories:act_as'),
      ENGRAM_USER_ID: 'olga',
    });
    try {
      await session.client.callTool({ name: 'remember', arguments: { content: 'Olga prefers email over phone' } });
      const olga = new (await import('@engram/client')).Engram({ baseURL: service.url, token: await service.token('olga') });
      expect((await olga.memories.list()).memories.map((m) => m.content)).toEqual(['Olga prefers email over phone']);
    } finally {
      await session.close();
    }
  });

  it('a service that cannot be reached is a tool error that says so, and the server keeps serving', async () => {
    const session = await stdioSession({ ENGRAM_URL: 'http://127.0.0.1:1', ENGRAM_TOKEN: 'any' });
    try {
      const result = await session.client.callTool({ name: 'list_memories', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^Engram could not be reached \(connection_error\)/);
      expect((await session.client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await session.close();
    }
  });

  it('a wrong token is a tool error naming the 401, not a crash', async () => {
    const session = await stdioSession({ ENGRAM_URL: service.url, ENGRAM_TOKEN: 'not-a-jwt' });
    try {
      const result = await session.client.callTool({ name: 'list_memories', arguments: {} });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^Engram refused the call \(401 unauthorized\)/);
    } finally {
      await session.close();
    }
  });
});

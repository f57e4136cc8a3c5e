import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Engram } from '@engram/client';
import { createEngramMcpServer } from '@engram/client/mcp';
import { startScriptedLlm, type ScriptedLlm } from '../../../test/support/scripted-llm.js';
import { startService, type Service } from './service.js';

/**
 * `remember` with a conversation when extraction does not simply succeed: the service's model
 * (the scripted OpenAI-compatible server) refuses, or is slower than the tool's bound. The server
 * runs in-process here, over the SDK's in-memory transport.
 */

let llm: ScriptedLlm;
let service: Service;
beforeAll(async () => {
  llm = await startScriptedLlm();
  service = await startService({ llm });
});
afterAll(async () => {
  await service?.close();
  await llm?.close();
});
beforeEach(() => llm.reset());

async function connect(user: string, extractionWaitMs: number) {
  const server = createEngramMcpServer({ client: new Engram({ baseURL: service.url, token: await service.token(user) }), extractionWaitMs });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
const messages = [{ role: 'user', content: 'I keep bees in my garden.' }];

describe('remember with messages', () => {
  it('a job that fails is a tool error saying why', async () => {
    llm.enqueueChat({ status: 400, body: { error: { message: 'model refused', type: 'invalid_request_error' } } }, 'extraction');
    const client = await connect('mcp-fail', 20_000);
    const result = await client.callTool({ name: 'remember', arguments: { messages } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^Extraction failed: .+ \(job [0-9a-f-]{36}\)\.$/);
    await client.close();
  });

  it('a job slower than the bound is reported as still going, and finishes on its own', async () => {
    llm.enqueueChat({ delayMs: 1500, then: { json: { facts: [{ content: 'User keeps bees', importance: 5, category: 'hobby', occurred_at: null, source_message_indexes: [0] }] } } }, 'extraction');
    const client = await connect('mcp-slow', 0);
    const result = await client.callTool({ name: 'remember', arguments: { messages } });
    expect(result.isError).toBeFalsy();
    const job = /job ([0-9a-f-]{36})/.exec(textOf(result))![1]!;
    expect(textOf(result)).toMatch(/^Extraction is still (queued|running) \(job [0-9a-f-]{36}\); the memories will be there shortly\.$/);
    const engram = new Engram({ baseURL: service.url, token: await service.token('mcp-slow') });
    expect(await engram.jobs.wait(job, { timeoutMs: 20_000 })).toMatchObject({ status: 'succeeded', result: { added: 1 } });
    await client.close();
  });
});

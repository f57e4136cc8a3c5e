import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Engram } from '@engram/client';
import { startScriptedLlm, type ScriptedLlm } from '../../../test/support/scripted-llm.js';
import { startService, type Service } from './service.js';

/**
 * The top-level examples/, each run as its README says (a real process, `tsx`), against the service
 * and the scripted OpenAI-compatible server standing in for the model, so none can rot.
 */

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

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

/** Runs `npx tsx examples/<file>` with these environment variables and standard input; resolves with its output. */
function runExample(file: string, env: Record<string, string>, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `examples/${file}`], {
      cwd: REPO,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`examples/${file} exited ${code}:\n${output}`))));
    child.stdin.end(input);
  });
}

async function envFor(user: string) {
  return { ENGRAM_URL: service.url, ENGRAM_TOKEN: await service.token(user), OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test', LLM_MODEL: 'scripted' };
}

const systemPrompt = (index: number) => String(llm.chatRequests('other')[index]!.messages[0]!.content);

describe('examples', () => {
  it('openai-agent.ts recalls before answering and extracts after', async () => {
    llm.enqueueChat({ content: 'Noted, no meat for you.' }, 'other');
    llm.enqueueChat({ content: 'How about a chickpea curry?' }, 'other');
    const output = await runExample('openai-agent.ts', await envFor('ex-olivia'), 'I am vegetarian.\nWhat should I cook as a vegetarian?\n');
    expect(output).toContain('assistant: Noted, no meat for you.\nmemory: 1 added, 0 updated, 0 already known');
    expect(output).toContain('assistant: How about a chickpea curry?');
    expect(systemPrompt(0)).toContain('(nothing yet)');
    // The second answer was written knowing what the first exchange taught.
    expect(systemPrompt(1)).toContain('- User is vegetarian.');
  });

  it('mcp-session.ts starts the server from the desktop config and runs remember, recall, forget', async () => {
    const env = await envFor('ex-peter');
    const output = await runExample('mcp-session.ts', { ENGRAM_URL: env.ENGRAM_URL, ENGRAM_TOKEN: env.ENGRAM_TOKEN });
    expect(output).toMatch(/> tools\/list\nremember\(content, importance, category, messages\): /);
    expect(output).toMatch(/recall\(query, limit\): /);
    expect(output).toMatch(/Remembered: User is allergic to peanuts \(id [0-9a-f-]{36}\)/);
    expect(output).toMatch(/1\. User is allergic to peanuts \[score 0\.\d\d\]/);
    expect(output).toMatch(/Forgot memory [0-9a-f-]{36}\./);
    expect(output).toMatch(/isError: true\nEngram refused the call \(404 not_found\)/);
    expect((await new Engram({ baseURL: service.url, token: env.ENGRAM_TOKEN }).memories.list()).memories).toEqual([]);
  });

  it('langgraph-agent.ts writes through EngramStore and recalls into the next turn', async () => {
    llm.enqueueChat({ content: 'Good to know!' }, 'other');
    llm.enqueueChat({ json: { fact: 'User is vegetarian' } }, 'other');
    llm.enqueueChat({ content: 'A mushroom risotto.' }, 'other');
    llm.enqueueChat({ json: { fact: null } }, 'other');
    const env = await envFor('ex-quinn');
    const output = await runExample('langgraph-agent.ts', env, 'I am vegetarian.\nWhat should I cook as a vegetarian?\n');
    expect(output).toBe('assistant: Good to know!\nassistant: A mushroom risotto.\n');
    expect(systemPrompt(2)).toContain('- User is vegetarian');
    const memories = (await new Engram({ baseURL: service.url, token: env.ENGRAM_TOKEN }).memories.list()).memories;
    expect(memories).toMatchObject([{ content: 'User is vegetarian', metadata: { langgraph: { namespace: ['memories'] } } }]);
    expect(llm.pendingReplies()).toBe(0);
  });
});

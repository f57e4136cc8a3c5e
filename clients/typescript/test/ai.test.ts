import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateText, isStepCount, streamText } from 'ai';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { Engram } from '@engram/client';
import { engramTools, withEngram } from '@engram/client/ai';
import { startService, type Service } from './service.js';

/** The Vercel AI SDK integration with the SDK's own mock language model, against the real service. */

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const stop = { unified: 'stop' as const, raw: undefined };
const answer = (text: string) => ({ content: [{ type: 'text' as const, text }], finishReason: stop, usage, warnings: [] });
const toolCall = (toolName: string, input: unknown) => ({
  content: [{ type: 'tool-call' as const, toolCallId: `call-${toolName}`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});

async function clientFor(user: string) {
  return new Engram({ baseURL: service.url, token: await service.token(user) });
}

/** Every text the model was shown in a call, flattened. */
function promptText(call: { prompt: Array<{ role: string; content: unknown }> }): string {
  return JSON.stringify(call.prompt);
}

describe('engramTools', () => {
  it('the model stores a fact with remember and finds it with recall, through generateText', async () => {
    const client = await clientFor('ai-amy');
    const model = new MockLanguageModelV4({
      doGenerate: [
        toolCall('remember', { content: 'User is allergic to shellfish', importance: 9, category: 'health' }),
        toolCall('recall', { query: 'Is the user allergic to anything?' }),
        answer('You are allergic to shellfish.'),
      ],
    });
    const result = await generateText({ model, tools: engramTools({ client }), prompt: 'Remember my allergy, then tell me what it is.', stopWhen: isStepCount(3) });
    expect(result.text).toBe('You are allergic to shellfish.');
    const stored = (await client.memories.list()).memories;
    expect(stored).toMatchObject([{ content: 'User is allergic to shellfish', importance: 9, category: 'health' }]);
    // The third call saw recall's output: the stored memory with its score.
    expect(promptText(model.doGenerateCalls[2]!)).toContain('User is allergic to shellfish');
    expect(promptText(model.doGenerateCalls[2]!)).toMatch(/\\"score\\":0\.\d+|"score":0\.\d+/);
  });

  it('a refusal of the service reaches the model as a tool error with its detail', async () => {
    const client = await clientFor('ai-bo');
    const model = new MockLanguageModelV4({ doGenerate: [toolCall('recall', { query: '   ' }), answer('Sorry.')] });
    const result = await generateText({ model, tools: engramTools({ client }), prompt: 'x', stopWhen: isStepCount(2) });
    const error = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect(error).toBeDefined();
    expect(String((error as { error: unknown }).error)).toMatch(/400 validation_failed/);
  });
});

describe('withEngram', () => {
  it('recalls before the call and extracts the exchange after it (generateText)', async () => {
    const client = await clientFor('ai-cy');
    await client.memories.add({ memories: [{ content: 'User is vegetarian' }, { content: 'User plays the cello' }, { content: 'User has a cat named Miso' }] });
    const model = new MockLanguageModelV4({ doGenerate: [answer('A mushroom risotto.')] });
    const jobs: string[] = [];
    const result = await generateText({
      model: withEngram(model, { client, onExtract: (job) => jobs.push(job.job_id) }),
      system: 'You are a cook.',
      prompt: 'I love risotto. What should I cook as a vegetarian?',
    });
    expect(result.text).toBe('A mushroom risotto.');
    const [system, memory] = model.doGenerateCalls[0]!.prompt;
    expect(system).toEqual({ role: 'system', content: 'You are a cook.' });
    expect(memory).toMatchObject({ role: 'system', content: expect.stringContaining('- User is vegetarian') });

    expect(jobs).toHaveLength(1);
    const job = await client.jobs.wait(jobs[0]!, { timeoutMs: 20_000 });
    expect(job).toMatchObject({ status: 'succeeded', result: { added: 1 } });
    const contents = (await client.memories.list()).memories.map((m) => m.content);
    expect(contents).toContain('User loves risotto.');
  });

  it('extracts after a stream has finished, with the streamed answer (streamText)', async () => {
    const client = await clientFor('ai-di');
    const model = new MockLanguageModelV4({
      doStream: {
        stream: convertArrayToReadableStream([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Nice, ' },
          { type: 'text-delta', id: 't', delta: 'enjoy Oslo!' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: stop, usage },
        ]),
      },
    });
    const jobs: string[] = [];
    const result = streamText({ model: withEngram(model, { client, onExtract: (job) => jobs.push(job.job_id) }), prompt: 'I moved to Oslo.' });
    expect(await result.text).toBe('Nice, enjoy Oslo!');
    await expect.poll(() => jobs.length, { timeout: 10_000 }).toBe(1);
    await client.jobs.wait(jobs[0]!, { timeoutMs: 20_000 });
    expect((await client.memories.list()).memories.map((m) => m.content)).toEqual(['User moved to Oslo.']);
  });

  it('a failing memory service does not fail the model call; it is reported', async () => {
    const client = new Engram({ baseURL: service.url, token: 'not-a-jwt' });
    const errors: string[] = [];
    const model = new MockLanguageModelV4({ doGenerate: [answer('Hello!')] });
    const result = await generateText({ model: withEngram(model, { client, onError: (e, stage) => errors.push(`${stage}: ${(e as Error).message}`) }), prompt: 'Hi, I am Ana.' });
    expect(result.text).toBe('Hello!');
    expect(errors).toEqual([expect.stringMatching(/^recall: 401 unauthorized/), expect.stringMatching(/^extract: 401 unauthorized/)]);
  });
});

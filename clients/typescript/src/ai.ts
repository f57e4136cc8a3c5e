/**
 * Engram for the Vercel AI SDK (`ai`): `engramTools` gives a model `recall` and `remember` tools,
 * and `engramMiddleware` (or `withEngram`) wraps a model so every call recalls before and hands
 * the exchange to extraction after. Needs the optional peer `ai`.
 */
import { jsonSchema, tool, wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';
import type { Engram, RecalledMemory } from './index.js';

export interface EngramToolsOptions {
  client: Engram;
  /** The user the tools are about; needed with a service token (`memories:act_as`), else the token's `sub`. */
  userId?: string | undefined;
}

const userField = (userId: string | undefined) => (userId === undefined ? {} : { user_id: userId });
const brief = (m: RecalledMemory) => ({ id: m.id, content: m.content, score: m.score, category: m.category, occurred_at: m.occurred_at });

/** `recall` and `remember` tools for `generateText` / `streamText`; a refusal of the service reaches the model as a tool error with its detail. */
export function engramTools({ client, userId }: EngramToolsOptions) {
  return {
    recall: tool({
      description:
        'Look up what is known about the user that matters for a question or task, best match first, each with a score from 0 to 1. ' +
        'Call it before answering anything personal (preferences, plans, health, people, places).',
      inputSchema: jsonSchema<{ query: string; limit?: number }>({
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1, maxLength: 8000, description: 'What you need to know, in plain words.' },
          limit: { type: 'integer', minimum: 1, maximum: 100, description: 'At most this many memories (default 10).' },
        },
        required: ['query'],
        additionalProperties: false,
      }),
      execute: async ({ query, limit }) => {
        const { memories } = await client.memories.recall({ ...userField(userId), query, ...(limit === undefined ? {} : { limit }) });
        return { memories: memories.map(brief) };
      },
    }),
    remember: tool({
      description:
        'Store one durable fact about the user exactly as given, written about the user (e.g. "User is allergic to peanuts"). ' +
        'Use it when the user shares something worth keeping for later conversations.',
      inputSchema: jsonSchema<{ content: string; importance?: number; category?: string }>({
        type: 'object',
        properties: {
          content: { type: 'string', minLength: 1, maxLength: 10000, description: 'The fact.' },
          importance: { type: 'integer', minimum: 1, maximum: 10, description: '1 (trivia) to 10 (critical, e.g. an allergy); default 5.' },
          category: { type: 'string', minLength: 1, maxLength: 64, description: 'A category such as "health" or "preference".' },
        },
        required: ['content'],
        additionalProperties: false,
      }),
      execute: async ({ content, importance, category }) => {
        const memory = { content, ...(importance === undefined ? {} : { importance }), ...(category === undefined ? {} : { category }) };
        const { memories } = await client.memories.add({ ...userField(userId), memories: [memory] });
        return { id: memories[0]!.id, content: memories[0]!.content };
      },
    }),
  };
}

export interface EngramMiddlewareOptions extends EngramToolsOptions {
  /** How many memories to put before the prompt (default 5). */
  limit?: number | undefined;
  /** Hand each exchange (the last user message and the answer) to extraction after the call (default true). */
  extract?: boolean | undefined;
  /** Memory is an aid: a failed recall or extraction does not fail the model call; it is reported here. */
  onError?: ((error: unknown, stage: 'recall' | 'extract') => void) | undefined;
  /** Called with the queued extraction job, e.g. to wait for it with `client.jobs.wait`. */
  onExtract?: ((job: { job_id: string }) => void) | undefined;
}

type Middleware = LanguageModelMiddleware;
type CallParams = Parameters<NonNullable<Middleware['transformParams']>>[0]['params'];
type Prompt = CallParams['prompt'];
type StreamResult = Awaited<ReturnType<Parameters<NonNullable<Middleware['wrapStream']>>[0]['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer Part> ? Part : never;

function lastUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role !== 'user') continue;
    return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n').trim();
  }
  return '';
}

/**
 * A middleware for `wrapLanguageModel`: before each call, the memories that matter for the last
 * user message join the prompt as a system message; after it, that message and the answer go to
 * extraction (generate and stream alike).
 */
export function engramMiddleware(options: EngramMiddlewareOptions): LanguageModelMiddleware {
  const { client, userId, limit = 5, extract = true, onError = () => {}, onExtract } = options;
  const remember = async (user: string, answer: string) => {
    if (!extract || user === '' || answer.trim() === '') return;
    try {
      const messages = [
        { role: 'user' as const, content: user },
        { role: 'assistant' as const, content: answer },
      ];
      const accepted = await client.memories.extract({ ...userField(userId), messages });
      onExtract?.(accepted);
    } catch (error) {
      onError(error, 'extract');
    }
  };
  return {
    specificationVersion: 'v4',
    transformParams: async ({ params }) => {
      const query = lastUserText(params.prompt);
      if (query === '') return params;
      try {
        const { memories } = await client.memories.recall({ ...userField(userId), query, limit });
        if (memories.length === 0) return params;
        const lines = memories.map((m) => `- ${m.content}`).join('\n');
        const system = { role: 'system' as const, content: `What you know about the user (from memory, most relevant first):\n${lines}` };
        const firstNonSystem = params.prompt.findIndex((m) => m.role !== 'system');
        const at = firstNonSystem === -1 ? params.prompt.length : firstNonSystem;
        return { ...params, prompt: [...params.prompt.slice(0, at), system, ...params.prompt.slice(at)] };
      } catch (error) {
        onError(error, 'recall');
        return params;
      }
    },
    wrapGenerate: async ({ doGenerate, params }) => {
      const result = await doGenerate();
      const answer = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      await remember(lastUserText(params.prompt), answer);
      return result;
    },
    wrapStream: async ({ doStream, params }) => {
      const result = await doStream();
      let answer = '';
      const stream = result.stream.pipeThrough(
        new TransformStream<StreamPart, StreamPart>({
          transform(part, controller) {
            if (part.type === 'text-delta') answer += part.delta;
            controller.enqueue(part);
          },
          flush: () => remember(lastUserText(params.prompt), answer),
        }),
      );
      return { ...result, stream };
    },
  };
}

/** `model` wrapped with `engramMiddleware(options)`. */
export function withEngram(model: Exclude<LanguageModel, string>, options: EngramMiddlewareOptions) {
  return wrapLanguageModel({ model, middleware: engramMiddleware(options) });
}

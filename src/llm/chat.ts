import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { z } from 'zod';
import { outcomeOfError, report } from './observe.js';
import { ProviderOutputError, ProviderRejectedError, ProviderUnavailableError, type ModelCallObserver, type ModelCallOutcome, type Usage } from './types.js';

export interface StructuredRequest<T> {
  system: string;
  /** The data the system prompt talks about; callers keep untrusted text here, as JSON. */
  user: string;
  /** `response_format.json_schema.name`: also how logs and test doubles tell the calls apart. */
  schemaName: string;
  /** A strict-mode JSON schema: every property required, `additionalProperties: false`. */
  jsonSchema: Record<string, unknown>;
  /** The authority: the JSON schema only guides the model, this decides what is accepted. */
  zodSchema: z.ZodType<T>;
  usage: Usage;
  signal?: AbortSignal;
}

export interface StructuredChatOptions {
  client: OpenAI;
  model: string;
  /** Caps each answer; unset leaves it to the server (some compatible servers reject the field). */
  maxCompletionTokens?: number;
  /** Told about every HTTP call (outcome, latency, tokens), for metrics; never sees content. */
  observer?: ModelCallObserver;
}

type Attempt<T> = { ok: true; value: T } | { ok: false; error: string; answer: string };

/**
 * JSON-schema structured output over any OpenAI-compatible chat endpoint. One request; if the
 * answer is not valid, one more that shows the model its answer and the exact error (models fix
 * a named mistake far more often than they avoid it on a blind retry); then ProviderOutputError.
 */
export class StructuredChat {
  readonly model: string;
  private readonly client: OpenAI;
  private readonly maxCompletionTokens: number | undefined;
  private readonly observer: ModelCallObserver | undefined;

  constructor(options: StructuredChatOptions) {
    this.client = options.client;
    this.model = options.model;
    this.maxCompletionTokens = options.maxCompletionTokens;
    this.observer = options.observer;
  }

  async complete<T>(request: StructuredRequest<T>): Promise<T> {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: request.system },
      { role: 'user', content: request.user },
    ];
    const first = await this.attempt(request, messages);
    if (first.ok) return first.value;

    messages.push(
      { role: 'assistant', content: first.answer },
      {
        role: 'user',
        content:
          `Your previous answer was rejected: ${first.error}\n` +
          `Answer again with only a JSON object that matches the "${request.schemaName}" schema, ` +
          'following the original instructions.',
      },
    );
    const second = await this.attempt(request, messages);
    if (second.ok) return second.value;
    throw new ProviderOutputError(
      `${this.model} gave invalid ${request.schemaName} output twice; last error: ${second.error}`,
    );
  }

  private async attempt<T>(request: StructuredRequest<T>, messages: OpenAI.ChatCompletionMessageParam[]): Promise<Attempt<T>> {
    let completion: OpenAI.ChatCompletion;
    request.usage.llmCalls += 1;
    const started = performance.now();
    const observe = (outcome: ModelCallOutcome, promptTokens = 0, completionTokens = 0) =>
      report(this.observer, { kind: 'chat', model: this.model, outcome, durationMs: performance.now() - started, promptTokens, completionTokens });
    try {
      completion = await this.client.chat.completions.create(
        {
          model: this.model,
          messages,
          temperature: 0,
          response_format: {
            type: 'json_schema',
            json_schema: { name: request.schemaName, strict: true, schema: request.jsonSchema },
          },
          ...(this.maxCompletionTokens === undefined ? {} : { max_completion_tokens: this.maxCompletionTokens }),
        },
        request.signal ? { signal: request.signal } : undefined,
      );
    } catch (error) {
      observe(outcomeOfError(error));
      throw mapChatError(error, this.model);
    }
    // A compatible server may answer valid JSON of another shape (even `null`): invalid output, as a wrong answer is.
    if (typeof completion !== 'object' || completion === null) {
      observe('invalid_output');
      return { ok: false, error: 'the endpoint answered without a chat completion', answer: '' };
    }
    const promptTokens = completion.usage?.prompt_tokens ?? 0;
    const completionTokens = completion.usage?.completion_tokens ?? 0;
    request.usage.promptTokens += promptTokens;
    request.usage.completionTokens += completionTokens;
    const result = this.interpret(completion, request.zodSchema);
    observe(result.ok ? 'ok' : 'invalid_output', promptTokens, completionTokens);
    return result;
  }

  private interpret<T>(completion: OpenAI.ChatCompletion, schema: z.ZodType<T>): Attempt<T> {
    const choice = completion.choices?.[0];
    const message = choice?.message;
    const answer = typeof message?.content === 'string' ? message.content : '';
    if (message?.refusal) {
      return { ok: false, error: `the model refused: ${message.refusal}`, answer: answer || message.refusal };
    }
    if (answer.trim() === '') {
      return { ok: false, error: 'the answer was empty; a JSON object was expected', answer: '' };
    }
    if (choice?.finish_reason === 'length') {
      return {
        ok: false,
        error: 'the answer was cut off at the token limit; keep it shorter (fewer, more concise items)',
        answer,
      };
    }
    return parseAnswer(answer, schema);
  }
}

/** Some compatible servers wrap the JSON in a Markdown fence even under structured output. */
export function stripJsonFence(text: string): string {
  const fenced = /^\s*```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)\r?\n?```\s*$/.exec(text);
  return (fenced ? fenced[1]! : text).trim();
}

function parseAnswer<T>(answer: string, schema: z.ZodType<T>): Attempt<T> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripJsonFence(answer));
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `the answer is not valid JSON (${detail})`, answer };
  }
  const result = schema.safeParse(parsed);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, error: `the JSON does not match the schema: ${formatIssues(result.error.issues)}`, answer };
}

/** "facts[0].importance: Too big: expected number to be <=10; …" — precise enough for the model to fix. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  const shown = issues.slice(0, 10).map((issue) => {
    let path = '';
    for (const key of issue.path) {
      path += typeof key === 'number' ? `[${key}]` : `${path === '' ? '' : '.'}${String(key)}`;
    }
    return `${path === '' ? '(root)' : path}: ${issue.message}`;
  });
  if (issues.length > shown.length) shown.push(`and ${issues.length - shown.length} more`);
  return shown.join('; ');
}

/** Transport trouble is retryable by the job queue; a request the server refuses is not. */
export function mapChatError(error: unknown, model: string): Error {
  if (error instanceof APIUserAbortError) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return new ProviderUnavailableError('llm_timeout', `chat request to ${model} timed out`, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new ProviderUnavailableError('llm_unavailable', `chat endpoint unreachable: ${error.message}`, {
      cause: error,
    });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const status = error.status;
    if (status === 429) {
      return new ProviderUnavailableError('llm_rate_limited', `chat request to ${model} was rate limited`, {
        cause: error,
      });
    }
    // 408 is the server's own timeout: as transient as ours.
    if (status === 408) {
      return new ProviderUnavailableError('llm_timeout', `chat request to ${model} timed out (HTTP 408)`, {
        cause: error,
      });
    }
    if (status >= 500) {
      return new ProviderUnavailableError('llm_unavailable', `chat request to ${model} failed with HTTP ${status}`, {
        cause: error,
      });
    }
    return new ProviderRejectedError('llm_request_rejected', status, `chat request to ${model} rejected with HTTP ${status}: ${error.message}`, {
      cause: error,
    });
  }
  // The SDK parses the answer itself; a body that is not JSON fails there.
  if (error instanceof SyntaxError) return new ProviderOutputError(`chat endpoint of ${model} answered with a body that is not JSON`, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

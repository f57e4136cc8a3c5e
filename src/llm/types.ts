import type { EmbedderKind } from '../config.js';

/**
 * Provider interfaces. The OpenAI-compatible implementations and the offline ones both satisfy
 * them, so the pipeline and recall never know which is running.
 */

/** What a job (or request) spent on model calls; providers add to it as they go. */
export interface Usage {
  llmCalls: number;
  embeddingCalls: number;
  promptTokens: number;
  completionTokens: number;
}

export function emptyUsage(): Usage {
  return { llmCalls: 0, embeddingCalls: 0, promptTokens: 0, completionTokens: 0 };
}

export interface Embedder {
  /** e.g. "openai:text-embedding-3-small" or "offline:lexical". */
  readonly name: string;
  /** Which family: recall weighs its vectors against the text arm by it. */
  readonly kind: EmbedderKind;
  readonly dimensions: number;
  /** One vector per text, in order, each `dimensions` long and L2-normalised. */
  embed(texts: readonly string[], usage?: Usage): Promise<number[][]>;
  /** Starts any slow loading now rather than on the first request (the local model's). */
  warmUp?(): void;
  /** Releases what the embedder holds (the local model's worker thread). */
  close?(): Promise<void>;
}

/** A provider failure the caller may retry (timeout, 429, 5xx, unreachable). */
export class ProviderUnavailableError extends Error {
  readonly retryable = true;
  constructor(
    readonly code: 'llm_timeout' | 'llm_rate_limited' | 'llm_unavailable' | 'embedding_unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderUnavailableError';
  }
}

/** The endpoint refused to serve the request (a 4xx but 408/429): sent again unchanged, it fails the same way. */
export class ProviderRejectedError extends Error {
  readonly retryable = false;
  constructor(
    readonly code: 'llm_request_rejected' | 'embedding_rejected' | 'embedding_input_too_long',
    readonly status: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderRejectedError';
  }
}

/** The model answered, but not with what was asked for (after the allowed correction retry). */
export class ProviderOutputError extends Error {
  readonly retryable = true;
  readonly code = 'llm_invalid_output';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderOutputError';
  }
}

/** How one model call ended, for metrics: bounded values only. */
export type ModelCallOutcome = 'ok' | 'invalid_output' | 'timeout' | 'rate_limited' | 'unavailable' | 'rejected' | 'aborted' | 'error';

/** One HTTP call to a chat or embedding endpoint, as its observer sees it (no content, ever). */
export interface ModelCall {
  kind: 'chat' | 'embedding';
  model: string;
  outcome: ModelCallOutcome;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
}

export type ModelCallObserver = (call: ModelCall) => void;

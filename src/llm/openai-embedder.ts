import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai';
import type { Config } from '../config.js';
import { createKeepAliveFetch } from './keep-alive-fetch.js';
import { outcomeOfError, report } from './observe.js';
import { ProviderOutputError, ProviderRejectedError, ProviderUnavailableError, type Embedder, type ModelCallObserver, type ModelCallOutcome, type Usage } from './types.js';

export interface OpenAIEmbedderOptions {
  client: OpenAI;
  model: string;
  dimensions: number;
  /** Inputs per HTTP request. */
  batchSize?: number;
  /** Told about every HTTP call (outcome, latency, tokens), for metrics; never sees content. */
  observer?: ModelCallObserver;
}

const DEFAULT_BATCH_SIZE = 256;

/** Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, TEI, ...). */
export class OpenAIEmbedder implements Embedder {
  readonly name: string;
  readonly kind = 'openai';
  readonly dimensions: number;
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly batchSize: number;
  private readonly observer: ModelCallObserver | undefined;

  constructor(options: OpenAIEmbedderOptions) {
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
    }
    if (!Number.isInteger(options.dimensions) || options.dimensions < 1) {
      throw new RangeError(`dimensions must be a positive integer, got ${options.dimensions}`);
    }
    this.client = options.client;
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.batchSize = batchSize;
    this.observer = options.observer;
    this.name = `openai:${options.model}`;
  }

  async embed(texts: readonly string[], usage?: Usage): Promise<number[][]> {
    const vectors: number[][] = [];
    // Sequential batches: a large input should not open a burst of parallel requests against a
    // rate-limited endpoint, and the job queue already runs jobs concurrently.
    for (let start = 0; start < texts.length; start += this.batchSize) {
      const batch = texts.slice(start, start + this.batchSize);
      vectors.push(...(await this.embedBatch(batch, usage)));
    }
    return vectors;
  }

  private async embedBatch(batch: string[], usage: Usage | undefined): Promise<number[][]> {
    let response: OpenAI.Embeddings.CreateEmbeddingResponse;
    const started = performance.now();
    const observe = (outcome: ModelCallOutcome, promptTokens = 0) =>
      report(this.observer, { kind: 'embedding', model: this.model, outcome, durationMs: performance.now() - started, promptTokens, completionTokens: 0 });
    try {
      if (usage) usage.embeddingCalls += 1;
      response = await this.client.embeddings.create({
        model: this.model,
        input: batch,
        dimensions: this.dimensions,
        // Explicit floats: the SDK otherwise asks for base64, which some compatible servers ignore.
        encoding_format: 'float',
      });
    } catch (error) {
      observe(outcomeOfError(error));
      throw mapEmbeddingError(error, this.model);
    }
    // Valid JSON of another shape (even `null`) is invalid output, checked in vectorsOf.
    const promptTokens = (response as Partial<OpenAI.Embeddings.CreateEmbeddingResponse> | null)?.usage?.prompt_tokens ?? 0;
    if (usage) usage.promptTokens += promptTokens;
    try {
      const vectors = this.vectorsOf(response, batch.length);
      observe('ok', promptTokens);
      return vectors;
    } catch (error) {
      observe('invalid_output', promptTokens);
      throw error;
    }
  }

  /** The response's vectors in input order, checked and normalised; ProviderOutputError otherwise. */
  private vectorsOf(response: OpenAI.Embeddings.CreateEmbeddingResponse, inputs: number): number[][] {
    const data = (response as Partial<OpenAI.Embeddings.CreateEmbeddingResponse> | null)?.data;
    if (!Array.isArray(data) || data.length !== inputs) {
      throw new ProviderOutputError(
        `embedding model ${this.model} returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${inputs} inputs`,
      );
    }
    // The API gives each vector its input's index; do not rely on the array order.
    const vectors = new Array<number[] | undefined>(inputs);
    for (const item of data) {
      if (typeof item !== 'object' || item === null) throw new ProviderOutputError(`embedding model ${this.model} returned an item that is not an object`);
      const index = item.index;
      if (!Number.isInteger(index) || index < 0 || index >= inputs || vectors[index] !== undefined) {
        throw new ProviderOutputError(`embedding model ${this.model} returned an invalid or repeated index ${index}`);
      }
      vectors[index] = this.normalise(item.embedding, index);
    }
    return vectors as number[][];
  }

  /**
   * Recall's cosine assumes unit vectors; not every compatible server normalises, and a wrong
   * length would fail at the database's vector column instead of here.
   */
  private normalise(embedding: unknown, index: number): number[] {
    if (!Array.isArray(embedding)) {
      throw new ProviderOutputError(`embedding model ${this.model} returned a non-array vector at index ${index}`);
    }
    if (embedding.length !== this.dimensions) {
      throw new ProviderOutputError(
        `embedding model ${this.model} returned ${embedding.length} dimensions at index ${index}, expected ${this.dimensions} (check EMBEDDING_DIMENSIONS)`,
      );
    }
    let norm = 0;
    for (const value of embedding) {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new ProviderOutputError(`embedding model ${this.model} returned a non-finite value at index ${index}`);
      }
      norm += value * value;
    }
    if (norm === 0) {
      throw new ProviderOutputError(`embedding model ${this.model} returned a zero vector at index ${index}`);
    }
    const scale = 1 / Math.sqrt(norm);
    return (embedding as number[]).map((value) => value * scale);
  }
}

/** How OpenAI and compatible servers (vLLM, TEI, Ollama) word an input longer than the model takes. */
const TOO_LONG = /context length|maximum (input )?length|too long|too many tokens|maximum.*tokens|exceeds.*tokens/i;

/** Transport trouble becomes retryable; a request the server refuses would fail the same way again. */
function mapEmbeddingError(error: unknown, model: string): Error {
  if (error instanceof APIUserAbortError) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return new ProviderUnavailableError('embedding_unavailable', `embedding request to ${model} timed out`, {
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    return new ProviderUnavailableError(
      'embedding_unavailable',
      `embedding endpoint unreachable: ${error.message}`,
      { cause: error },
    );
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const status = error.status;
    // 408 is a timeout on the server's side: as transient as our own.
    if (status === 429 || status === 408 || status >= 500) {
      const what = status === 429 ? 'rate limited' : `failed with HTTP ${status}`;
      return new ProviderUnavailableError('embedding_unavailable', `embedding request to ${model} ${what}: ${error.message}`, {
        cause: error,
      });
    }
    // An input over the model's context is the request's own doing; anything else refused (key, model,
    // dimensions) is the operator's to fix.
    const code = status === 413 || (status === 400 && TOO_LONG.test(error.message)) ? 'embedding_input_too_long' : 'embedding_rejected';
    return new ProviderRejectedError(code, status, `embedding request to ${model} rejected with HTTP ${status}: ${error.message}`, {
      cause: error,
    });
  }
  // The SDK parses a JSON answer itself; a body that is not JSON fails there.
  if (error instanceof SyntaxError) return new ProviderOutputError(`embedding model ${model} answered with a body that is not JSON`, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

/** One client for chat and embeddings, built only from the validated config. */
export function createOpenAIClient(llm: Config['llm']): OpenAI {
  return new OpenAI({
    // Local servers (Ollama, llama.cpp, vLLM) need no key, but the SDK refuses to start without one.
    apiKey: llm.apiKey ?? 'not-needed',
    // Passed explicitly so the SDK never falls back to reading the environment itself.
    baseURL: llm.baseUrl ?? 'https://api.openai.com/v1',
    organization: null,
    project: null,
    timeout: llm.timeoutMs,
    // The job queue owns retries (with backoff and attempt limits); SDK retries would multiply them.
    maxRetries: 0,
    fetch: createKeepAliveFetch(),
  });
}

import { EngramError } from './error.js';
import type { FieldError } from './types.js';

/** A token, or a function that returns one; the function is called before every attempt, so tokens can rotate. */
export type TokenSource = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** Where the service is; defaults to `ENGRAM_URL`, else `http://127.0.0.1:8080`. */
  baseURL?: string | undefined;
  /** Bearer token (a JWT) or a function returning one; defaults to `ENGRAM_TOKEN`. */
  token?: TokenSource | undefined;
  /** Retries of a 429 or 503 answer (default 2); 0 turns retrying off. */
  maxRetries?: number | undefined;
  /** The longest wait before a retry (default 60 000 ms): an answer asking for longer is thrown at once. */
  maxRetryDelayMs?: number | undefined;
  /** Per attempt (default 60 000 ms). */
  timeoutMs?: number | undefined;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string> | undefined;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch | undefined;
}

/** Options of a single call; they override the client's. */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
  headers?: Record<string, string> | undefined;
}

interface Request extends RequestOptions {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  body?: unknown;
}

const RETRYABLE = new Set([429, 503]);

export class Transport {
  readonly baseURL: string;
  private readonly token: TokenSource;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly timeoutMs: number;
  private readonly defaultHeaders: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    const token = options.token ?? process.env.ENGRAM_TOKEN;
    if (token === undefined || token === '') throw new Error('Engram: no token; pass { token } or set ENGRAM_TOKEN');
    this.token = token;
    this.baseURL = (options.baseURL ?? process.env.ENGRAM_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 2;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.defaultHeaders = options.defaultHeaders ?? {};
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  async request<T>(request: Request): Promise<T> {
    const maxRetries = request.maxRetries ?? this.maxRetries;
    for (let attempt = 0; ; attempt++) {
      const response = await this.attempt(request);
      if (response.ok) return (response.status === 204 ? undefined : await response.json()) as T;
      const error = await toError(response);
      const delay = retryDelayMs(error.retryAfter, attempt);
      if (!RETRYABLE.has(response.status) || attempt >= maxRetries || delay > this.maxRetryDelayMs) throw error;
      await sleep(delay, request.signal);
    }
  }

  private async attempt(request: Request): Promise<Response> {
    const url = new URL(this.baseURL + request.path);
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const token = typeof this.token === 'function' ? await this.token() : this.token;
    const headers: Record<string, string> = { accept: 'application/json', ...this.defaultHeaders, ...request.headers, authorization: `Bearer ${token}` };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(request.timeoutMs ?? this.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    try {
      return await this.fetchImpl(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal,
      });
    } catch (cause) {
      if (request.signal?.aborted) throw new EngramError({ status: undefined, code: 'aborted', detail: 'The request was aborted.', cause });
      if (timeout.aborted) throw new EngramError({ status: undefined, code: 'timeout', detail: `No answer from ${url.origin} in time.`, cause });
      throw new EngramError({ status: undefined, code: 'connection_error', detail: `Could not reach ${url.origin}: ${String((cause as Error).cause ?? cause)}`, cause });
    }
  }
}

/** Reads a problem+json answer (or whatever came instead) into an EngramError. */
async function toError(response: Response): Promise<EngramError> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page, say): keep the text as the detail.
  }
  const problem = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const str = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return new EngramError({
    status: response.status,
    code: str(problem.code) ?? `http_${response.status}`,
    detail: str(problem.detail) ?? (text.slice(0, 500) || response.statusText),
    requestId: str(problem.request_id) ?? response.headers.get('x-request-id') ?? undefined,
    errors: Array.isArray(problem.errors) ? (problem.errors as FieldError[]) : undefined,
    retryAfter: parseRetryAfter(response.headers.get('retry-after')),
    body,
  });
}

/** `Retry-After` as seconds: a number of seconds, or an HTTP date. */
export function parseRetryAfter(header: string | null): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/** The service's `Retry-After` when it gave one; else exponential backoff from half a second, with jitter. */
function retryDelayMs(retryAfterSeconds: number | undefined, attempt: number): number {
  if (retryAfterSeconds !== undefined) return retryAfterSeconds * 1000;
  return Math.min(8000, 500 * 2 ** attempt) * (0.75 + Math.random() * 0.25);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new EngramError({ status: undefined, code: 'aborted', detail: 'The request was aborted.' }));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new EngramError({ status: undefined, code: 'aborted', detail: 'The request was aborted.' }));
    }, { once: true });
  });
}

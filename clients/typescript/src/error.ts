import type { FieldError } from './types.js';

/**
 * What a failed call throws. For an answer of the service, `status`, `code`, `detail`, `requestId`
 * and `errors` come from its problem+json body (RFC 9457); for a request that got no answer
 * (connection refused, timed out, aborted) `status` is undefined and `code` says which.
 */
export class EngramError extends Error {
  override readonly name = 'EngramError';
  /** The HTTP status, or undefined when no answer came. */
  readonly status: number | undefined;
  /** The service's stable code (`validation_failed`, `not_found`, `rate_limited`, …), or `connection_error` / `timeout` / `aborted`. */
  readonly code: string;
  /** What went wrong with this request, as the service said it. */
  readonly detail: string;
  /** The request's `X-Request-Id`, to quote when reporting a problem. */
  readonly requestId: string | undefined;
  /** For invalid input, each invalid field. */
  readonly errors: FieldError[] | undefined;
  /** Seconds the service asked to wait (`Retry-After` of a 429 or 503). */
  readonly retryAfter: number | undefined;
  /** The parsed body of the answer, as sent. */
  readonly body: unknown;

  constructor(init: {
    status: number | undefined;
    code: string;
    detail: string;
    requestId?: string | undefined;
    errors?: FieldError[] | undefined;
    retryAfter?: number | undefined;
    body?: unknown;
    cause?: unknown;
  }) {
    super(init.status === undefined ? init.detail : `${init.status} ${init.code}: ${init.detail}`, { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.requestId = init.requestId;
    this.errors = init.errors;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }
}

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { DomainError, type ErrorCode, type FieldError } from '../shared/errors.js';

const STATUS: Record<ErrorCode, ContentfulStatusCode> = {
  validation_failed: 400,
  malformed_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

const TITLE: Record<ErrorCode, string> = {
  validation_failed: 'Invalid request',
  malformed_json: 'Malformed JSON',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  idempotency_conflict: 'Idempotency key reused with another body',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal: 'Internal error',
  unavailable: 'Service unavailable',
};

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
}

export function statusOf(code: ErrorCode): ContentfulStatusCode {
  return STATUS[code];
}

/** The RFC 9457 body of an error; also for answers written outside Hono (the HTTP parser's). */
export function problemBody(error: DomainError, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: `https://engram.dev/problems/${error.code.replaceAll('_', '-')}`,
    title: TITLE[error.code],
    status: STATUS[error.code],
    detail: error.message,
    code: error.code,
    request_id: requestId,
  };
  if (error.details.errors?.length) body.errors = error.details.errors;
  return body;
}

/** Renders an RFC 9457 problem; the only place an error becomes an HTTP response. */
export function problem(c: Context, error: DomainError): Response {
  const status = STATUS[error.code];
  const body = problemBody(error, c.get('requestId') ?? '');
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  // RFC 6750 §3.1: no error code when the request carried no credentials at all.
  if (error.code === 'unauthorized') {
    headers['www-authenticate'] = error.details.credentialsSent === false ? 'Bearer realm="engram"' : 'Bearer realm="engram", error="invalid_token"';
  }
  if (error.details.allow) headers.allow = error.details.allow.join(', ');
  if (error.details.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.details.retryAfterSeconds);
  return c.body(JSON.stringify(body), status, headers);
}

/**
 * Domain errors carry a code, never an HTTP status: the HTTP layer maps codes to statuses in one
 * place (src/http/problem.ts), and workers map them to retry decisions.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'malformed_json'
  | 'unsupported_media_type'
  | 'payload_too_large'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'idempotency_conflict'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

export interface FieldError {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: { errors?: FieldError[]; retryAfterSeconds?: number; credentialsSent?: boolean; allow?: string[] } = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const notFound = (what = 'resource') => new DomainError('not_found', `${what} not found`);
export const forbidden = (message: string) => new DomainError('forbidden', message);
export const validationFailed = (message: string, errors: FieldError[] = []) =>
  new DomainError('validation_failed', message, { errors });

import { AsyncLocalStorage } from 'node:async_hooks';

/** Rejects when `promise` has not settled within `ms` (the promise itself keeps running). */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), ms);
    }),
  ]);
}

/**
 * The deadline of the HTTP request a piece of work runs for (requestDeadline in http/middleware.ts).
 * Once the request has been answered 503 for taking too long, a transaction it started must not
 * commit after all: the client was told to retry, and a retry would apply the write twice. One
 * whose COMMIT is already on its way is waited for instead, and answered as it ends.
 */
export interface RequestDeadline {
  /** Set when the request was answered 503: a transaction of it that has not committed rolls back. */
  expired: boolean;
  /** Transactions of the request whose COMMIT was sent and not yet acknowledged. */
  committing: number;
  /** Set once a write of the request has committed: from then on its outcome is answered, never a 503. */
  committed: boolean;
  /**
   * The request's bound. Each statement of its transactions is cancelled at twice it
   * (statement_timeout): a statement stuck on a lock held forever fails and its COMMIT becomes a
   * rollback, so even a request waited for because its COMMIT was sent ends, as a true 503.
   */
  timeoutMs: number;
}

export const requestDeadlines = new AsyncLocalStorage<RequestDeadline>();

/** A transaction rolled back because its request had already been answered as timed out. */
export class RequestExpiredError extends Error {
  constructor() {
    super('the request was answered as timed out before this transaction committed; rolled back');
    this.name = 'RequestExpiredError';
  }
}

/**
 * Runs `work` outside any request's deadline: for background loops (job polls, webhook claims,
 * notification listeners) that a request may happen to start, whose transactions are not its own.
 */
export function detachedFromRequest<T>(work: () => T): T {
  return requestDeadlines.exit(work);
}

import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ModelCall, ModelCallObserver, ModelCallOutcome } from './types.js';

/** The outcome label of a call that threw, from the `openai` client's own error classes. */
export function outcomeOfError(error: unknown): ModelCallOutcome {
  if (error instanceof APIUserAbortError) return 'aborted';
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'unavailable';
  if (error instanceof APIError && typeof error.status === 'number') {
    if (error.status === 429) return 'rate_limited';
    if (error.status === 408) return 'timeout';
    if (error.status >= 500) return 'unavailable';
    return 'rejected';
  }
  return 'error';
}

/** Reports a call to an observer that must never break the call it watches. */
export function report(observer: ModelCallObserver | undefined, call: ModelCall): void {
  if (!observer) return;
  try {
    observer(call);
  } catch {
    // Metrics are best effort.
  }
}

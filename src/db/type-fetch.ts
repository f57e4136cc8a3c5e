import { isDatabaseUnavailable } from './client.js';

/**
 * postgres.js 3.4.9 asks every new connection for the database's array types and does not await
 * that query: when the connection is lost during it (a restart, a terminated backend, a reset
 * socket, a connect that timed out: any error that means the database could not be reached), the
 * rejection has no handler and Node ends the process. The connection's own close handling already
 * reconnects, so that one rejection is safe to drop; nothing else is.
 */
export function isUnawaitedTypeFetchFailure(reason: unknown): boolean {
  if (typeof reason !== 'object' || reason === null) return false;
  const { query } = reason as { query?: unknown };
  return typeof query === 'string' && query.includes('b.typarray') && isDatabaseUnavailable(reason);
}

let installed = false;

/** Drops only the type query's orphaned rejection; any other unhandled rejection still ends the process. */
export function guardUnawaitedTypeFetch(): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    if (isUnawaitedTypeFetchFailure(reason)) return;
    throw reason;
  });
}

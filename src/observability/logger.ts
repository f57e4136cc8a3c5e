import pino, { type Logger } from 'pino';

/** The longest a log line waits in the buffer before it is written. */
export const LOG_FLUSH_MS = 200;
/** Lines are written once this many bytes wait (about 15 request lines), or every LOG_FLUSH_MS. */
export const LOG_BUFFER_BYTES = 4096;

/**
 * The service's logger: JSON lines on stdout, written in batches. pino's default writes every
 * line on its own through libuv's thread pool (a thread woken, then the event loop woken back:
 * measured with strace, the largest share of a small request's system calls); a batch is one
 * write. A line waits at most LOG_FLUSH_MS; pino writes what is left when the process exits.
 */
export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES });
  const flush = setInterval(() => {
    // flush() throws while the destination is still opening or once it is destroyed.
    try {
      destination.flush();
    } catch {
      // nothing to write yet, or the stream is gone
    }
  }, LOG_FLUSH_MS);
  flush.unref();
  return pino({ level }, destination);
}

import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener, RequestError, type HttpBindings, type Http2Bindings } from '@hono/node-server';
import { DomainError } from '../shared/errors.js';
import { problemBody } from './problem.js';

export interface ServeOptions {
  fetch: (request: Request, env: HttpBindings | Http2Bindings) => Response | Promise<Response>;
  port: number;
  hostname: string;
}

/**
 * Serves a Hono app over node:http so that every answer is problem+json, including the two that
 * never reach the app: a request Node's HTTP parser rejects (a bad request line or header, no
 * Host), and one @hono/node-server cannot turn into a Request (a backslash in the path, an
 * unusable Host). Both would otherwise get an empty 400.
 */
export function serveHttp(options: ServeOptions, onListening?: (info: AddressInfo) => void): Server {
  const listener = getRequestListener(
    (request, env) =>
      // HTTP/1.1 requires Host (RFC 9112 §3.2); an HTTP/1.0 health check may omit it and is served.
      env.incoming.httpVersion === '1.1' && !env.incoming.headers.host
        ? problemResponse(new DomainError('validation_failed', 'an HTTP/1.1 request needs a Host header'))
        : options.fetch(request, env),
    {
      hostname: options.hostname,
      errorHandler: (error) =>
        problemResponse(
          error instanceof RequestError
            ? new DomainError('validation_failed', 'the request line or Host header is not usable')
            : new DomainError('internal', 'an internal error occurred'),
        ),
    },
  );
  // Node's own missing-Host 400 is empty: the listener above refuses it with a problem instead.
  const server = createServer({ requireHostHeader: false }, listener);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => answerClientError(error, socket));
  server.listen(options.port, options.hostname, () => onListening?.(server.address() as AddressInfo));
  return server;
}

function problemResponse(error: DomainError): Response {
  const requestId = randomUUID();
  const body = problemBody(error, requestId);
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': requestId, connection: 'close' },
  });
}

/** As Node's default clientError handler, but with a problem+json body; the connection then closes. */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, detail] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'the request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request was not received in time']
        : [400, 'Bad Request', 'the request is not valid HTTP/1.1'];
  const requestId = randomUUID();
  const body = JSON.stringify({ ...problemBody(new DomainError('validation_failed', detail), requestId), status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
}

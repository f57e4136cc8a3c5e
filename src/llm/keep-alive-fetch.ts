import http from 'node:http';
import https from 'node:https';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/**
 * A fetch for the OpenAI client: one request over node:http(s) on keep-alive connections, the
 * answer buffered and handed back as a Response. Node's own fetch (undici's web streams) costs a
 * model call about half a millisecond more here, which an add or a recall pays on every embedding.
 * A body it does not know (a stream, a form) goes to the global fetch.
 *
 * What the OpenAI client relies on is kept: a signal aborts the request with an AbortError (the
 * client's timeout), a refused or broken connection rejects (its connection error), redirects are
 * not followed (the API answers none), and a compressed answer is decoded.
 */
export function createKeepAliveFetch(): typeof fetch {
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };
  const keepAliveFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const body = init?.body;
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent || input instanceof Request || !(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array)) {
      return fetch(input, init);
    }
    const request = {
      url,
      agent,
      method: (init?.method ?? 'GET').toUpperCase(),
      headers: headerRecord(init?.headers, body ?? undefined),
      body: body ?? undefined,
      signal: init?.signal ?? undefined,
    };
    try {
      return await send(request);
    } catch (error) {
      // A kept-alive connection the server closed while it sat idle fails as soon as it is reused:
      // sent again once, on a new one. A server that died after reading the request fails the same
      // way; a model call changes nothing but its cost, so a rare second call is the price.
      if (error instanceof StaleConnectionError) return send(request);
      throw error;
    }
  };
  return keepAliveFetch as typeof fetch;
}

interface OutgoingRequest {
  url: URL;
  agent: http.Agent;
  method: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
  signal: AbortSignal | undefined;
}

class StaleConnectionError extends Error {}

function headerRecord(headers: RequestInit['headers'], body: string | Uint8Array | undefined): Record<string, string> {
  const record: Record<string, string> = {};
  new Headers(headers).forEach((value, name) => {
    record[name] = value;
  });
  if (body !== undefined) record['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  return record;
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('This operation was aborted', 'AbortError');
}

function send(outgoing: OutgoingRequest): Promise<Response> {
  const { signal } = outgoing;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const transport = outgoing.url.protocol === 'https:' ? https : http;
  return new Promise<Response>((resolve, reject) => {
    let answered = false;
    const request = transport.request(outgoing.url, { method: outgoing.method, agent: outgoing.agent, headers: outgoing.headers }, (incoming) => {
      answered = true;
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('error', fail);
      incoming.on('close', () => {
        if (!incoming.complete) fail(new Error('the connection closed before the answer was complete'));
      });
      incoming.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        try {
          resolve(toResponse(incoming, Buffer.concat(chunks)));
        } catch (error) {
          reject(error);
        }
      });
    });
    function fail(error: Error): void {
      signal?.removeEventListener('abort', onAbort);
      const stale = !answered && request.reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET';
      reject(stale ? new StaleConnectionError(error.message, { cause: error }) : error);
    }
    function onAbort(): void {
      const error = abortError(signal!);
      request.destroy(error);
      reject(error);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('error', fail);
    request.end(outgoing.body);
  });
}

function toResponse(incoming: http.IncomingMessage, raw: Buffer): Response {
  const headers = new Headers();
  const encoding = (incoming.headers['content-encoding'] ?? '').trim().toLowerCase();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    const name = incoming.rawHeaders[i]!;
    // The body below is decoded, so what it was encoded with (and its encoded length) no longer holds.
    if (encoding && /^content-(encoding|length)$/i.test(name)) continue;
    headers.append(name, incoming.rawHeaders[i + 1]!);
  }
  const status = incoming.statusCode ?? 502;
  const noBody = status === 204 || status === 205 || status === 304;
  return new Response(noBody ? null : decode(raw, encoding), { status, statusText: incoming.statusMessage ?? '', headers });
}

function decode(raw: Buffer, encoding: string): Buffer {
  switch (encoding) {
    case '':
    case 'identity':
      return raw;
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(raw);
    case 'deflate':
      return inflateSync(raw);
    case 'br':
      return brotliDecompressSync(raw);
    default:
      throw new Error(`the answer is encoded with ${encoding}, which is not supported`);
  }
}

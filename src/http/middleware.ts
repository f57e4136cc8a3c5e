import { createHash, randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { matchedRoutes } from 'hono/route';
import type { Logger } from 'pino';
import { requireScope, type Principal, type Scope } from '../auth/principal.js';
import type { TokenVerifier } from '../auth/verifier.js';
import { AuthenticationError, KeySetUnavailableError } from '../auth/verifier.js';
import { DomainError } from '../shared/errors.js';
import { requestDeadlines, type RequestDeadline } from '../shared/timeout.js';
import { problem } from './problem.js';
import type { TenantRateLimiter } from './rate-limit.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:@\/+=-]{1,128}$/;

/** Echoes a caller's X-Request-Id when it is sane, else generates one. */
export function requestId(): MiddlewareHandler {
  return async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const id = incoming && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', id);
    c.header('X-Request-Id', id);
    await next();
    c.res.headers.set('X-Request-Id', id);
  };
}

/**
 * The body limit, and `Connection: close` on any answer given before the request's body was read
 * to its end (a 413, or a 401/415/… decided from the headers): the unread rest of the body would
 * otherwise sit in the kept-alive connection ahead of the client's next request, which is lost.
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: (c) => problem(c, new DomainError('payload_too_large', `the body exceeds ${maxBytes} bytes`)),
  });
  return async (c, next) => {
    const sent = c.req.raw;
    // hono's bodyLimit reads `raw.body` first, which makes @hono/node-server build a full Request
    // for every request (measured: the costliest step of a small one). A request without a body,
    // or with a Content-Length and no Transfer-Encoding, is decided from its headers, exactly as
    // bodyLimit decides it; only a streamed body goes through bodyLimit's counting.
    const bodiless = c.req.method === 'GET' || c.req.method === 'HEAD';
    const length = c.req.header('content-length');
    if (bodiless || (length !== undefined && c.req.header('transfer-encoding') === undefined)) {
      if (!bodiless && parseInt(length!, 10) > maxBytes) c.res = problem(c, new DomainError('payload_too_large', `the body exceeds ${maxBytes} bytes`));
      else await next();
      if (bodyLeftUnread(c, sent)) c.res.headers.set('connection', 'close');
      return;
    }
    const refused = await limit(c, next);
    if (refused instanceof Response) c.res = refused;
    if (bodyLeftUnread(c, sent)) c.res.headers.set('connection', 'close');
  };
}

function bodyLeftUnread(c: Context, sent: Request): boolean {
  const length = c.req.header('content-length');
  if (!c.req.header('transfer-encoding') && (length === undefined || Number(length) === 0)) return false;
  // Behind @hono/node-server the socket's own stream says whether the body was read to its end.
  const incoming = (c.env as { incoming?: { readableEnded?: unknown } } | undefined)?.incoming;
  if (typeof incoming?.readableEnded === 'boolean') return !incoming.readableEnded;
  return c.req.raw === sent && !sent.bodyUsed;
}

/**
 * A bound on the whole request: when it runs past `ms` (a wait nothing else bounded) the caller gets
 * 503 with Retry-After, and a write of it that has not committed rolls back instead (its
 * transactions read the deadline: shared/timeout.ts), so a retry applies it once. A request that
 * has committed a write, or is committing one, is waited for and answered with its outcome.
 */
export function requestDeadline(ms: number): MiddlewareHandler {
  return async (c, next) => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), ms);
    });
    // Its transactions read this (shared/timeout.ts): none of them commits once the 503 is out.
    const deadline: RequestDeadline = { expired: false, committing: 0, committed: false, timeoutMs: ms };
    const work = requestDeadlines.run(deadline, () => next()).then(() => 'done' as const);
    try {
      if ((await Promise.race([work, expired])) === 'expired') {
        // A COMMIT already sent decides the outcome: answer it, not a 503 that would invite a retry.
        if (deadline.committing > 0 || deadline.committed) {
          await work;
          return;
        }
        deadline.expired = true;
        work.catch(() => {});
        c.res = problem(c, new DomainError('unavailable', `the request took longer than ${ms} ms; retry later`, { retryAfterSeconds: 5 }));
      }
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Verifies the bearer token once per request, however many protected prefixes the path matches. */
export function authenticate(verifier: TokenVerifier): MiddlewareHandler {
  return async (c, next) => {
    if (c.get('principal')) return next();
    const header = c.req.header('authorization');
    const match = header ? /^Bearer\s+([A-Za-z0-9._~+\/=-]+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new DomainError('unauthorized', header ? 'the Authorization header must be "Bearer <token>"' : 'a bearer token is required', {
        credentialsSent: Boolean(header),
      });
    }
    try {
      c.set('principal', await verifier.verify(match[1]!));
    } catch (error) {
      if (error instanceof AuthenticationError) throw new DomainError('unauthorized', error.message);
      if (error instanceof KeySetUnavailableError) throw new DomainError('unavailable', error.message, { retryAfterSeconds: 5 });
      throw error;
    }
    await next();
  };
}

/**
 * One count per tenant and request across every protected route (one limiter for the whole app,
 * counted once however many prefixes match), cluster-wide with Redis: see rate-limit.ts.
 */
export function rateLimitPerTenant(limiter: TenantRateLimiter | undefined): MiddlewareHandler {
  const counted = new WeakSet<Request>();
  return async (c, next) => {
    if (!limiter || counted.has(c.req.raw)) return next();
    counted.add(c.req.raw);
    const { allowed, retryAfterSeconds } = await limiter.consume(c.get('principal').tenantId);
    if (!allowed) throw new DomainError('rate_limited', 'too many requests this minute for this tenant', { retryAfterSeconds });
    return next();
  };
}

/**
 * Checks a scope before anything else about the request (body, ids) is looked at, so a caller
 * without the scope learns nothing but 403.
 */
export function scope(required: Scope): MiddlewareHandler {
  return async (c, next) => {
    requireScope(c.get('principal'), required);
    await next();
  };
}

/** A tenant id as logs may carry it: a short sha256, enough to correlate lines, not to read. */
export function tenantHash(tenantId: string): string {
  let hash = tenantHashes.get(tenantId);
  if (hash === undefined) {
    // Every request logs one: the few tenants a process serves are hashed once, within a bound.
    if (tenantHashes.size >= 10_000) tenantHashes.clear();
    hash = createHash('sha256').update(tenantId, 'utf8').digest('hex').slice(0, 16);
    tenantHashes.set(tenantId, hash);
  }
  return hash;
}
const tenantHashes = new Map<string, string>();

/**
 * The route that answered, as an OpenAPI-style template (`/memories/{id}`), never the raw path
 * (which may carry ids, or a user_id in its query); `unmatched` when no route matched.
 */
export function routeTemplate(c: Context): string {
  const explicit = c.get('routeTemplate') as string | undefined;
  if (explicit) return explicit;
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i]!;
    // app.use() middleware registers as ALL; the handler that answers is the last method route.
    if (route.method !== 'ALL') return templateOf(route.path);
  }
  return 'unmatched';
}

/** Route paths are the app's own, a bounded set: each is turned into its template once. */
const templates = new Map<string, string>();
function templateOf(path: string): string {
  let template = templates.get(path);
  if (template === undefined) {
    template = path.replace(/:([A-Za-z_][A-Za-z0-9_]*)(\{[^}]*\})?\??/g, '{$1}');
    templates.set(path, template);
  }
  return template;
}

export interface HttpObserver {
  observeHttp(method: string, route: string, status: number, durationMs: number): void;
}

/**
 * One JSON log line per request (request id, method, route template, status, duration, a hash of
 * the tenant) and the HTTP metrics. Never a path, query, header, body or token.
 */
export function observeRequests(logger: Logger, metrics?: HttpObserver): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const durationMs = performance.now() - started;
      const route = routeTemplate(c);
      const status = c.res.status;
      const method = c.req.method;
      metrics?.observeHttp(method, route, status, durationMs);
      const principal = c.get('principal') as Principal | undefined;
      const line = {
        requestId: c.get('requestId'),
        method,
        route,
        status,
        durationMs: Math.round(durationMs * 10) / 10,
        ...(principal ? { tenant: tenantHash(principal.tenantId) } : {}),
      };
      if (status >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
    }
  };
}

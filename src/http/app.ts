import { HTTPException } from 'hono/http-exception';
import type { TokenVerifier } from '../auth/verifier.js';
import { isDataException, isDatabaseUnavailable, sqlState } from '../db/client.js';
import { ProviderOutputError, ProviderRejectedError, ProviderUnavailableError } from '../llm/types.js';
import { registerMemoryRoutes } from '../memories/routes.js';
import { registerRecallRoutes } from '../recall/routes.js';
import { DomainError } from '../shared/errors.js';
import type { Services } from '../shared/context.js';
import type { AppEnv } from './env.js';
import { SCOPES } from '../auth/principal.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import { registerDocsRoutes } from './docs.js';
import { apiDocs, health, metricsRoute, openApiJson, ready } from './routes.js';
import { createRouter, type Router } from './routing.js';
import { allowedMethods } from './methods.js';
import { authenticate, limitBody, observeRequests, rateLimitPerTenant, requestDeadline, requestId, scope } from './middleware.js';
import { openApiDocument } from './openapi.js';
import { createRateLimiter, type TenantRateLimiter } from './rate-limit.js';
import { problem } from './problem.js';
import { RequestExpiredError, withTimeout } from '../shared/timeout.js';
import { MAX_WAIT_SECONDS } from '../events/job-wait.js';
import { IMPORT_PATH, registerPortabilityRoutes } from '../portability/routes.js';
import { unsupportedMediaType } from './input.js';

export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
  /**
   * Whether the instance can serve without it. The database is critical (503 while it is down);
   * Redis is not (the outbox keeps accepting jobs), so it is reported as `degraded` with a 200.
   */
  critical: boolean;
}

export interface AppDependencies {
  services: Services;
  verifier: TokenVerifier;
  readiness?: ReadinessCheck[];
  /** Extra route groups (extraction, jobs, admin) registered by the modules that own them. */
  extraRoutes?: Array<(app: Router) => void>;
  /** The runtime's metrics, served at /metrics; a private set when omitted. */
  metrics?: Metrics;
  /** The tenants' rate limiter (cluster-wide with Redis); a per-process one from the config when omitted. */
  rateLimiter?: TenantRateLimiter | undefined;
}

const PROTECTED_PREFIXES = ['/memories', '/memories/*', '/jobs/*', '/admin/*', '/settings', '/webhooks', '/webhooks/*'];

/** The whole HTTP surface, without listening: main.ts serves it, tests call app.request(). */
export function buildApp(deps: AppDependencies): Router {
  const { services } = deps;
  const app = createRouter();

  const metrics = deps.metrics ?? createMetrics({ defaultMetrics: false });

  app.use('*', requestId());
  app.use('*', observeRequests(services.logger, metrics));
  // Long-polls get their wait on top of the request bound; an import is bounded by its size instead.
  const deadline = requestDeadline(services.config.timeouts.requestMs);
  const waitingDeadline = requestDeadline(services.config.timeouts.requestMs + MAX_WAIT_SECONDS * 1000);
  app.use('*', (c, next) => (c.req.path === IMPORT_PATH ? next() : c.req.query('wait') !== undefined ? waitingDeadline(c, next) : deadline(c, next)));
  const bodyLimit = limitBody(services.config.http.maxBodyBytes);
  const importLimit = limitBody(services.config.portability.maxImportBytes);
  app.use('*', (c, next) => (c.req.path === IMPORT_PATH ? importLimit(c, next) : bodyLimit(c, next)));

  app.use('*', allowedMethods());

  app.openapi(health, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(ready, async (c) => {
    const checks: ReadinessCheck[] = [{ name: 'database', critical: true, check: () => services.database.ping() }, ...(deps.readiness ?? [])];
    const results = await Promise.all(
      checks.map(async ({ name, check, critical }) => {
        try {
          await withTimeout(check(), services.config.timeouts.readinessMs);
          return { name, critical, ok: true };
        } catch {
          return { name, critical, ok: false };
        }
      }),
    );
    const down = results.filter((r) => !r.ok);
    const status = down.length === 0 ? 'ready' : down.some((r) => r.critical) ? 'unavailable' : 'degraded';
    const states = Object.fromEntries(results.map((r) => [r.name, r.ok ? ('ok' as const) : r.critical ? ('unavailable' as const) : ('degraded' as const)]));
    return status === 'unavailable' ? c.json({ status, checks: states }, 503) : c.json({ status, checks: states }, 200);
  });
  app.openapi(openApiJson, (c) => c.json(openApiDocument() as { openapi: string; info: { title: string; version: string }; paths: Record<string, unknown> }, 200));
  registerDocsRoutes(app, apiDocs);
  app.openapi(metricsRoute, async (c) => c.body(await metrics.render(), 200, { 'content-type': metrics.contentType }));

  // One instance of each for every prefix: a request is verified once and counted once, against
  // one counter per tenant, whichever protected route it reaches.
  const authenticated = authenticate(deps.verifier);
  const limited = rateLimitPerTenant(
    deps.rateLimiter ??
      createRateLimiter({ perMinute: services.config.http.rateLimitPerMinute, keyPrefix: services.config.jobs.queuePrefix, logger: services.logger }),
  );
  for (const prefix of PROTECTED_PREFIXES) app.use(prefix, authenticated, limited);
  // The operators' pages span tenants: a tenant's own admin scope never reaches them.
  app.use('/admin/*', scope(SCOPES.operator));

  registerRecallRoutes(app, services);
  registerPortabilityRoutes(app, services);
  registerMemoryRoutes(app, services);
  for (const register of deps.extraRoutes ?? []) register(app);

  app.notFound((c) => problem(c, new DomainError('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`)));
  app.onError((error, c) => problem(c, toDomainError(error, services, c.get('requestId'))));
  return app;
}

function toDomainError(error: unknown, services: Services, requestId: string | undefined): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof HTTPException) {
    if (error.status === 413) return new DomainError('payload_too_large', 'the body is too large');
    if (error.status === 400) return new DomainError('malformed_json', error.message || 'the request is malformed');
    if (error.status === 415) return unsupportedMediaType();
  }
  // The request's deadline (shared/timeout.ts): a write rolled back once the request was answered
  // 503, or a statement cancelled at its bound (statement_timeout, 57014); either way rolled back.
  const expired = error instanceof RequestExpiredError;
  if (expired || sqlState(error) === '57014') {
    services.logger.warn({ requestId, cause: expired ? 'answered as timed out' : 'statement timeout' }, 'a transaction outlasted the request deadline and was rolled back');
    return new DomainError('unavailable', 'the request took too long; retry later', { retryAfterSeconds: 5 });
  }
  if (isDatabaseUnavailable(error)) {
    services.logger.warn({ requestId, err: errorSummary(error) }, 'database unavailable');
    return new DomainError('unavailable', 'the database is unavailable; retry later', { retryAfterSeconds: 5 });
  }
  if (isDataException(error)) {
    // The database's message may quote the value; the client hears only that a value was refused.
    services.logger.warn({ requestId, err: errorSummary(error) }, 'database refused a value of the request');
    const message = 'a value in the request is outside what the database can store';
    return new DomainError('validation_failed', message, { errors: [{ path: '', message }] });
  }
  if (error instanceof ProviderRejectedError && error.code === 'embedding_input_too_long') {
    return new DomainError('validation_failed', 'a text is longer than the embedding model accepts; shorten it or split it');
  }
  if (error instanceof ProviderRejectedError) {
    // A refused key, model or dimension: the operator's to fix, and the same request fails again until then.
    services.logger.error({ requestId, code: error.code, status: error.status, cause: error.message }, 'model provider refused the request');
    return new DomainError('unavailable', 'the embedding provider refused the request; the operator has to fix its configuration');
  }
  if (error instanceof ProviderUnavailableError || error instanceof ProviderOutputError) {
    // Our own wording of the provider's failure (never the texts sent): the operator needs the cause.
    services.logger.warn({ requestId, code: error.code, cause: error.message }, 'model provider unavailable');
    return new DomainError('unavailable', 'the embedding provider is unavailable; retry later', { retryAfterSeconds: 5 });
  }
  services.logger.error({ requestId, err: errorSummary(error) }, 'unhandled error');
  return new DomainError('internal', 'an internal error occurred; the request id identifies it in the logs');
}

/**
 * Name, code and stack frames: never a message, which may quote request data (a failed query's
 * message lists its parameters, i.e. memory content or a transcript).
 */
export function errorSummary(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error };
  const code = sqlState(error) ?? ('code' in error ? String((error as { code?: unknown }).code) : undefined);
  const frames = (error.stack ?? '')
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .slice(0, 6)
    .join('\n');
  return { name: error.name, code, stack: frames };
}

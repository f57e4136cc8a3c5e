/**
 * How a route is declared: once, with its zod schemas, and openapi.yaml is generated from it
 * (`npm run openapi`; test/integration/openapi.test.ts fails when the committed file differs).
 *
 *   // src/<module>/routes.ts
 *   export const getThing = defineRoute({
 *     method: 'get',
 *     path: '/things/{id}',                       // OpenAPI template; Hono's `:id` is derived
 *     operationId: 'getThing',
 *     tags: ['things'],
 *     summary: 'One thing',
 *     description: 'What it does, for the reader of /docs.',
 *     scope: SCOPES.read,                          // omit only for a public route (`public: true`)
 *     request: { params: z.object({ id: thingId }) },   // body: jsonBody(schema, example)
 *     responses: { 200: jsonResponse(Thing, 'The thing.', example) },
 *   });
 *   export const thingRoutes = [getThing];        // listed in src/http/openapi.ts
 *
 *   export function registerThingRoutes(app: Router, services: Services): void {
 *     app.openapi(getThing, async (c) => c.json(await things.get(ctx(c), c.req.valid('param').id), 200));
 *   }
 *
 * defineRoute adds what every route shares, so no route repeats it: the scope check (before the
 * body is read, so a caller without the scope learns nothing but 403) and its `security`, the
 * strict reading of a JSON body (415, UTF-8, depth, NUL, `__proto__`) ahead of zod (a body of
 * another media type, such as NDJSON, is left to the handler), `X-Request-Id` on
 * every answer, and the problem+json answers the route can give (400/413/415 with a body, 400 with
 * a query, 404 with a path parameter, 401/403/429/503 with a scope). Validation failures become
 * the same problem+json 400 as everywhere (never zod's own answer); a malformed path id is a 404.
 */
import { OpenAPIHono, createRoute, type RouteConfig } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { config as configureZod, type z } from 'zod';
import type { Scope } from '../auth/principal.js';
import { DomainError, type FieldError } from '../shared/errors.js';
import type { AppEnv } from './env.js';
import { findUnsafeStrings, pointer, readStrictJson } from './input.js';
import { houseMessage } from './messages.js';
import { scope as requireScopeMiddleware } from './middleware.js';

// Every field message of a 400 in the service's voice; a schema's own message still wins.
configureZod({ customError: houseMessage });

export type Router = OpenAPIHono<AppEnv>;

/** The app, or a module's group of routes, with validation failures answered as problem+json. */
export function createRouter(): Router {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

const WHAT: Record<string, string> = { json: 'body', query: 'query', header: 'header', param: 'path parameter' };

/**
 * Runs after zod for every validated part. Strings of a query or header are checked for NUL and
 * lone surrogates here (a body was checked before zod parsed it); a failure lists each field.
 */
function validationHook(
  result: { target: string; success: boolean; data?: unknown; error?: { issues: ReadonlyArray<z.core.$ZodIssue> } },
  c: Context,
): undefined {
  const what = WHAT[result.target] ?? result.target;
  if (result.target === 'param' && !result.success) {
    // A malformed id cannot name anything the caller may see: 404, like any unknown id.
    throw new DomainError('not_found', `${c.req.path.includes('/jobs/') ? 'job' : 'resource'} not found`);
  }
  if (result.target !== 'json') {
    const unsafe = findUnsafeStrings(result.data).map((e) => ({ ...e, path: at(result.target, e.path) }));
    if (unsafe.length > 0) throw new DomainError('validation_failed', `the ${what} contains characters that cannot be stored`, { errors: unsafe });
  }
  if (result.success) return undefined;
  throw validationError(result.error?.issues ?? [], what, result.target);
}

/** A header's errors name it (`header:Idempotency-Key`); others are JSON pointers. */
function at(target: string, path: string): string {
  return target === 'header' ? `header:${path.replace(/^\//, '')}` : path;
}

/** The problem+json 400 of a failed zod parse: every field at its own path, the first in the detail. */
export function validationError(issues: ReadonlyArray<z.core.$ZodIssue>, what: string, target = 'json'): DomainError {
  // An unknown field is reported at its own path (/memories/0/colour), one entry per field.
  const errors: FieldError[] = issues
    .flatMap((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({ path: at(target, pointer([...issue.path, key])), message: 'unknown field' }))
        : [{ path: at(target, pointer(issue.path)), message: issue.message }],
    )
    .slice(0, 50);
  const first = errors[0];
  const where = first?.path ? `${first.path} ` : '';
  const message = target === 'header' ? `the ${first?.path.slice('header:'.length) ?? ''} header is not valid` : `the ${what} is not valid: ${where}${first?.message ?? ''}`.trim();
  return new DomainError('validation_failed', message, { errors });
}

/**
 * Reads the body strictly and hands Hono's validator the parsed value as the request's json().
 * Hono's own json() re-reads its cached text, and without one it rebuilds the body as a Response and
 * parses it again: a second parse and a Response on every request.
 */
export function strictJsonBody(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const value = await readStrictJson(c);
    const parsed = Promise.resolve(value);
    c.req.json = <T>() => parsed as Promise<T>;
    await next();
  };
}

type ResponseRef = { $ref: string };
type Responses = RouteConfig['responses'];

const ref = (name: string): ResponseRef => ({ $ref: `#/components/responses/${name}` });

/** The shared problem+json answers, registered as components by src/http/openapi.ts. */
export const ERRORS = {
  400: ref('BadRequest'),
  401: ref('Unauthorized'),
  403: ref('Forbidden'),
  404: ref('NotFound'),
  409: ref('Conflict'),
  413: ref('PayloadTooLarge'),
  415: ref('UnsupportedMediaType'),
  422: ref('PiiRejected'),
  429: ref('TooManyRequests'),
  503: ref('ServiceUnavailable'),
} as const;

export const X_REQUEST_ID = { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' } };

/** A JSON answer: its schema, what it means, and an example (every operation shows one). */
export function jsonResponse<S extends z.ZodType>(schema: S, description: string, example: z.input<S>) {
  return { description, headers: X_REQUEST_ID, content: { 'application/json': { schema, example } } };
}

/** A JSON request body, required, with an example that succeeds when sent as is. */
export function jsonBody<S extends z.ZodType>(schema: S, example: z.input<S>, description?: string) {
  return { required: true, ...(description ? { description } : {}), content: { 'application/json': { schema, example } } };
}

type Declared = Omit<RouteConfig, 'security' | 'middleware'> &
  // actAs: the route takes a `user_id` that `memories:act_as` lets a token name (said in its description).
  ({ scope: Scope; actAs?: boolean; public?: never } | { public: true; scope?: never; actAs?: never });

/** The description's first line, from the declared scope, so the page never states another. */
function withScopeLine(description: string | undefined, scope: Scope | undefined, actAs: boolean | undefined): string | undefined {
  if (!scope) return description;
  const line = `**Required scope:** \`${scope}\`${actAs ? ' (plus `memories:act_as` to name another `user_id`)' : ''}.`;
  return description ? `${line}\n\n${description}` : line;
}

/**
 * A route as createRoute() makes it, plus what every route shares (see the top of this file).
 * The result goes to `app.openapi(route, handler)` and into the generated document.
 */
export function defineRoute<const R extends Declared>(declared: R) {
  const { scope, actAs, public: _public, ...route } = declared;
  const errors: Record<string, ResponseRef> = {};
  const request: NonNullable<RouteConfig['request']> = route.request ?? {};
  if (request.query || request.body) Object.assign(errors, { 400: ERRORS[400] });
  if (request.params) Object.assign(errors, { 404: ERRORS[404] });
  if (request.body) Object.assign(errors, { 413: ERRORS[413], 415: ERRORS[415] });
  if (scope) Object.assign(errors, { 401: ERRORS[401], 403: ERRORS[403], 429: ERRORS[429], 503: ERRORS[503] });
  const middleware: MiddlewareHandler<AppEnv>[] = [];
  if (scope) middleware.push(requireScopeMiddleware(scope));
  // A JSON body is read strictly here; another media type (e.g. NDJSON) is the handler's to read.
  if (request.body && Object.keys(request.body.content).some((type) => /^application\/([\w.-]+\+)?json$/.test(type))) middleware.push(strictJsonBody());
  const extra = scope ? { 'x-required-scope': scope } : {};
  return createRoute({
    ...route,
    description: withScopeLine(route.description, scope, actAs),
    ...extra,
    // Scopes hang on the OAuth2 scheme, where tools read them; a bearer JWT carrying them works too.
    security: scope ? [{ oauth2: [scope] }, { bearerAuth: [] }] : [],
    middleware,
    responses: { ...errors, ...route.responses } as R['responses'] & Responses,
  } as Omit<R, 'scope' | 'actAs' | 'public'> & { middleware: MiddlewareHandler<AppEnv>[] });
}

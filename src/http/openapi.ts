import { stringify } from 'yaml';
import { z } from 'zod';
import { SCOPES } from '../auth/principal.js';
import { extractionRoutes } from '../extraction/routes.js';
import { memoryRoutes } from '../memories/routes.js';
import { dashboardRoutes } from '../queue/dashboard.js';
import { recallRoutes } from '../recall/routes.js';
import { settingsRoutes } from '../settings/routes.js';
import { operationsRoutes } from './routes.js';
import { portabilityRoutes } from '../portability/routes.js';
import { webhookRoutes } from '../webhooks/routes.js';
import { createRouter, X_REQUEST_ID } from './routing.js';

/**
 * The OpenAPI 3.1 document, generated from the routes' declarations (src/<module>/routes.ts).
 * /openapi.json serves it and `npm run openapi` writes it to openapi.yaml; a route that is served
 * must be listed here (test/integration/openapi.test.ts compares the two).
 */
export const ROUTES = [...extractionRoutes, ...memoryRoutes, ...portabilityRoutes, ...recallRoutes, ...settingsRoutes, ...webhookRoutes, ...operationsRoutes, ...dashboardRoutes];

const INFO_DESCRIPTION = `Engram keeps durable facts ("memories") about the users of AI agents, recalls the ones that
matter for a query, and forgets them provably.

## Conventions
- JSON bodies with snake_case fields. A request body must be \`application/json\` (or another
  \`application/*+json\` type) and valid UTF-8; anything else is a 415 or a 400.
- Times are ISO 8601 / RFC 3339 date-times with a zone (\`2026-01-31T12:00:00Z\`); the service
  always answers in UTC with milliseconds. Ids of memories, jobs and erasures are UUIDs;
  \`user_id\`, \`agent_id\` and \`run_id\` are caller-chosen strings (1–256 characters, surrounding
  whitespace trimmed).
- Request bodies and the query of \`GET /memories\` are strict: an unknown field is a 400 naming it.
- Strings containing NUL characters or lone surrogates are refused (400) wherever they appear,
  keys included; so are JSON nested more than 64 levels deep and keys named \`__proto__\`.
- Date-times before \`0001-01-01T00:00:00Z\` or after \`9999-12-31T23:59:59.999Z\` are refused (400).
- Every response carries \`X-Request-Id\`: the caller's own when it is sane
  (1–128 characters of \`A-Z a-z 0-9 . _ : @ / + = -\`), else a generated UUID.
- A known path asked with a method it does not have answers 405 with \`Allow\`; \`HEAD\` is
  answered wherever \`GET\` is.

## Authentication and tenancy
Every route except \`/healthz\`, \`/readyz\`, \`/metrics\`, \`/openapi.json\` and \`/docs\` needs
\`Authorization: Bearer <JWT>\`. The token's signature, \`exp\`, \`nbf\` (with a configurable leeway),
\`iss\` and \`aud\` are verified; \`none\` is never accepted. The tenant comes only from the verified
token's tenant claim (\`tenant_id\` by default); a token without it is a 401. So is a token whose
\`exp\` is not a finite number, whose lifetime exceeds \`AUTH_MAX_TOKEN_AGE_S\` (default 86400 s:
\`exp\` − \`iat\`, or \`exp\` − now without \`iat\`), or whose \`sub\` or tenant has leading or trailing
white space. A \`tenant_id\` in a body or query never selects a tenant (the strict bodies refuse
it as an unknown field).

With \`RATE_LIMIT_PER_MINUTE\` set, each tenant has one count over every authenticated route,
shared by all instances when \`REDIS_URL\` is set; over it, a 429 whose \`Retry-After\` is the
number of seconds (rounded up) until the tenant's one-minute window ends.

Scopes come from the token's space-separated \`scope\` (or \`scp\`) claim, or from the array claim
named by \`AUTH_SCOPES_CLAIM\` (e.g. Auth0's \`permissions\`, Entra ID's \`roles\`):

| scope | grants |
|---|---|
| \`memories:write\` | extract, add, update |
| \`memories:read\` | recall, list, get, history, jobs |
| \`memories:delete\` | delete and erasure |
| \`memories:act_as\` | naming any \`user_id\` of the tenant (agents' service tokens) |
| \`engram:admin\` | administering the token's own tenant (settings, webhooks) |
| \`engram:operator\` | the operators' pages under \`/admin/\`, which span tenants: for the people who run the service, never a tenant's token |

Each operation names its scope in \`security\` (on both schemes: the OAuth2 client-credentials
flow an identity provider issues tokens by, and the bearer token itself) and in
\`x-required-scope\`. Without \`memories:act_as\` the user is the token's \`sub\`: a body or query
\`user_id\` that differs is a 403, and a token without \`sub\` is a 403 too. With
\`memories:act_as\` and no \`user_id\`, the token's \`sub\` is used; with neither, the request is a 400.

Anything outside the caller's tenant answers 404, exactly as if it did not exist; so does
another user's memory or job when the token lacks \`memories:act_as\`.

## Errors
Errors are \`application/problem+json\` (RFC 9457) with \`type\`, \`title\`, \`status\`, \`detail\`, a
stable machine-readable \`code\`, the \`request_id\`, and for invalid input \`errors: [{path, message}]\`
with JSON-pointer paths (\`/memories/0/content\`). \`401\` carries \`WWW-Authenticate: Bearer\`; \`429\`
carries \`Retry-After\`. A request never causes a 500 and no body ever holds a stack trace; a 500
(\`code: internal\`) would mean a defect of the service, which is why no operation lists it.`;

const SCOPE_DESCRIPTIONS: Record<string, string> = {
  [SCOPES.read]: 'recall, list, get, history, jobs',
  [SCOPES.write]: 'extract, add, update',
  [SCOPES.delete]: 'delete and erasure',
  [SCOPES.actAs]: 'name any user_id of the tenant (service tokens)',
  [SCOPES.admin]: "administer the token's own tenant",
  [SCOPES.operator]: "the operators' pages under /admin/ (never a tenant's)",
};

const fieldError = z
  .strictObject({
    path: z.string().meta({
      description: 'Where: a JSON pointer into the body or query (`/memories/0/content`, empty for the whole document), or `header:<Name>` for a request header.',
    }),
    message: z.string(),
  })
  .meta({ id: 'FieldError' });

const ERROR_CODES = [
  'validation_failed',
  'malformed_json',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'idempotency_conflict',
  'pii_rejected',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'unavailable',
  'internal',
] as const;

export const problemSchema = z
  .strictObject({
    type: z.url().meta({ description: 'Identifies the kind of problem: `https://engram.dev/problems/<code with dashes>`.' }),
    title: z.string(),
    status: z.number().int().min(400).max(599),
    detail: z.string().meta({ description: 'What went wrong with this request; never a stack trace.' }),
    code: z.enum(ERROR_CODES).meta({ description: 'A stable, machine-readable code.' }),
    request_id: z.string().min(1).meta({ description: "The response's `X-Request-Id`." }),
    errors: z.array(fieldError).min(1).optional().meta({ description: 'For invalid input, each invalid field (at most 50).' }),
  })
  .meta({ id: 'Problem', description: 'An RFC 9457 problem details object.' });

interface ProblemResponse {
  status: number;
  code: (typeof ERROR_CODES)[number];
  title: string;
  detail: string;
  description: string;
  headers?: Record<string, { $ref: string }>;
}

/** The problem+json answers routes refer to (ERRORS in routing.ts), each with an example. */
const PROBLEMS: Record<string, ProblemResponse> = {
  BadRequest: {
    status: 400,
    code: 'validation_failed',
    title: 'Invalid request',
    detail: 'the body is not valid: /memories/0/content must not be empty',
    description: 'Malformed JSON, invalid UTF-8, or invalid fields (including NUL characters and lone surrogates); `errors` lists each invalid field. `code` is `validation_failed` or `malformed_json`. Also a text longer than the embedding model accepts, as its provider says (no `errors` then).',
  },
  Unauthorized: {
    status: 401,
    code: 'unauthorized',
    title: 'Unauthorized',
    detail: 'a bearer token is required',
    description: 'A missing, malformed, expired or otherwise invalid bearer token (including one without the tenant claim).',
    headers: { 'WWW-Authenticate': { $ref: '#/components/headers/WWWAuthenticate' } },
  },
  Forbidden: {
    status: 403,
    code: 'forbidden',
    title: 'Forbidden',
    detail: 'the token lacks the scope memories:write',
    description: 'The token lacks the required scope, or names a `user_id` other than its `sub` without `memories:act_as`.',
  },
  NotFound: {
    status: 404,
    code: 'not_found',
    title: 'Not found',
    detail: 'memory not found',
    description: "Not found — or another tenant's, or another user's without `memories:act_as`, which look exactly the same.",
  },
  Conflict: {
    status: 409,
    code: 'conflict',
    title: 'Conflict',
    detail: 'the user already holds this fact as another current memory',
    description: "The change conflicts with the user's current memories (e.g. the content is already another current memory of the user), or with a concurrent change (`conflict`); or the `Idempotency-Key` was already used with a different body (`idempotency_conflict`). Retrying may succeed after a concurrent change.",
  },
  PiiRejected: {
    status: 422,
    code: 'pii_rejected',
    title: 'Personal data refused',
    detail: "the memory holds an e-mail address, and this tenant's pii.mode is reject",
    description: "The tenant's `pii.mode` is `reject` and the memory holds personal data; `detail` and `errors` name the kind (e.g. an e-mail address) and where, never the value.",
  },
  PayloadTooLarge: {
    status: 413,
    code: 'payload_too_large',
    title: 'Payload too large',
    detail: 'the body exceeds 1048576 bytes',
    description: 'The body exceeds `MAX_BODY_BYTES` (default 1 MiB).',
  },
  UnsupportedMediaType: {
    status: 415,
    code: 'unsupported_media_type',
    title: 'Unsupported media type',
    detail: 'the body must be application/json (UTF-8)',
    description: 'The body is not `application/json` (or `application/*+json`), its media type has a parameter that is not `name=value`, or it names a charset other than UTF-8.',
  },
  TooManyRequests: {
    status: 429,
    code: 'rate_limited',
    title: 'Too many requests',
    detail: 'too many requests this minute for this tenant',
    description: 'The tenant exceeded `RATE_LIMIT_PER_MINUTE` requests in the current minute.',
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
  },
  ServiceUnavailable: {
    status: 503,
    code: 'unavailable',
    title: 'Service unavailable',
    detail: 'the database is unavailable; retry later',
    description: 'A dependency (the database, Redis or the model provider) is unreachable; retry later. Also when the model provider refuses the request (a rejected key, model or dimension: `detail` says so), which fails the same way until its configuration is fixed.',
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfterOptional' } },
  },
};

const integerHeader = (description: string, required: boolean) => ({ description, required, schema: { type: 'integer' as const, minimum: 0 } });

let cached: Record<string, unknown> | undefined;

/** The whole document as served at /openapi.json; generated once per process. */
export function openApiDocument(): Record<string, unknown> {
  cached ??= generate();
  return cached;
}

function generate(): Record<string, unknown> {
  const app = createRouter();
  const registry = app.openAPIRegistry;
  // What app.openapi() registers: the route without its middleware, which is no part of the document.
  for (const { middleware: _middleware, ...route } of ROUTES) registry.registerPath(route);
  registry.register('Problem', problemSchema);
  registry.registerComponent('securitySchemes', 'oauth2', {
    type: 'oauth2',
    description:
      "Tokens from your identity provider's OAuth2 client-credentials flow (Auth0, Keycloak, Microsoft Entra ID, …): a JWT the service verifies against `AUTH_JWKS_URL`. Configure the token URL of your provider in your client; the one below is a placeholder relative to this service, which issues no tokens itself.",
    flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: SCOPE_DESCRIPTIONS } },
  });
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A JWT (HS256 with the configured secret, or RS256 / ES256 / EdDSA from the configured JWKS) with `iss`, `aud`, `exp`, the tenant claim, usually `sub`, and its scopes. `npm run token -- --tenant T --user U [--scope "…"]` prints a development token.',
  });
  registry.registerComponent('headers', 'XRequestId', {
    description: "The caller's `X-Request-Id` when sane (1–128 of `A-Z a-z 0-9 . _ : @ / + = -`), else a generated UUID; problem bodies repeat it as `request_id`.",
    required: true,
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  });
  registry.registerComponent('headers', 'WWWAuthenticate', {
    description: 'The bearer challenge, e.g. `Bearer realm="engram", error="invalid_token"`.',
    required: true,
    schema: { type: 'string', pattern: '^Bearer' },
  });
  registry.registerComponent('headers', 'RetryAfter', integerHeader('Seconds to wait before retrying.', true));
  registry.registerComponent('headers', 'RetryAfterOptional', integerHeader('Seconds to wait before retrying, when the service can tell.', false));
  for (const [name, p] of Object.entries(PROBLEMS)) {
    registry.registerComponent('responses', name, {
      description: p.description,
      headers: { ...X_REQUEST_ID, ...p.headers },
      content: {
        'application/problem+json': {
          schema: { $ref: '#/components/schemas/Problem' },
          example: {
            type: `https://engram.dev/problems/${p.code.replaceAll('_', '-')}`,
            title: p.title,
            status: p.status,
            detail: p.detail,
            code: p.code,
            request_id: '5d0c7a1e-2b8f-4d3a-9e6f-1a2b3c4d5e6f',
            ...(p.status === 400 ? { errors: [{ path: '/memories/0/content', message: 'must not be empty' }] } : {}),
          },
        },
      },
    });
  }
  // OpenAPI 3.1's info.summary, which the generator's (3.0-shaped) types do not list.
  const info = {
    title: 'Engram',
    version: '1.0.0',
    summary: 'Long-term memory for AI agents — extraction, hybrid recall and provable erasure.',
    license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    description: INFO_DESCRIPTION,
  };
  const document = app.getOpenAPI31Document({
    openapi: '3.1.0',
    info,
    // Relative: the document is right wherever it is served, behind any proxy or on any port.
    servers: [{ url: '/', description: 'This service (`npm start` listens on http://127.0.0.1:8080 by default)' }],
    security: [{ oauth2: [] }, { bearerAuth: [] }],
    tags: [
      { name: 'memories', description: 'Storing, reading, editing and deleting memories.' },
      { name: 'recall', description: 'Ranked retrieval of the memories that matter for a query.' },
      { name: 'erasure', description: 'Forgetting memories and users, with receipts.' },
      { name: 'extraction', description: 'Asynchronous extraction of memories from conversations.' },
      { name: 'portability', description: "Exporting a user's memories as NDJSON and importing them elsewhere." },
      { name: 'webhooks', description: 'Signed notifications of changes, delivered at least once from an outbox.' },
      { name: 'settings', description: "A tenant's governance of what is remembered: extraction guidance, personal data, retention." },
      { name: 'operations', description: 'Health, readiness, metrics, documentation and admin pages.' },
    ],
  });
  // A plain JSON value: what the YAML file and /openapi.json hold, with no undefined left over.
  return JSON.parse(JSON.stringify(document)) as Record<string, unknown>;
}

/** openapi.yaml's text: what `npm run openapi` writes and the drift test compares. */
export function openApiYaml(): string {
  // YAML 1.1 quoting, so readers still on 1.1 (PyYAML) read date-like examples as strings, as JSON has them.
  return `# Generated from the routes' declarations by \`npm run openapi\`; do not edit by hand.\n${stringify(openApiDocument(), { lineWidth: 0, version: '1.1' })}`;
}

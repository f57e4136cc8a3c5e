/**
 * Every JSON answer a test receives through the harness is checked against the route's declared
 * response (the same zod schemas openapi.yaml is generated from): a status the route does not
 * declare, a body its schema refuses, a wrong media type or a missing X-Request-Id fails the test
 * that made the request. Hand-written DTOs therefore cannot drift from the published document.
 */
import type { z } from 'zod';
import { templatePattern } from '../../src/http/methods.js';
import { ROUTES, problemSchema } from '../../src/http/openapi.js';

type Route = (typeof ROUTES)[number];
type Declared = { $ref?: string; content?: Record<string, { schema?: unknown }> };

const compiled = ROUTES.map((route) => ({
  route,
  template: route.path,
  static: !route.path.includes('{'),
  pattern: templatePattern(route.path),
}));

/** The declared route a request reaches: a static path wins over a template it also fits. */
export function matchRoute(method: string, concretePath: string): { route: Route; template: string } | undefined {
  const path = new URL(concretePath, 'http://x').pathname;
  const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  const candidates = compiled.filter((c) => c.pattern.test(path));
  const staticPaths = new Set(candidates.filter((c) => c.static).map((c) => c.template));
  const chosen = candidates.filter((c) => c.route.method === verb && (staticPaths.size === 0 || staticPaths.has(c.template)));
  return chosen[0] ? { route: chosen[0].route, template: chosen[0].template } : undefined;
}

function problems(status: number, body: unknown, contentType: string): string[] {
  if (!contentType.startsWith('application/problem+json')) return [`an error answer must be application/problem+json, not ${contentType}`];
  const parsed = problemSchema.safeParse(body);
  if (!parsed.success) return parsed.error.issues.map((i) => `${i.path.join('/')}: ${i.message}`);
  return parsed.data.status === status ? [] : [`the body's status ${parsed.data.status} is not the answer's ${status}`];
}

/** What is wrong with an answer, against its route's declaration; empty when it is right. */
export function responseProblems(method: string, concretePath: string, status: number, body: unknown, headers: Headers): string[] {
  const contentType = (headers.get('content-type') ?? '').toLowerCase();
  if (!headers.get('x-request-id')) return ['X-Request-Id is missing'];
  if (method.toUpperCase() === 'HEAD') return body === '' || body === undefined ? [] : ['HEAD answered with a body'];
  const match = matchRoute(method, concretePath);
  // Unknown paths and known paths asked with another method: the app-wide 404 and 405.
  if (!match) return [404, 405].includes(status) ? problems(status, body, contentType) : [`${method} ${concretePath} is no declared route, yet answered ${status}`];
  if (status === 405) return problems(status, body, contentType);
  const declared = (match.route.responses as Record<string, Declared>)[String(status)];
  if (!declared) return [`status ${status} is not declared for ${method.toUpperCase()} ${match.template}`];
  if (declared.$ref) return problems(status, body, contentType);
  const mediaType = Object.keys(declared.content ?? {}).find((m) => contentType.startsWith(m));
  if (!mediaType) return [`content type ${contentType || '(none)'} is not declared (declared: ${Object.keys(declared.content ?? {}).join(', ') || 'no body'})`];
  const schema = declared.content![mediaType]!.schema as z.ZodType;
  if (!/json/.test(mediaType)) return [];
  const parsed = schema.safeParse(body);
  return parsed.success ? [] : parsed.error.issues.slice(0, 20).map((i) => `/${i.path.join('/')}: ${i.message}`);
}

/** Throws when an answer is not what its route declares, naming the route, the status and why. */
export function assertDocumentedResponse(method: string, concretePath: string, status: number, body: unknown, headers: Headers): void {
  const errors = responseProblems(method, concretePath, status, body, headers);
  if (errors.length === 0) return;
  const shown = JSON.stringify(body);
  throw new Error(
    [
      `OpenAPI drift: ${method.toUpperCase()} ${concretePath} answered ${status}, which its declaration does not allow:`,
      ...errors.map((e) => `  - ${e}`),
      `  body: ${shown && shown.length > 600 ? `${shown.slice(0, 600)}…` : shown}`,
      '  Fix the code or the route declaration; pass { skipOpenApiCheck: true } only for a deliberately malformed request.',
    ].join('\n'),
  );
}

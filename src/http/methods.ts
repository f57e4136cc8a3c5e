import type { MiddlewareHandler } from 'hono';
import { DomainError } from '../shared/errors.js';
import { ROUTES } from './openapi.js';

interface Resource {
  pattern: RegExp;
  static: boolean;
  methods: Set<string>;
}

let resources: Resource[] | undefined;

/** The paths an OpenAPI template (`/memories/{id}`) names: each `{param}` one path segment. */
export function templatePattern(template: string): RegExp {
  return new RegExp(`^${template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+')}$`);
}

/** Each declared path once, with the methods it has (HEAD wherever GET is). */
function declaredResources(): Resource[] {
  if (resources) return resources;
  const byPath = new Map<string, Resource>();
  for (const route of ROUTES) {
    const template = route.path;
    let resource = byPath.get(template);
    if (!resource) {
      resource = { pattern: templatePattern(template), static: !template.includes('{'), methods: new Set() };
      byPath.set(template, resource);
    }
    const method = route.method.toUpperCase();
    resource.methods.add(method);
    if (method === 'GET') resource.methods.add('HEAD');
  }
  resources = [...byPath.values()];
  return resources;
}

/**
 * 405 with `Allow` for a known path asked with a method it does not have. A static path wins
 * over a template it also fits, so `GET /memories/recall` is a 405 (the path has only POST), not
 * a memory id that does not exist. Paths nobody declared fall through to the 404.
 */
export function allowedMethods(): MiddlewareHandler {
  return async (c, next) => {
    const path = c.req.path;
    const matching = declaredResources().filter((r) => r.pattern.test(path));
    const exact = matching.filter((r) => r.static);
    const allowed = new Set((exact.length > 0 ? exact : matching).flatMap((r) => [...r.methods]));
    if (allowed.size === 0 || allowed.has(c.req.method)) return next();
    const allow = [...allowed].sort();
    throw new DomainError('method_not_allowed', `${c.req.method} is not allowed on ${path}; it allows ${allow.join(', ')}`, { allow });
  };
}

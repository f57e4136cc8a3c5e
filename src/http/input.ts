import type { Context } from 'hono';
import type { z } from 'zod';
import { DomainError, type FieldError } from '../shared/errors.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON pointer of a zod issue path, e.g. /memories/0/content. */
export function pointer(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? '' : `/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

/**
 * NUL bytes and lone surrogates pass JSON.parse but break PostgreSQL text and every consumer
 * downstream, so they are refused up front with the path where they were found.
 */
export function findUnsafeStrings(value: unknown, path: PropertyKey[] = [], found: FieldError[] = []): FieldError[] {
  if (found.length >= 20) return found;
  if (typeof value === 'string') {
    if (value.includes('\u0000')) found.push({ path: pointer(path), message: 'must not contain NUL characters' });
    else if (!value.isWellFormed()) found.push({ path: pointer(path), message: 'must not contain lone surrogates' });
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => findUnsafeStrings(item, [...path, index], found));
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      findUnsafeStrings(key, [...path, key], found);
      findUnsafeStrings(item, [...path, key], found);
    }
  }
  return found;
}

/** Deeper than any real request; every walker below (ours, zod's, JSON.stringify) recurses. */
export const MAX_JSON_DEPTH = 64;

/**
 * The path of the first place nested deeper than `max` levels, or undefined. Iterative, because
 * JSON.parse accepts nesting far deeper than the call stack of the recursive walkers that follow.
 */
export function findTooDeep(value: unknown, max = MAX_JSON_DEPTH): PropertyKey[] | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (!current || typeof current !== 'object') continue;
    if (path.length >= max) return path;
    const entries = Array.isArray(current) ? current.map((item, index) => [index, item] as const) : Object.entries(current);
    for (const [key, item] of entries) stack.push({ value: item, path: [...path, key] });
  }
  return undefined;
}

/** Keys that would reach an object's prototype when a parser copies them: refused, never silently dropped. */
const FORBIDDEN_KEYS = new Set(['__proto__']);

function findForbiddenKeys(value: unknown, path: PropertyKey[] = [], found: FieldError[] = []): FieldError[] {
  if (found.length >= 20 || !value || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    value.forEach((item, index) => findForbiddenKeys(item, [...path, index], found));
    return found;
  }
  for (const [key, item] of Object.entries(value)) {
    if (FORBIDDEN_KEYS.has(key)) found.push({ path: pointer([...path, key]), message: `a field named ${key} is not accepted` });
    else findForbiddenKeys(item, [...path, key], found);
  }
  return found;
}

function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const tooDeep = findTooDeep(value);
  if (tooDeep) {
    throw new DomainError('validation_failed', `the ${what} is nested more than ${MAX_JSON_DEPTH} levels deep`, {
      errors: [{ path: pointer(tooDeep), message: `nested more than ${MAX_JSON_DEPTH} levels deep` }],
    });
  }
  const unsafe = findUnsafeStrings(value);
  if (unsafe.length > 0) throw new DomainError('validation_failed', `the ${what} contains characters that cannot be stored`, { errors: unsafe });
  const forbidden = findForbiddenKeys(value);
  if (forbidden.length > 0) throw new DomainError('validation_failed', `the ${what} contains a field name that is not accepted`, { errors: forbidden });
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    // An unknown field is reported at its own path (/memories/0/colour), one entry per field.
    const errors = parsed.error.issues
      .flatMap((issue) =>
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((key) => ({ path: pointer([...issue.path, key]), message: 'unknown field' }))
          : [{ path: pointer(issue.path), message: issue.message }],
      )
      .slice(0, 50);
    // The first error in the detail, at its path; the body itself (path "") is not named twice.
    const first = errors[0];
    const where = first?.path ? `${first.path} ` : '';
    throw new DomainError('validation_failed', `the ${what} is not valid: ${where}${first?.message ?? ''}`.trim(), { errors });
  }
  return parsed.data;
}

/** Reads, decodes and validates a JSON body: 415, 400 malformed or invalid, never a 500. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const contentType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json' && !/^application\/[a-z0-9.+-]*\+json$/.test(contentType)) {
    throw new DomainError('unsupported_media_type', 'the body must be application/json');
  }
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new DomainError('malformed_json', 'the body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8's message quotes the body; only the position is repeated back.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new DomainError('malformed_json', `the body is not valid JSON${position ? ` (at position ${position})` : ''}`);
  }
  return validate(schema, value, 'body');
}

export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  return validate(schema, c.req.query(), 'query');
}

export function readParam<S extends z.ZodType>(c: Context, name: string, schema: S): z.output<S> {
  return validate(schema, c.req.param(name), `path parameter ${name}`);
}
